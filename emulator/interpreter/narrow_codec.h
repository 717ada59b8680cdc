#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_NARROW_CODEC_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_NARROW_CODEC_H_

// The encodings of the narrow element types: s4 and u4 (one element per
// byte, in its low four bits) and the 8-bit floats f8e5m2, f8e4m3, f8e3m4
// (IEEE-like: infinities and NaNs), f8e4m3fn (no infinity, S.1111.111 is
// NaN), f8e4m3fnuz, f8e5m2fnuz, f8e4m3b11fnuz (no infinity, no -0, 0x80 is
// NaN) and f8e8m0fnu (powers of two: no sign, no zero, 0xFF is NaN).
// A library of its own so that tools (tpu_run's random inputs) share it.
//
// Thread safety: plain functions.

#include <cstdint>

#include "proto/xla_data.pb.h"

namespace tpu::emulator::interpreter {

bool IsNarrowType(xla::PrimitiveType type);
bool IsNarrowFloat(xla::PrimitiveType type);  // the f8 family
bool IsNarrowInt(xla::PrimitiveType type);    // s4, u4

// f8 encodings to and from double. Decoding is exact. Encoding rounds to
// nearest even, overflows to infinity where the type has one and to NaN
// where it has not, maps -0 to +0 in types without negative zero, and gives
// NaN for values a type cannot hold the sign of (f8e8m0fnu, which also has
// no zero: 0 becomes its smallest value 2^-127).
// REQUIRES: IsNarrowFloat(type).
double DecodeF8(xla::PrimitiveType type, uint8_t bits);
uint8_t EncodeF8(xla::PrimitiveType type, double value);

// A 4-bit element as an integer: its low four bits, sign-extended for s4.
int64_t DecodeInt4(xla::PrimitiveType type, uint8_t bits);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_NARROW_CODEC_H_
