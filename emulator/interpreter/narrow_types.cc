// Narrow element types: widening and narrowing of arrays, and convert to
// and from them (narrow_types.h; the encodings are in narrow_codec.cc).

#include "emulator/interpreter/narrow_types.h"

#include <cmath>
#include <limits>

#include "emulator/interpreter/kernel_util.h"

namespace tpu::emulator::interpreter {
namespace {

// The wide type a narrow one computes in.
xla::PrimitiveType WideType(xla::PrimitiveType type) {
  if (type == xla::S4) return xla::S8;
  if (type == xla::U4) return xla::U8;
  return xla::F32;
}

}  // namespace

Shape WidenShape(const Shape& shape, xla::PrimitiveType s4_as,
                 xla::PrimitiveType u4_as) {
  if (shape.IsTuple()) {
    std::vector<Shape> elements;
    for (const Shape& e : shape.tuple_shapes()) {
      elements.push_back(WidenShape(e, s4_as, u4_as));
    }
    return Shape::Tuple(std::move(elements));
  }
  if (!shape.IsArray() || !IsNarrowType(shape.element_type())) return shape;
  const xla::PrimitiveType t = shape.element_type();
  return Shape::Array(t == xla::S4   ? s4_as
                      : t == xla::U4 ? u4_as
                                     : WideType(t),
                      shape.dimensions());
}

bool HasNarrowType(const Shape& shape) {
  if (shape.IsTuple()) {
    for (const Shape& e : shape.tuple_shapes()) {
      if (HasNarrowType(e)) return true;
    }
    return false;
  }
  return shape.IsArray() && IsNarrowType(shape.element_type());
}

namespace {

// Element i of an integer or pred array as its two's complement bits.
uint64_t IntegerBits(const Literal& literal, int64_t i) {
  return DispatchType(
      literal.shape().element_type(),
      [&](auto tag) -> uint64_t {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T>) {
          return static_cast<uint64_t>(literal.data<T>()[i]);
        } else {
          return 0;
        }
      },
      []() -> uint64_t { return 0; });
}

// Element i of any real array (narrow or not) as a double.
std::vector<double> RealValues(const Literal& literal) {
  const xla::PrimitiveType type = literal.shape().element_type();
  if (!IsNarrowType(type)) return ValuesAsDouble(literal);
  const uint8_t* bytes = static_cast<const uint8_t*>(literal.untyped_data());
  std::vector<double> values(literal.shape().element_count());
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = IsNarrowInt(type) ? DecodeInt4(type, bytes[i])
                                  : DecodeF8(type, bytes[i]);
  }
  return values;
}

// Float to a 4-bit integer: truncate, saturate, NaN to 0 (XLA's float to
// integer rule).
uint8_t SaturateInt4(xla::PrimitiveType type, double v) {
  const double lo = type == xla::S4 ? -8 : 0, hi = type == xla::S4 ? 7 : 15;
  if (std::isnan(v)) return 0;
  const double t = std::trunc(std::min(std::max(v, lo), hi));
  return static_cast<uint8_t>(static_cast<int64_t>(t) & 0xF);
}

// `source` converted into the narrow array `out` (convert's rules).
void ConvertIntoNarrow(const Literal& source, Literal& out) {
  const xla::PrimitiveType from = source.shape().element_type();
  const xla::PrimitiveType to = out.shape().element_type();
  uint8_t* dst = static_cast<uint8_t*>(out.mutable_untyped_data());
  const int64_t n = out.shape().element_count();
  const bool integer_source =
      from == xla::PRED || IsSignedInteger(from) || IsUnsignedInteger(from);
  if (IsNarrowInt(to) && (integer_source || IsNarrowInt(from))) {
    // Integer to 4-bit integer keeps the low four bits.
    const uint8_t* narrow = static_cast<const uint8_t*>(source.untyped_data());
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t bits =
          IsNarrowInt(from) ? static_cast<uint64_t>(DecodeInt4(from, narrow[i]))
                            : IntegerBits(source, i);
      dst[i] = static_cast<uint8_t>(bits & 0xF);
    }
    return;
  }
  const std::vector<double> values = RealValues(source);
  for (int64_t i = 0; i < n; ++i) {
    dst[i] =
        IsNarrowInt(to) ? SaturateInt4(to, values[i]) : EncodeF8(to, values[i]);
  }
}

}  // namespace

Literal Narrow(const Literal& wide, const Shape& narrow_shape) {
  if (narrow_shape.IsTuple()) {
    std::vector<Literal> elements;
    for (int64_t i = 0; i < narrow_shape.tuple_size(); ++i) {
      elements.push_back(
          Narrow(wide.element(i), narrow_shape.tuple_shapes()[i]));
    }
    return Literal::Tuple(std::move(elements));
  }
  if (!narrow_shape.IsArray() || !IsNarrowType(narrow_shape.element_type())) {
    return wide;
  }
  Literal out = Literal::Uninitialized(narrow_shape);
  if (narrow_shape.element_count() > 0) ConvertIntoNarrow(wide, out);
  return out;
}

// `narrow` as `wide_shape` (its WidenShape under some choice of s4/u4 types).
Literal WidenTo(const Literal& narrow, const Shape& wide_shape) {
  if (wide_shape.IsTuple()) {
    std::vector<Literal> elements;
    for (int64_t i = 0; i < wide_shape.tuple_size(); ++i) {
      elements.push_back(
          WidenTo(narrow.element(i), wide_shape.tuple_shapes()[i]));
    }
    return Literal::Tuple(std::move(elements));
  }
  const xla::PrimitiveType from = narrow.shape().element_type();
  if (!narrow.shape().IsArray() || !IsNarrowType(from)) return narrow;
  const uint8_t* src = static_cast<const uint8_t*>(narrow.untyped_data());
  const int64_t n = narrow.shape().element_count();
  Literal out = Literal::Uninitialized(wide_shape);
  if (n == 0) return out;
  switch (wide_shape.element_type()) {
    case xla::S8: {  // sign-extended from bit 3 (also for u4: shra)
      int8_t* dst = static_cast<int8_t*>(out.mutable_untyped_data());
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = static_cast<int8_t>(DecodeInt4(xla::S4, src[i]));
      }
      break;
    }
    case xla::U8: {  // zero-extended (also for s4: shrl, popcnt, clz)
      uint8_t* dst = static_cast<uint8_t*>(out.mutable_untyped_data());
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] & 0xF;
      break;
    }
    default: {
      float* dst = static_cast<float*>(out.mutable_untyped_data());
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = static_cast<float>(DecodeF8(from, src[i]));
      }
    }
  }
  return out;
}

Literal Widen(const Literal& narrow) {
  return WidenTo(narrow, WidenShape(narrow.shape(), xla::S8, xla::U8));
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileNarrowConvert(
    const HloInstruction& instruction) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& in = instruction.operand(0)->shape();
  const Shape shape = instruction.shape();
  if (!in.IsArray() || !shape.IsArray() ||
      in.dimensions() != shape.dimensions()) {
    return Malformed(absl::StrCat("convert from ", in.ToString(), " to ",
                                  shape.ToString(),
                                  " must keep the dimensions"));
  }
  if (IsComplex(in.element_type()) || IsComplex(shape.element_type())) {
    return absl::UnimplementedError(absl::StrCat(
        "convert between ", PrimitiveTypeName(in.element_type()), " and ",
        PrimitiveTypeName(shape.element_type()), " is not supported"));
  }
  return MakeKernel(
      [shape](KernelContext&,
              absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const Literal& source = *operands[0].value;
        if (IsNarrowType(shape.element_type())) return Narrow(source, shape);
        return LiteralFromDoubles(shape, RealValues(source));
      });
}

}  // namespace tpu::emulator::interpreter
