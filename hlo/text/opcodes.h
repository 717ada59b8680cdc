// The opcode names of HLO text.
//
// Thread-safe: pure functions over constant tables.

#ifndef HLO_TEXT_OPCODES_H_
#define HLO_TEXT_OPCODES_H_

#include "absl/strings/string_view.h"

namespace tpu::hlo::text_internal {

// True for every opcode XLA has printed (current and historical names, e.g.
// "cross-replica-sum" and "tuple-select").
bool IsKnownOpcode(absl::string_view opcode);

}  // namespace tpu::hlo::text_internal

#endif  // HLO_TEXT_OPCODES_H_
