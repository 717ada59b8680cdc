#ifndef SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_PLAN_FILE_H_
#define SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_PLAN_FILE_H_

// Fault rules from a file (tpu_emulator --fault_plan=FILE): one rule per
// line; blank lines and lines whose first non-blank character is '#' are
// skipped.
//
// Thread safety: reentrant.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "emulator/faults/fault_plan.h"

namespace tpu::emulator::faults {

// Adds every rule of `text` to `plan`, or none: INVALID_ARGUMENT
// "NAME:LINE:COLUMN: expected ..." for the first rule that does not parse.
absl::Status AddRulesFromText(absl::string_view name, absl::string_view text,
                              FaultPlan* plan);

// Reads `path` and adds its rules; NOT_FOUND if it cannot be read.
absl::Status AddRulesFromFile(const std::string& path, FaultPlan* plan);

// Rewrites ParseRule's "column C: ..." as "PREFIX:C: ...".
absl::Status LocateRuleError(const absl::Status& error,
                             absl::string_view prefix);

}  // namespace tpu::emulator::faults

#endif  // SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_PLAN_FILE_H_
