#include "hlo/text/hlo_text_util.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace tpu::hlo::text_internal {
namespace {

struct TypeName {
  absl::string_view name;
  xla::PrimitiveType type;
};

constexpr TypeName kTypeNames[] = {
    {"pred", xla::PRED},
    {"s1", xla::S1},
    {"s2", xla::S2},
    {"s4", xla::S4},
    {"s8", xla::S8},
    {"s16", xla::S16},
    {"s32", xla::S32},
    {"s64", xla::S64},
    {"u1", xla::U1},
    {"u2", xla::U2},
    {"u4", xla::U4},
    {"u8", xla::U8},
    {"u16", xla::U16},
    {"u32", xla::U32},
    {"u64", xla::U64},
    {"f16", xla::F16},
    {"f32", xla::F32},
    {"bf16", xla::BF16},
    {"f64", xla::F64},
    {"f8e5m2", xla::F8E5M2},
    {"f8e4m3", xla::F8E4M3},
    {"f8e4m3fn", xla::F8E4M3FN},
    {"f8e4m3b11fnuz", xla::F8E4M3B11FNUZ},
    {"f8e3m4", xla::F8E3M4},
    {"f8e5m2fnuz", xla::F8E5M2FNUZ},
    {"f8e4m3fnuz", xla::F8E4M3FNUZ},
    {"f4e2m1fn", xla::F4E2M1FN},
    {"f8e8m0fnu", xla::F8E8M0FNU},
    {"c64", xla::C64},
    {"c128", xla::C128},
    {"token", xla::TOKEN},
    {"opaque", xla::OPAQUE_TYPE},
    {"buffer", xla::BUFFER},
};

// Bit-level description of a small float format.
struct MiniFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_sign;
  bool has_inf;  // IEEE style: all-ones exponent, zero mantissa.
  // NaN encodings: IEEE (all-ones exponent, mantissa != 0), FN (all bits of
  // exponent and mantissa set), FNUZ (sign bit alone), none.
  enum Nan { kIeee, kFn, kFnuz, kNone, kAllOnes } nan;
};

MiniFormat FormatOf(xla::PrimitiveType type) {
  switch (type) {
    case xla::F8E5M2:
      return {5, 2, 15, true, true, MiniFormat::kIeee};
    case xla::F8E4M3:
      return {4, 3, 7, true, true, MiniFormat::kIeee};
    case xla::F8E4M3FN:
      return {4, 3, 7, true, false, MiniFormat::kFn};
    case xla::F8E4M3B11FNUZ:
      return {4, 3, 11, true, false, MiniFormat::kFnuz};
    case xla::F8E3M4:
      return {3, 4, 3, true, true, MiniFormat::kIeee};
    case xla::F8E5M2FNUZ:
      return {5, 2, 16, true, false, MiniFormat::kFnuz};
    case xla::F8E4M3FNUZ:
      return {4, 3, 8, true, false, MiniFormat::kFnuz};
    case xla::F4E2M1FN:
      return {2, 1, 1, true, false, MiniFormat::kNone};
    case xla::F8E8M0FNU:
      return {8, 0, 127, false, false, MiniFormat::kAllOnes};
    default:
      return {0, 0, 0, false, false, MiniFormat::kNone};
  }
}

int TotalBits(const MiniFormat& f) {
  return f.exponent_bits + f.mantissa_bits + (f.has_sign ? 1 : 0);
}

double DecodeWith(const MiniFormat& f, uint32_t bits) {
  const uint32_t mantissa_mask = (1u << f.mantissa_bits) - 1;
  const uint32_t exponent_mask = (1u << f.exponent_bits) - 1;
  const int total = TotalBits(f);
  const bool negative = f.has_sign && ((bits >> (total - 1)) & 1);
  const uint32_t exponent = (bits >> f.mantissa_bits) & exponent_mask;
  const uint32_t mantissa = bits & mantissa_mask;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (f.nan) {
    case MiniFormat::kIeee:
      if (exponent == exponent_mask) {
        if (mantissa == 0) {
          return negative ? -HUGE_VAL : HUGE_VAL;
        }
        return negative ? -nan : nan;
      }
      break;
    case MiniFormat::kFn:
      if (exponent == exponent_mask && mantissa == mantissa_mask) {
        return negative ? -nan : nan;
      }
      break;
    case MiniFormat::kFnuz:
      if (bits == (1u << (total - 1))) return nan;
      break;
    case MiniFormat::kAllOnes:
      if (bits == (1u << total) - 1) return nan;
      break;
    case MiniFormat::kNone:
      break;
  }
  double magnitude;
  if (f.mantissa_bits == 0) {
    magnitude = std::ldexp(1.0, static_cast<int>(exponent) - f.bias);
  } else if (exponent == 0) {
    magnitude =
        std::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.mantissa_bits);
  } else {
    magnitude =
        std::ldexp(static_cast<double>(mantissa + (1u << f.mantissa_bits)),
                   static_cast<int>(exponent) - f.bias - f.mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

uint32_t NanCode(const MiniFormat& f) {
  const int total = TotalBits(f);
  switch (f.nan) {
    case MiniFormat::kIeee:
      return (((1u << f.exponent_bits) - 1) << f.mantissa_bits) |
             (1u << (f.mantissa_bits - 1));
    case MiniFormat::kFn:
      return (1u << (total - 1)) - 1;
    case MiniFormat::kFnuz:
      return 1u << (total - 1);
    case MiniFormat::kAllOnes:
      return (1u << total) - 1;
    case MiniFormat::kNone:
      return 0;
  }
  return 0;
}

std::string FormatNanPayload(bool negative, uint64_t payload,
                             uint64_t default_payload) {
  std::string out = negative ? "-nan" : "nan";
  if (payload != default_payload) {
    absl::StrAppend(&out, "(0x", absl::Hex(payload), ")");
  }
  return out;
}

template <typename T>
std::string ShortestText(T value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

}  // namespace

bool PrimitiveTypeFromName(absl::string_view name, xla::PrimitiveType* type) {
  for (const TypeName& entry : kTypeNames) {
    if (entry.name == name) {
      *type = entry.type;
      return true;
    }
  }
  return false;
}

absl::string_view PrimitiveTypeName(xla::PrimitiveType type) {
  for (const TypeName& entry : kTypeNames) {
    if (entry.type == type) return entry.name;
  }
  if (type == xla::TUPLE) return "tuple";
  return "invalid";
}

absl::string_view DefaultComparisonType(xla::PrimitiveType type) {
  if (IsFloatType(type) || IsComplexType(type)) return "FLOAT";
  return IsSignedIntType(type) ? "SIGNED" : "UNSIGNED";
}

bool IsArrayType(xla::PrimitiveType type) {
  switch (type) {
    case xla::PRIMITIVE_TYPE_INVALID:
    case xla::TUPLE:
    case xla::TOKEN:
    case xla::OPAQUE_TYPE:
    case xla::BUFFER:
      return false;
    default:
      return true;
  }
}

bool IsComplexType(xla::PrimitiveType type) {
  return type == xla::C64 || type == xla::C128;
}

bool IsMiniFloatType(xla::PrimitiveType type) {
  return FormatOf(type).exponent_bits != 0;
}

bool IsFloatType(xla::PrimitiveType type) {
  return type == xla::F16 || type == xla::BF16 || type == xla::F32 ||
         type == xla::F64 || IsMiniFloatType(type);
}

int TypeBitWidth(xla::PrimitiveType type) {
  switch (type) {
    case xla::PRED:
      return 1;
    case xla::F16:
    case xla::BF16:
      return 16;
    case xla::F32:
      return 32;
    case xla::F64:
    case xla::C64:
      return 64;
    case xla::C128:
      return 128;
    default:
      return IsMiniFloatType(type) ? 8 : IntBitWidth(type);
  }
}

int IntBitWidth(xla::PrimitiveType type) {
  switch (type) {
    case xla::S1:
    case xla::U1:
      return 1;
    case xla::S2:
    case xla::U2:
      return 2;
    case xla::S4:
    case xla::U4:
      return 4;
    case xla::S8:
    case xla::U8:
      return 8;
    case xla::S16:
    case xla::U16:
      return 16;
    case xla::S32:
    case xla::U32:
      return 32;
    case xla::S64:
    case xla::U64:
      return 64;
    default:
      return 0;
  }
}

bool IsSignedIntType(xla::PrimitiveType type) {
  switch (type) {
    case xla::S1:
    case xla::S2:
    case xla::S4:
    case xla::S8:
    case xla::S16:
    case xla::S32:
    case xla::S64:
      return true;
    default:
      return false;
  }
}

bool IsUnsignedIntType(xla::PrimitiveType type) {
  return IntBitWidth(type) != 0 && !IsSignedIntType(type);
}

int64_t ElementCount(const xla::ShapeProto& shape) {
  // -1 when the product overflows (hostile or unbounded dimensions): signed
  // overflow is undefined, and callers already treat counts <= 0 as nothing
  // to reserve.
  int64_t count = 1;
  for (int64_t d : shape.dimensions()) {
    if (__builtin_mul_overflow(count, d, &count)) return -1;
  }
  return count;
}

void SetDefaultLayout(int rank, xla::LayoutProto* layout) {
  layout->Clear();
  layout->set_format(xla::DENSE);
  for (int i = rank - 1; i >= 0; --i) layout->add_minor_to_major(i);
}

bool HasNonDefaultMinorToMajor(const xla::ShapeProto& shape) {
  if (!shape.has_layout()) return false;
  const auto& m2m = shape.layout().minor_to_major();
  const int rank = shape.dimensions_size();
  if (m2m.size() != rank) return false;
  // Only a permutation of the dimensions is a layout to permute by (shapes
  // from protos are not validated by the parser).
  std::vector<bool> seen(rank, false);
  for (int64_t dim : m2m) {
    if (dim < 0 || dim >= rank || seen[dim]) return false;
    seen[dim] = true;
  }
  for (int i = 0; i < rank; ++i) {
    if (m2m[i] != rank - 1 - i) return true;
  }
  return false;
}

std::vector<int64_t> LogicalToPhysicalIndices(const xla::ShapeProto& shape) {
  std::vector<int64_t> result;
  if (!HasNonDefaultMinorToMajor(shape)) return result;
  // Nothing to permute without elements, and no count at all for an
  // unbounded ('?') dimension or on overflow (ElementCount < 0). Past this
  // check every dimension is at least 1, so no partial stride overflows.
  const int64_t count = ElementCount(shape);
  if (count <= 0) return result;
  const int rank = shape.dimensions_size();
  std::vector<int64_t> strides(rank, 1);
  int64_t stride = 1;
  for (int64_t dim : shape.layout().minor_to_major()) {
    strides[dim] = stride;
    stride *= shape.dimensions(dim);
  }
  result.resize(count);
  std::vector<int64_t> index(rank, 0);
  int64_t physical = 0;
  for (int64_t logical = 0; logical < count; ++logical) {
    result[logical] = physical;
    // Advance the row-major multi-index, keeping `physical` in step.
    for (int d = rank - 1; d >= 0; --d) {
      ++index[d];
      physical += strides[d];
      if (index[d] < shape.dimensions(d)) break;
      physical -= strides[d] * index[d];
      index[d] = 0;
    }
  }
  return result;
}

uint16_t FloatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint16_t sign = (bits >> 16) & 0x8000;
  const uint32_t abs = bits & 0x7fffffff;
  if (abs > 0x7f800000) {  // NaN: keep the top payload bits, stay quiet.
    return sign | 0x7e00 | ((abs >> 13) & 0x1ff);
  }
  if (abs >= 0x477ff000) {  // Rounds to >= 65520: infinity.
    return sign | 0x7c00;
  }
  if (abs < 0x38800000) {  // Below the smallest normal half: subnormal.
    // Scale so that the subnormal unit (2^-24) becomes 1, then round.
    float magnitude;
    std::memcpy(&magnitude, &abs, 4);
    const float scaled = magnitude * 16777216.0f;  // 2^24, exact.
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  // Normal: rebias the exponent and round the mantissa to 10 bits.
  uint32_t rebased = abs - ((127 - 15) << 23);
  const uint32_t round_bit = 1u << 12;
  const uint32_t lsb = (rebased >> 13) & 1;
  rebased += round_bit - 1 + lsb;
  return sign | static_cast<uint16_t>(rebased >> 13);
}

float HalfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  const uint32_t mantissa = bits & 0x3ff;
  uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000 | (mantissa << 13);
  } else if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) / 16777216.0f;
    float result = sign ? -magnitude : magnitude;
    return result;
  } else {
    out = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float result;
  std::memcpy(&result, &out, 4);
  return result;
}

uint16_t FloatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffff) > 0x7f800000) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040);  // Quiet NaN.
  }
  const uint32_t lsb = (bits >> 16) & 1;
  bits += 0x7fff + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

float Bf16ToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float result;
  std::memcpy(&result, &wide, 4);
  return result;
}

uint8_t EncodeMiniFloat(xla::PrimitiveType type, double value) {
  const MiniFormat f = FormatOf(type);
  const int total = TotalBits(f);
  const uint32_t codes = 1u << total;
  if (std::isnan(value)) return static_cast<uint8_t>(NanCode(f));
  const bool negative = std::signbit(value);
  if (negative && !f.has_sign) return static_cast<uint8_t>(NanCode(f));
  const double magnitude = std::fabs(value);
  const uint32_t sign_bit = f.has_sign ? (1u << (total - 1)) : 0;
  // Search the non-negative codes for the nearest finite value.
  double best_diff = HUGE_VAL;
  uint32_t best = 0;
  double max_finite = 0;
  uint32_t max_code = 0;
  double below_max = 0;
  for (uint32_t code = 0; code < (f.has_sign ? codes / 2 : codes); ++code) {
    const double v = DecodeWith(f, code);
    if (!std::isfinite(v)) continue;
    if (v > max_finite) {
      below_max = max_finite;
      max_finite = v;
      max_code = code;
    }
    const double diff = std::fabs(v - magnitude);
    if (diff < best_diff || (diff == best_diff && (code & 1) == 0)) {
      best_diff = diff;
      best = code;
    }
  }
  if (magnitude > max_finite) {
    const double limit = max_finite + (max_finite - below_max) / 2;
    if (std::isinf(magnitude) || magnitude >= limit) {
      if (f.has_inf) {
        const uint32_t inf = ((1u << f.exponent_bits) - 1) << f.mantissa_bits;
        return static_cast<uint8_t>((negative ? sign_bit : 0) | inf);
      }
      if (f.nan != MiniFormat::kNone) return static_cast<uint8_t>(NanCode(f));
    }
    best = max_code;
  }
  if (negative && best != 0) best |= sign_bit;
  if (negative && best == 0 && f.nan != MiniFormat::kFnuz) best |= sign_bit;
  return static_cast<uint8_t>(best);
}

double DecodeMiniFloat(xla::PrimitiveType type, uint8_t bits) {
  return DecodeWith(FormatOf(type), bits);
}

std::string FormatFloat(float value) {
  if (std::isnan(value)) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    return FormatNanPayload(bits >> 31, bits & 0x7fffff, 0x400000);
  }
  return ShortestText(value);
}

std::string FormatDouble(double value) {
  if (std::isnan(value)) {
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    return FormatNanPayload(bits >> 63, bits & 0xfffffffffffffull,
                            0x8000000000000ull);
  }
  return ShortestText(value);
}

}  // namespace tpu::hlo::text_internal
