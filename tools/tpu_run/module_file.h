#ifndef SOFTWARE_TPU_TOOLS_TPU_RUN_MODULE_FILE_H_
#define SOFTWARE_TPU_TOOLS_TPU_RUN_MODULE_FILE_H_

// Reads an HLO module from a file in any of the forms tpu_run accepts:
//   - a binary xla.HloProto with hlo_module set (what XLA dumps as .pb),
//   - a binary xla.HloModuleProto,
//   - HLO text ("HloModule name ..."), told apart by its content.
//
// Thread safety: plain functions.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/hlo.pb.h"

namespace tpu {

// Decodes `contents`. INVALID_ARGUMENT if it is none of the forms above (or
// HLO text that does not parse); the message says which forms were tried.
absl::StatusOr<xla::HloModuleProto> ParseModule(absl::string_view contents);

// Reads and decodes `path`; errors name the path. NOT_FOUND if missing.
absl::StatusOr<xla::HloModuleProto> ReadModuleFile(const std::string& path);

// True if `contents` looks like HLO text rather than a binary proto.
bool LooksLikeHloText(absl::string_view contents);

}  // namespace tpu

#endif  // SOFTWARE_TPU_TOOLS_TPU_RUN_MODULE_FILE_H_
