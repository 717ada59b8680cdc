#include "tools/tpu_run/npy_literal.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tpu {
namespace {

std::string NumpyShape(const std::vector<int64_t>& dims) {
  NpyArray a;
  a.shape = dims;
  return a.ShapeString();
}

}  // namespace

uint16_t FloatToBfloat16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    // NaN: keep the sign and the top payload bits, force a quiet NaN so
    // truncation cannot turn it into infinity.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  const uint32_t rounding_bias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

float Bfloat16BitsToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

absl::StatusOr<NpyDtype> NpyDtypeFor(xla::PrimitiveType type) {
  switch (type) {
    case xla::PRED:
      return NpyDtype{'b', 1};
    case xla::S8:
      return NpyDtype{'i', 1};
    case xla::S16:
      return NpyDtype{'i', 2};
    case xla::S32:
      return NpyDtype{'i', 4};
    case xla::S64:
      return NpyDtype{'i', 8};
    case xla::U8:
      return NpyDtype{'u', 1};
    case xla::U16:
      return NpyDtype{'u', 2};
    case xla::U32:
      return NpyDtype{'u', 4};
    case xla::U64:
      return NpyDtype{'u', 8};
    case xla::F16:
      return NpyDtype{'f', 2};
    case xla::BF16:  // carried as float32
    case xla::F32:
      return NpyDtype{'f', 4};
    case xla::F64:
      return NpyDtype{'f', 8};
    case xla::C64:
      return NpyDtype{'c', 8};
    case xla::C128:
      return NpyDtype{'c', 16};
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "element type ", PrimitiveTypeName(type), " has no .npy form"));
  }
}

absl::StatusOr<Literal> LiteralFromNpy(const NpyArray& array,
                                       const Shape& expected) {
  if (!expected.IsArray()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", expected.ToString(), ", which .npy cannot hold"));
  }
  absl::StatusOr<NpyDtype> dtype = NpyDtypeFor(expected.element_type());
  if (!dtype.ok()) return dtype.status();
  if (array.dtype != *dtype || array.shape != expected.dimensions()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "is ", array.dtype.Name(), " of shape ", array.ShapeString(),
        " but the parameter is ", expected.ToString(), ": save it as ",
        dtype->Name(), " with shape ", NumpyShape(expected.dimensions())));
  }
  std::shared_ptr<AlignedBuffer> bytes =
      AlignedBuffer::Allocate(expected.ByteSize());
  if (expected.element_type() == xla::BF16) {
    uint16_t* out = static_cast<uint16_t*>(bytes->data());
    for (int64_t i = 0; i < array.element_count(); ++i) {
      float f;
      std::memcpy(&f, array.data.data() + 4 * i, 4);
      out[i] = FloatToBfloat16Bits(f);
    }
  } else if (expected.element_type() == xla::PRED) {
    // NumPy bools are one byte each, 0 or 1; normalize anything else.
    uint8_t* out = static_cast<uint8_t*>(bytes->data());
    for (int64_t i = 0; i < array.element_count(); ++i) {
      out[i] = array.data[i] != 0 ? 1 : 0;
    }
  } else if (!array.data.empty()) {
    std::memcpy(bytes->data(), array.data.data(), array.data.size());
  }
  return Literal::FromBuffer(expected, std::move(bytes));
}

absl::StatusOr<NpyArray> NpyFromLiteral(const Literal& literal) {
  const Shape& shape = literal.shape();
  if (!shape.IsArray()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot write ", shape.ToString(), " as .npy: only arrays"));
  }
  absl::StatusOr<NpyDtype> dtype = NpyDtypeFor(shape.element_type());
  if (!dtype.ok()) return dtype.status();
  NpyArray array;
  array.dtype = *dtype;
  array.shape = shape.dimensions();
  const char* src = static_cast<const char*>(literal.untyped_data());
  if (shape.element_type() == xla::BF16) {
    array.data.resize(4 * shape.element_count());
    for (int64_t i = 0; i < shape.element_count(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, src + 2 * i, 2);
      const float f = Bfloat16BitsToFloat(bits);
      std::memcpy(&array.data[4 * i], &f, 4);
    }
  } else if (literal.size_bytes() > 0) {
    array.data.assign(src, literal.size_bytes());
  }
  return array;
}

}  // namespace tpu
