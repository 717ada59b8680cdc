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

// True for the opcodes whose result shape XLA's parser infers when the text
// leaves it out (its CanInferShape).
bool CanInferShape(absl::string_view opcode);

// For the async shorthand "<op>-start", "<op>-update", "<op>-done" where
// <op> is an opcode that has no such form of its own: sets `wrapped` to
// <op> and returns true. ("all-reduce-start" is an opcode, not shorthand.)
bool AsyncShorthandWrappedOpcode(absl::string_view word,
                                 absl::string_view* wrapped);

// "async-start", "async-update" or "async-done" for a shorthand word.
absl::string_view AsyncOpcodeOfShorthand(absl::string_view word);

}  // namespace tpu::hlo::text_internal

#endif  // HLO_TEXT_OPCODES_H_
