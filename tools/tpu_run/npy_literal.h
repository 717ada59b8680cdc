#ifndef SOFTWARE_TPU_TOOLS_TPU_RUN_NPY_LITERAL_H_
#define SOFTWARE_TPU_TOOLS_TPU_RUN_NPY_LITERAL_H_

// Conversions between .npy arrays and Literals of XLA element types:
//   pred <-> bool, s8..s64 <-> int8..int64, u8..u64 <-> uint8..uint64,
//   f16 <-> float16, f32 <-> float32, f64 <-> float64, c64 <-> complex64,
//   c128 <-> complex128,
//   bf16 <- float32 (rounded to nearest even) and bf16 -> float32 (exact).
//
// Thread safety: plain functions.

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "hlo/shape.h"
#include "proto/xla_data.pb.h"
#include "tools/tpu_run/npy.h"

namespace tpu {

// The .npy dtype that carries `type` (float32 for bf16). INVALID_ARGUMENT
// for types with no .npy form (tuples, tokens, s4, f8 ...).
absl::StatusOr<NpyDtype> NpyDtypeFor(xla::PrimitiveType type);

// A literal of `expected` (an array shape) from `array`. INVALID_ARGUMENT
// naming both sides when the dtype or the shape differs.
absl::StatusOr<Literal> LiteralFromNpy(const NpyArray& array,
                                       const Shape& expected);

// The .npy form of an array literal.
absl::StatusOr<NpyArray> NpyFromLiteral(const Literal& literal);

// float32 -> bfloat16 bits, rounding to nearest even; NaN stays NaN.
uint16_t FloatToBfloat16Bits(float value);
float Bfloat16BitsToFloat(uint16_t bits);

}  // namespace tpu

#endif  // SOFTWARE_TPU_TOOLS_TPU_RUN_NPY_LITERAL_H_
