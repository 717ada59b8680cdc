#include "hlo/literal.h"

#include <cstring>
#include <utility>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace tpu {
namespace {

// Row-major strides, in elements.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

template <typename T>
std::string FormatElement(const T& v) {
  return absl::StrCat(v);
}
template <>
std::string FormatElement(const bool& v) {
  return v ? "true" : "false";
}
template <>
std::string FormatElement(const int8_t& v) {
  return absl::StrCat(static_cast<int>(v));
}
template <>
std::string FormatElement(const uint8_t& v) {
  return absl::StrCat(static_cast<unsigned>(v));
}
template <>
std::string FormatElement(const Eigen::half& v) {
  return absl::StrCat(static_cast<float>(v));
}
template <>
std::string FormatElement(const Eigen::bfloat16& v) {
  return absl::StrCat(static_cast<float>(v));
}
template <>
std::string FormatElement(const std::complex<float>& v) {
  return absl::StrCat("(", v.real(), ", ", v.imag(), ")");
}
template <>
std::string FormatElement(const std::complex<double>& v) {
  return absl::StrCat("(", v.real(), ", ", v.imag(), ")");
}

template <typename T>
std::string FormatArray(const Shape& shape, const void* data) {
  constexpr int64_t kMaxElements = 256;
  const T* values = static_cast<const T*>(data);
  const std::vector<int64_t>& dims = shape.dimensions();
  if (dims.empty()) return FormatElement(values[0]);
  std::vector<int64_t> strides = RowMajorStrides(dims);
  int64_t printed = 0;
  std::string out;
  std::function<void(int64_t, int64_t)> visit = [&](int64_t dim,
                                                    int64_t offset) {
    out += "{";
    for (int64_t i = 0; i < dims[dim]; ++i) {
      if (printed >= kMaxElements) {
        out += "...";
        break;
      }
      if (i > 0) out += ", ";
      if (dim + 1 == static_cast<int64_t>(dims.size())) {
        out += FormatElement(values[offset + i]);
        ++printed;
      } else {
        visit(dim + 1, offset + i * strides[dim]);
      }
    }
    out += "}";
  };
  visit(0, 0);
  return out;
}

std::string FormatArrayOfType(const Shape& shape, const void* data) {
  switch (shape.element_type()) {
    case xla::PRED:
      return FormatArray<bool>(shape, data);
    case xla::S8:
      return FormatArray<int8_t>(shape, data);
    case xla::S16:
      return FormatArray<int16_t>(shape, data);
    case xla::S32:
      return FormatArray<int32_t>(shape, data);
    case xla::S64:
      return FormatArray<int64_t>(shape, data);
    case xla::U8:
      return FormatArray<uint8_t>(shape, data);
    case xla::U16:
      return FormatArray<uint16_t>(shape, data);
    case xla::U32:
      return FormatArray<uint32_t>(shape, data);
    case xla::U64:
      return FormatArray<uint64_t>(shape, data);
    case xla::F16:
      return FormatArray<Eigen::half>(shape, data);
    case xla::BF16:
      return FormatArray<Eigen::bfloat16>(shape, data);
    case xla::F32:
      return FormatArray<float>(shape, data);
    case xla::F64:
      return FormatArray<double>(shape, data);
    case xla::C64:
      return FormatArray<std::complex<float>>(shape, data);
    case xla::C128:
      return FormatArray<std::complex<double>>(shape, data);
    default:
      return "?";
  }
}

// Copies `count` elements of `width` bytes from a proto field into `out`.
template <typename Field>
absl::Status CopyRepeated(const Field& field, int64_t expected,
                          const char* name, void* out) {
  if (field.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("literal has ", field.size(), " values in ", name,
                     " but its shape needs ", expected));
  }
  using V = typename std::decay<decltype(*field.begin())>::type;
  V* dst = static_cast<V*>(out);
  int64_t i = 0;
  for (const auto& v : field) dst[i++] = v;
  return absl::OkStatus();
}

absl::Status CopyBytes(const std::string& field, int64_t expected_bytes,
                       const char* name, void* out) {
  if (static_cast<int64_t>(field.size()) != expected_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("literal has ", field.size(), " bytes in ", name,
                     " but its shape needs ", expected_bytes));
  }
  if (expected_bytes > 0) std::memcpy(out, field.data(), expected_bytes);
  return absl::OkStatus();
}

// The bytes field of a one-byte narrow type (s4s, u4s, f8e4m3fns, ...: the
// type's name and an "s"), or nullptr for other types.
const google::protobuf::FieldDescriptor* NarrowBytesField(
    xla::PrimitiveType type) {
  if (ByteWidth(type) != 1 || type == xla::PRED || type == xla::S8 ||
      type == xla::U8) {
    return nullptr;
  }
  return xla::LiteralProto::descriptor()->FindFieldByName(
      PrimitiveTypeName(type) + "s");
}

// Refuses a proto whose values do not fill `shape` (an array shape) before
// anything is allocated: a hundred-byte proto that claims a 4 TiB array must
// fail here, not in a 4 TiB allocation.
absl::Status CheckValuesBeforeAllocating(const xla::LiteralProto& proto,
                                         const Shape& shape) {
  const google::protobuf::FieldDescriptor* field =
      xla::LiteralProto::descriptor()->FindFieldByName(
          PrimitiveTypeName(shape.element_type()) + "s");
  if (field == nullptr) return absl::OkStatus();  // reported as unsupported
  const google::protobuf::Reflection* reflection = proto.GetReflection();
  int64_t have = 0;
  int64_t need = 0;
  const char* unit = "values";
  if (field->is_repeated()) {
    have = reflection->FieldSize(proto, field);
    const bool complex =
        shape.element_type() == xla::C64 || shape.element_type() == xla::C128;
    need = shape.element_count() * (complex ? 2 : 1);
  } else {
    std::string scratch;
    have = static_cast<int64_t>(
        reflection->GetStringReference(proto, field, &scratch).size());
    need = shape.ByteSize();
    unit = "bytes";
  }
  if (have == need) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("literal of shape ", shape.ToString(), " has ", have, " ",
                   unit, " in ", field->name(), " but its shape needs ", need,
                   "; a literal must carry every value of its shape"));
}

}  // namespace

Literal::Literal() = default;

Literal Literal::Zeros(const Shape& shape) {
  Literal literal;
  literal.shape_ = shape;
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes()) {
      literal.elements_.push_back(Zeros(element));
    }
  } else if (shape.IsArray()) {
    literal.buffer_ = AlignedBuffer::AllocateZeroed(shape.ByteSize());
  }
  return literal;
}

Literal Literal::Uninitialized(const Shape& shape) {
  Literal literal;
  literal.shape_ = shape;
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes()) {
      literal.elements_.push_back(Uninitialized(element));
    }
  } else if (shape.IsArray()) {
    literal.buffer_ = AlignedBuffer::Allocate(shape.ByteSize());
  }
  return literal;
}

absl::StatusOr<Literal> Literal::FromBuffer(
    const Shape& shape, std::shared_ptr<AlignedBuffer> bytes) {
  if (!shape.IsArray()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Literal::FromBuffer needs an array shape, got ", shape.ToString()));
  }
  if (bytes == nullptr || bytes->size() != shape.ByteSize()) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer of ", bytes == nullptr ? 0 : bytes->size(),
                     " bytes does not match shape ", shape.ToString(), " (",
                     shape.ByteSize(), " bytes)"));
  }
  Literal literal;
  literal.shape_ = shape;
  literal.buffer_ = std::move(bytes);
  return literal;
}

Literal Literal::Tuple(std::vector<Literal> elements) {
  Literal literal;
  std::vector<Shape> shapes;
  shapes.reserve(elements.size());
  for (const Literal& element : elements) shapes.push_back(element.shape());
  literal.shape_ = Shape::Tuple(std::move(shapes));
  literal.elements_ = std::move(elements);
  return literal;
}

template <typename T>
Literal Literal::FromVector(xla::PrimitiveType type,
                            std::vector<int64_t> dimensions,
                            absl::Span<const T> values) {
  Literal literal = Uninitialized(Shape::Array(type, std::move(dimensions)));
  if (!values.empty()) {
    std::memcpy(literal.buffer_->data(), values.data(),
                values.size() * sizeof(T));
  }
  return literal;
}

#define TPU_INSTANTIATE_FROM_VECTOR(T)     \
  template Literal Literal::FromVector<T>( \
      xla::PrimitiveType, std::vector<int64_t>, absl::Span<const T>);
TPU_INSTANTIATE_FROM_VECTOR(bool)
TPU_INSTANTIATE_FROM_VECTOR(int8_t)
TPU_INSTANTIATE_FROM_VECTOR(int16_t)
TPU_INSTANTIATE_FROM_VECTOR(int32_t)
TPU_INSTANTIATE_FROM_VECTOR(int64_t)
TPU_INSTANTIATE_FROM_VECTOR(uint8_t)
TPU_INSTANTIATE_FROM_VECTOR(uint16_t)
TPU_INSTANTIATE_FROM_VECTOR(uint32_t)
TPU_INSTANTIATE_FROM_VECTOR(uint64_t)
TPU_INSTANTIATE_FROM_VECTOR(Eigen::half)
TPU_INSTANTIATE_FROM_VECTOR(Eigen::bfloat16)
TPU_INSTANTIATE_FROM_VECTOR(float)
TPU_INSTANTIATE_FROM_VECTOR(double)
TPU_INSTANTIATE_FROM_VECTOR(std::complex<float>)
TPU_INSTANTIATE_FROM_VECTOR(std::complex<double>)
#undef TPU_INSTANTIATE_FROM_VECTOR

absl::StatusOr<Literal> Literal::FromProto(const xla::LiteralProto& proto) {
  absl::StatusOr<Shape> shape_or = Shape::FromProto(proto.shape());
  if (!shape_or.ok()) return shape_or.status();
  const Shape& shape = *shape_or;
  if (shape.IsTuple()) {
    if (proto.tuple_literals_size() != shape.tuple_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tuple literal of shape ", shape.ToString(), " has ",
                       proto.tuple_literals_size(), " elements"));
    }
    std::vector<Literal> elements;
    for (const xla::LiteralProto& element : proto.tuple_literals()) {
      absl::StatusOr<Literal> literal = FromProto(element);
      if (!literal.ok()) return literal.status();
      elements.push_back(*std::move(literal));
    }
    return Tuple(std::move(elements));
  }
  if (shape.IsToken()) {
    Literal literal;
    literal.shape_ = shape;
    return literal;
  }
  if (absl::Status s = CheckValuesBeforeAllocating(proto, shape); !s.ok()) {
    return s;
  }
  Literal literal = Uninitialized(shape);
  void* out = literal.buffer_->data();
  const int64_t n = shape.element_count();
  const int64_t bytes = shape.ByteSize();
  absl::Status status;
  switch (shape.element_type()) {
    case xla::PRED:
      status = CopyRepeated(proto.preds(), n, "preds", out);
      break;
    case xla::S8:
      status = CopyBytes(proto.s8s(), bytes, "s8s", out);
      break;
    case xla::U8:
      status = CopyBytes(proto.u8s(), bytes, "u8s", out);
      break;
    case xla::S16:
      status = CopyBytes(proto.s16s(), bytes, "s16s", out);
      break;
    case xla::U16:
      status = CopyBytes(proto.u16s(), bytes, "u16s", out);
      break;
    case xla::F16:
      status = CopyBytes(proto.f16s(), bytes, "f16s", out);
      break;
    case xla::BF16:
      status = CopyBytes(proto.bf16s(), bytes, "bf16s", out);
      break;
    case xla::S32:
      status = CopyRepeated(proto.s32s(), n, "s32s", out);
      break;
    case xla::S64:
      status = CopyRepeated(proto.s64s(), n, "s64s", out);
      break;
    case xla::U32:
      status = CopyRepeated(proto.u32s(), n, "u32s", out);
      break;
    case xla::U64:
      status = CopyRepeated(proto.u64s(), n, "u64s", out);
      break;
    case xla::F32:
      status = CopyRepeated(proto.f32s(), n, "f32s", out);
      break;
    case xla::F64:
      status = CopyRepeated(proto.f64s(), n, "f64s", out);
      break;
    case xla::C64:
      status = CopyRepeated(proto.c64s(), 2 * n, "c64s", out);
      break;
    case xla::C128:
      status = CopyRepeated(proto.c128s(), 2 * n, "c128s", out);
      break;
    default: {
      const auto* field = NarrowBytesField(shape.element_type());
      if (field == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("unsupported literal shape ", shape.ToString()));
      }
      status = CopyBytes(proto.GetReflection()->GetString(proto, field), bytes,
                         field->name().c_str(), out);
    }
  }
  if (!status.ok()) return status;

  // A non-default layout: the values are stored in minor_to_major order;
  // permute them into row-major.
  const auto& m2m = proto.shape().layout().minor_to_major();
  const int64_t rank = shape.rank();
  bool row_major = true;
  for (int64_t i = 0; i < m2m.size(); ++i) {
    if (m2m[i] != rank - 1 - i) row_major = false;
  }
  if (row_major || n <= 1) return literal;
  const std::vector<int64_t>& dims = shape.dimensions();
  // Strides of the source layout, in elements, indexed by dimension.
  std::vector<int64_t> src_strides(rank);
  int64_t stride = 1;
  for (int64_t i = 0; i < rank; ++i) {
    src_strides[m2m[i]] = stride;
    stride *= dims[m2m[i]];
  }
  const int64_t width = ByteWidth(shape.element_type());
  Literal permuted = Uninitialized(shape);
  const char* src = static_cast<const char*>(literal.buffer_->data());
  char* dst = static_cast<char*>(permuted.buffer_->data());
  std::vector<int64_t> index(rank, 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) offset += index[d] * src_strides[d];
    std::memcpy(dst + linear * width, src + offset * width, width);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return permuted;
}

xla::LiteralProto Literal::ToProto() const {
  xla::LiteralProto proto;
  *proto.mutable_shape() = shape_.ToProto();
  if (shape_.IsTuple()) {
    for (const Literal& element : elements_) {
      *proto.add_tuple_literals() = element.ToProto();
    }
    return proto;
  }
  if (!shape_.IsArray()) return proto;
  const int64_t n = shape_.element_count();
  const void* data = buffer_->data();
  // Built only for the types stored as bytes: a copy of a 64 MiB f32 array
  // that nothing reads would cost as much as filling the repeated field.
  auto bytes = [&] {
    return std::string(static_cast<const char*>(data), shape_.ByteSize());
  };
  // One bulk append (a memcpy) rather than an Add per element.
  auto add_all = [&](auto* field, auto* values, int64_t count) {
    field->Add(values, values + count);
  };
  switch (shape_.element_type()) {
    case xla::PRED:
      add_all(proto.mutable_preds(), static_cast<const bool*>(data), n);
      break;
    case xla::S8:
      proto.set_s8s(bytes());
      break;
    case xla::U8:
      proto.set_u8s(bytes());
      break;
    case xla::S16:
      proto.set_s16s(bytes());
      break;
    case xla::U16:
      proto.set_u16s(bytes());
      break;
    case xla::F16:
      proto.set_f16s(bytes());
      break;
    case xla::BF16:
      proto.set_bf16s(bytes());
      break;
    case xla::S32:
      add_all(proto.mutable_s32s(), static_cast<const int32_t*>(data), n);
      break;
    case xla::S64:
      add_all(proto.mutable_s64s(), static_cast<const int64_t*>(data), n);
      break;
    case xla::U32:
      add_all(proto.mutable_u32s(), static_cast<const uint32_t*>(data), n);
      break;
    case xla::U64:
      add_all(proto.mutable_u64s(), static_cast<const uint64_t*>(data), n);
      break;
    case xla::F32:
      add_all(proto.mutable_f32s(), static_cast<const float*>(data), n);
      break;
    case xla::F64:
      add_all(proto.mutable_f64s(), static_cast<const double*>(data), n);
      break;
    case xla::C64:
      add_all(proto.mutable_c64s(), static_cast<const float*>(data), 2 * n);
      break;
    case xla::C128:
      add_all(proto.mutable_c128s(), static_cast<const double*>(data), 2 * n);
      break;
    default:
      if (const auto* field = NarrowBytesField(shape_.element_type())) {
        proto.GetReflection()->SetString(&proto, field, bytes());
      }
      break;
  }
  return proto;
}

int64_t Literal::size_bytes() const { return shape_.ByteSize(); }

const void* Literal::untyped_data() const {
  return buffer_ == nullptr ? nullptr : buffer_->data();
}

void* Literal::mutable_untyped_data() {
  if (buffer_ == nullptr) return nullptr;
  if (buffer_.use_count() > 1) {
    std::shared_ptr<AlignedBuffer> copy =
        AlignedBuffer::Allocate(buffer_->size());
    if (buffer_->size() > 0) {
      std::memcpy(copy->data(), buffer_->data(), buffer_->size());
    }
    buffer_ = std::move(copy);
  }
  return buffer_->data();
}

std::vector<Literal> Literal::DecomposeTuple() && {
  std::vector<Literal> elements = std::move(elements_);
  elements_.clear();
  shape_ = Shape();
  return elements;
}

std::vector<Literal> Literal::Leaves() const {
  std::vector<Literal> leaves;
  std::function<void(const Literal&)> visit = [&](const Literal& literal) {
    if (!literal.shape_.IsTuple()) {
      leaves.push_back(literal);
      return;
    }
    for (const Literal& element : literal.elements_) visit(element);
  };
  visit(*this);
  return leaves;
}

std::string Literal::ToString() const {
  if (shape_.IsTuple()) {
    std::vector<std::string> parts;
    for (const Literal& element : elements_) {
      parts.push_back(element.ToString());
    }
    return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
  }
  if (!shape_.IsArray()) return shape_.ToString();
  return absl::StrCat(shape_.ToString(), " ",
                      FormatArrayOfType(shape_, buffer_->data()));
}

bool Literal::operator==(const Literal& other) const {
  if (shape_ != other.shape_) return false;
  if (shape_.IsTuple()) return elements_ == other.elements_;
  if (!shape_.IsArray()) return true;
  if (buffer_ == other.buffer_) return true;
  return std::memcmp(buffer_->data(), other.buffer_->data(),
                     shape_.ByteSize()) == 0;
}

}  // namespace tpu
