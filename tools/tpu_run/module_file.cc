#include "tools/tpu_run/module_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "hlo/text/hlo_parser.h"

namespace tpu {
namespace {

// A decoded module worth running: it has an entry computation.
bool Plausible(const xla::HloModuleProto& module) {
  return module.computations_size() > 0;
}

absl::StatusOr<xla::HloModuleProto> ParseText(absl::string_view text) {
  absl::StatusOr<xla::HloModuleProto> module = hlo::ParseHloModule(text);
  if (!module.ok()) {
    return absl::Status(module.status().code(),
                        absl::StrCat("HLO text: ", module.status().message()));
  }
  return module;
}

}  // namespace

bool LooksLikeHloText(absl::string_view contents) {
  // Binary protos start with a field tag (a control or high byte); HLO text
  // is printable and names its module first, possibly after comments.
  absl::string_view head = contents.substr(0, 4096);
  for (char c : head) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
  }
  return absl::StrContains(head, "HloModule");
}

absl::StatusOr<xla::HloModuleProto> ParseModule(absl::string_view contents) {
  if (LooksLikeHloText(contents)) return ParseText(contents);

  // HloProto first: its field 1 is the module itself. An HloModuleProto's
  // field 1 is its name, which rarely parses as a module with computations.
  xla::HloProto hlo;
  if (hlo.ParseFromArray(contents.data(), static_cast<int>(contents.size())) &&
      hlo.has_hlo_module() && Plausible(hlo.hlo_module())) {
    return std::move(*hlo.mutable_hlo_module());
  }
  xla::HloModuleProto module;
  if (module.ParseFromArray(contents.data(),
                            static_cast<int>(contents.size())) &&
      Plausible(module)) {
    return module;
  }
  return absl::InvalidArgumentError(
      "not an HLO module: it is neither a binary xla.HloProto with "
      "hlo_module set, nor a binary xla.HloModuleProto with computations, nor "
      "HLO text starting with 'HloModule'");
}

absl::StatusOr<xla::HloModuleProto> ReadModuleFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot open: ", std::strerror(err)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  absl::StatusOr<xla::HloModuleProto> module = ParseModule(buffer.str());
  if (!module.ok()) {
    return absl::Status(module.status().code(),
                        absl::StrCat(path, ": ", module.status().message()));
  }
  return module;
}

}  // namespace tpu
