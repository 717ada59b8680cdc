#include "tests/e2e/programs.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "hlo/text/hlo_parser.h"

namespace tpu::e2e {

xla::HloModuleProto ParseProgram(absl::string_view text) {
  absl::StatusOr<xla::HloModuleProto> module = hlo::ParseHloModule(text);
  if (!module.ok()) {
    std::fprintf(stderr, "test program does not parse: %s\n",
                 std::string(module.status().message()).c_str());
    std::abort();
  }
  return *std::move(module);
}

}  // namespace tpu::e2e
