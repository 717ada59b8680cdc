#ifndef SOFTWARE_TPU_TOOLS_TPU_RUN_RANDOM_LITERAL_H_
#define SOFTWARE_TPU_TOOLS_TPU_RUN_RANDOM_LITERAL_H_

// Deterministic pseudo-random literals for tpu_run --random_inputs.
// The same (shape, seed) always gives the same bytes, on every machine:
// floating point and complex parts are multiples of 1/8 in [-1, 1] (exact in
// every float type), signed integers are in [-8, 8], unsigned in [0, 8],
// preds 0 or 1; s4 in [-8, 7], u4 in [0, 8]; f8 types take the floats'
// values except f8e8m0fnu (no sign, no zero): 1, 1/2, 1/4 or 1/8. Tuples
// hold such values (each leaf with a seed drawn from `seed`), tokens are
// tokens.
//
// Thread safety: a plain function.

#include <cstdint>

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "hlo/shape.h"

namespace tpu {

// INVALID_ARGUMENT for element types it has no values for.
absl::StatusOr<Literal> RandomLiteral(const Shape& shape, uint64_t seed);

}  // namespace tpu

#endif  // SOFTWARE_TPU_TOOLS_TPU_RUN_RANDOM_LITERAL_H_
