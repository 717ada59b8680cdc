#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_NARROW_TYPES_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_NARROW_TYPES_H_

// Element types the kernels do not compute in: s4, u4 and the 8-bit floats
// (f8e5m2, f8e4m3, f8e4m3fn, f8e4m3fnuz, f8e5m2fnuz, f8e4m3b11fnuz, f8e3m4,
// f8e8m0fnu). Arrays of them hold one element per byte: s4/u4 in the low
// four bits (read sign- or zero-extended from those bits whatever the high
// ones hold, written with the high bits clear), f8 as its encoding.
//
// convert and bitcast-convert handle them directly (kernels_convert.cc).
// Every other instruction that touches them runs as XLA's normalization
// passes run it: on the wide type (s4 -> s8, u4 -> u8, f8 -> f32), its
// called computations widened too, the result narrowed back (s4/u4 wrap,
// f8 rounds to nearest even once). Integer arithmetic modulo 2^8 agrees with
// arithmetic modulo 2^4 after wrapping, so only the bit operations that see
// the high bits need care: shift-right-logical, popcnt and
// count-leading-zeros read s4 zero-extended, shift-right-arithmetic reads u4
// sign-extended, and count-leading-zeros subtracts the 4 extra bits.
//
// Thread safety: plain functions.

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "emulator/interpreter/kernel.h"
#include "emulator/interpreter/narrow_codec.h"
#include "hlo/literal.h"
#include "hlo/shape.h"

namespace tpu::emulator::interpreter {

// True if `shape` (or any tuple element) has a narrow element type.
bool HasNarrowType(const Shape& shape);

// `shape` with every narrow element type replaced by its wide type: f8 by
// f32, s4 by `s4_as` and u4 by `u4_as` (s8 or u8 each).
Shape WidenShape(const Shape& shape, xla::PrimitiveType s4_as,
                 xla::PrimitiveType u4_as);
// A narrow array (or tuple) as `wide_shape`, one of its WidenShape()s: s8
// reads a 4-bit value sign-extended, u8 zero-extended.
Literal WidenTo(const Literal& narrow, const Shape& wide_shape);
// WidenTo the default wide types (s4 -> s8, u4 -> u8).
Literal Widen(const Literal& narrow);
// A wide array (or tuple) back to `narrow_shape`: 4-bit integers keep the
// low four bits, f8 rounds to nearest even (EncodeF8).
Literal Narrow(const Literal& wide, const Shape& narrow_shape);

// Whether `instruction` runs through CompileWidened: it touches a narrow
// type and is not one that moves narrow values as they are.
bool NeedsWidening(const HloInstruction& instruction);

// The instruction on wide types (see the file comment); errors as a
// KernelFactory's.
absl::StatusOr<std::unique_ptr<Kernel>> CompileWidened(
    const HloInstruction& instruction, KernelCompiler& compiler);

// convert where the operand or result type is narrow: values travel through
// double (floats) or int64 (integers), float to integer saturating (NaN to
// 0), integer to 4-bit integer wrapping. Complex operands are rejected.
absl::StatusOr<std::unique_ptr<Kernel>> CompileNarrowConvert(
    const HloInstruction& instruction);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_NARROW_TYPES_H_
