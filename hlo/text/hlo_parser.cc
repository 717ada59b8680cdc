#include "hlo/text/hlo_parser.h"

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo {

absl::StatusOr<xla::HloModuleProto> ParseHloModule(absl::string_view text) {
  text_internal::Parser parser(text);
  xla::HloModuleProto module;
  HLO_RETURN_IF_ERROR(parser.ParseModule(&module));
  return module;
}

absl::StatusOr<xla::ShapeProto> ParseShape(absl::string_view text) {
  text_internal::Parser parser(text);
  xla::ShapeProto shape;
  HLO_RETURN_IF_ERROR(parser.ParseSingleShape(&shape));
  return shape;
}

}  // namespace tpu::hlo
