// The encodings of the narrow element types (narrow_codec.h).

#include "emulator/interpreter/narrow_codec.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tpu::emulator::interpreter {
namespace {

// How an 8-bit float spends its bits, and which special values it has.
struct F8Format {
  xla::PrimitiveType type;
  int exponent_bits, mantissa_bits, bias;
  enum class Nan {
    kIeee,     // exponent all ones: infinities and NaNs, as IEEE 754
    kAllOnes,  // "fn": only S.1111.111 is NaN, no infinity
    kNegZero,  // "fnuz": 0x80 is the only NaN, no -0, no infinity
    kE8M0,     // f8e8m0fnu: no sign, no zero, 0xFF is NaN
  } nan;
};

constexpr F8Format kF8Formats[] = {
    {xla::F8E5M2, 5, 2, 15, F8Format::Nan::kIeee},
    {xla::F8E4M3, 4, 3, 7, F8Format::Nan::kIeee},
    {xla::F8E3M4, 3, 4, 3, F8Format::Nan::kIeee},
    {xla::F8E4M3FN, 4, 3, 7, F8Format::Nan::kAllOnes},
    {xla::F8E4M3FNUZ, 4, 3, 8, F8Format::Nan::kNegZero},
    {xla::F8E5M2FNUZ, 5, 2, 16, F8Format::Nan::kNegZero},
    {xla::F8E4M3B11FNUZ, 4, 3, 11, F8Format::Nan::kNegZero},
    {xla::F8E8M0FNU, 8, 0, 127, F8Format::Nan::kE8M0},
};

const F8Format* FindF8(xla::PrimitiveType type) {
  for (const F8Format& f : kF8Formats) {
    if (f.type == type) return &f;
  }
  return nullptr;
}

uint8_t NanBits(const F8Format& f) {
  switch (f.nan) {
    case F8Format::Nan::kIeee:
      return static_cast<uint8_t>(
          (((1 << f.exponent_bits) - 1) << f.mantissa_bits) |
          (1 << (f.mantissa_bits - 1)));
    case F8Format::Nan::kAllOnes:
      return 0x7F;
    case F8Format::Nan::kNegZero:
      return 0x80;
    default:
      return 0xFF;
  }
}

// The largest finite encoding (without sign).
uint8_t MaxFiniteBits(const F8Format& f) {
  const int all_exponent = (1 << f.exponent_bits) - 1;
  const int all_mantissa = (1 << f.mantissa_bits) - 1;
  switch (f.nan) {
    case F8Format::Nan::kIeee:
      return static_cast<uint8_t>(((all_exponent - 1) << f.mantissa_bits) |
                                  all_mantissa);
    case F8Format::Nan::kAllOnes:
      return static_cast<uint8_t>((all_exponent << f.mantissa_bits) |
                                  (all_mantissa - 1));
    case F8Format::Nan::kNegZero:
      return 0x7F;
    default:
      return 0xFE;
  }
}

double DecodeFormat(const F8Format& f, uint8_t bits) {
  const bool has_sign = f.nan != F8Format::Nan::kE8M0;
  const bool negative = has_sign && (bits & 0x80) != 0;
  const uint8_t magnitude = has_sign ? bits & 0x7F : bits;
  const int exponent = magnitude >> f.mantissa_bits;
  const int mantissa = magnitude & ((1 << f.mantissa_bits) - 1);
  const int all_exponent = (1 << f.exponent_bits) - 1;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (f.nan) {
    case F8Format::Nan::kIeee:
      if (exponent == all_exponent) {
        if (mantissa != 0) return nan;
        return negative ? -HUGE_VAL : HUGE_VAL;
      }
      break;
    case F8Format::Nan::kAllOnes:
      if (magnitude == 0x7F) return nan;
      break;
    case F8Format::Nan::kNegZero:
      if (bits == 0x80) return nan;
      break;
    case F8Format::Nan::kE8M0:
      if (bits == 0xFF) return nan;
      return std::ldexp(1.0, exponent - f.bias);
  }
  const double value = exponent == 0
                           ? std::ldexp(mantissa, 1 - f.bias - f.mantissa_bits)
                           : std::ldexp(mantissa + (1 << f.mantissa_bits),
                                        exponent - f.bias - f.mantissa_bits);
  return negative ? -value : value;
}

uint8_t EncodeFormat(const F8Format& f, double value) {
  const bool has_sign = f.nan != F8Format::Nan::kE8M0;
  if (std::isnan(value)) return NanBits(f);
  const bool negative = std::signbit(value);
  if (!has_sign && negative && value != 0) return NanBits(f);
  const uint8_t sign = negative ? 0x80 : 0;
  const double a = std::fabs(value);
  const bool has_inf = f.nan == F8Format::Nan::kIeee;
  const uint8_t overflow =
      has_inf ? static_cast<uint8_t>(
                    sign | (((1 << f.exponent_bits) - 1) << f.mantissa_bits))
              : NanBits(f);
  if (std::isinf(a)) return overflow;
  if (!has_sign) {  // e8m0: powers of two only; 0 rounds up to 2^-127
    if (a < std::ldexp(1.0, -f.bias)) return 0;
    int e;
    const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    int exponent = e - 1;
    if (std::nearbyint(m * 2) == 2) ++exponent;  // mantissa rounds up
    const int field = exponent + f.bias;
    return field > MaxFiniteBits(f) ? NanBits(f) : static_cast<uint8_t>(field);
  }
  if (a == 0) return f.nan == F8Format::Nan::kNegZero ? 0 : sign;
  int e;
  std::frexp(a, &e);
  const int min_exponent = 1 - f.bias;  // of the smallest normal
  int exponent = std::max(e - 1, min_exponent);
  // q counts units of the last place at `exponent`; round to nearest even.
  double q = std::nearbyint(std::ldexp(a, f.mantissa_bits - exponent));
  uint32_t bits;
  if (e - 1 < min_exponent) {
    bits = static_cast<uint32_t>(q);  // subnormal (or the smallest normal)
  } else {
    if (q >= std::ldexp(1.0, f.mantissa_bits + 1)) {
      ++exponent;
      q /= 2;
    }
    bits = (static_cast<uint32_t>(exponent + f.bias) << f.mantissa_bits) |
           (static_cast<uint32_t>(q) - (1u << f.mantissa_bits));
  }
  if (bits > MaxFiniteBits(f)) return overflow;
  // A negative value rounding to zero is +0 in types without -0 (0x80 is
  // their NaN).
  if (bits == 0 && f.nan == F8Format::Nan::kNegZero) return 0;
  return static_cast<uint8_t>(sign | bits);
}

}  // namespace

bool IsNarrowFloat(xla::PrimitiveType type) { return FindF8(type) != nullptr; }

bool IsNarrowInt(xla::PrimitiveType type) {
  return type == xla::S4 || type == xla::U4;
}

bool IsNarrowType(xla::PrimitiveType type) {
  return IsNarrowFloat(type) || IsNarrowInt(type);
}

double DecodeF8(xla::PrimitiveType type, uint8_t bits) {
  return DecodeFormat(*FindF8(type), bits);
}

uint8_t EncodeF8(xla::PrimitiveType type, double value) {
  return EncodeFormat(*FindF8(type), value);
}

int64_t DecodeInt4(xla::PrimitiveType type, uint8_t bits) {
  const int64_t low = bits & 0xF;
  return type == xla::S4 && low >= 8 ? low - 16 : low;
}

}  // namespace tpu::emulator::interpreter
