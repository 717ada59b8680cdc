#include "hlo/shape.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tpu {
namespace {

struct TypeInfo {
  xla::PrimitiveType type;
  const char* name;
  int64_t width;
};

constexpr TypeInfo kTypes[] = {
    {xla::PRED, "pred", 1},
    {xla::S8, "s8", 1},
    {xla::S16, "s16", 2},
    {xla::S32, "s32", 4},
    {xla::S64, "s64", 8},
    {xla::U8, "u8", 1},
    {xla::U16, "u16", 2},
    {xla::U32, "u32", 4},
    {xla::U64, "u64", 8},
    {xla::F16, "f16", 2},
    {xla::BF16, "bf16", 2},
    {xla::F32, "f32", 4},
    {xla::F64, "f64", 8},
    {xla::C64, "c64", 8},
    {xla::C128, "c128", 16},
    {xla::TUPLE, "tuple", 0},
    {xla::TOKEN, "token", 0},
    {xla::OPAQUE_TYPE, "opaque", 0},
    // Narrow types, one element per byte (s4/u4 in the low four bits).
    {xla::S4, "s4", 1},
    {xla::U4, "u4", 1},
    {xla::F8E5M2, "f8e5m2", 1},
    {xla::F8E4M3, "f8e4m3", 1},
    {xla::F8E4M3FN, "f8e4m3fn", 1},
    {xla::F8E4M3FNUZ, "f8e4m3fnuz", 1},
    {xla::F8E5M2FNUZ, "f8e5m2fnuz", 1},
    {xla::F8E4M3B11FNUZ, "f8e4m3b11fnuz", 1},
    {xla::F8E3M4, "f8e3m4", 1},
    {xla::F8E8M0FNU, "f8e8m0fnu", 1},
};

const TypeInfo* Find(xla::PrimitiveType type) {
  for (const TypeInfo& info : kTypes) {
    if (info.type == type) return &info;
  }
  return nullptr;
}

}  // namespace

int64_t ByteWidth(xla::PrimitiveType type) {
  const TypeInfo* info = Find(type);
  return info == nullptr ? 0 : info->width;
}

std::string PrimitiveTypeName(xla::PrimitiveType type) {
  const TypeInfo* info = Find(type);
  if (info != nullptr) return info->name;
  // Types we know by number but do not support (f8 etc.): XLA's enum name in
  // lower case keeps messages readable.
  if (xla::PrimitiveType_IsValid(type)) {
    std::string name = xla::PrimitiveType_Name(type);
    for (char& c : name) c = static_cast<char>(std::tolower(c));
    return name;
  }
  return absl::StrCat("<invalid type ", static_cast<int>(type), ">");
}

absl::StatusOr<xla::PrimitiveType> PrimitiveTypeFromName(
    absl::string_view name) {
  for (const TypeInfo& info : kTypes) {
    if (name == info.name) return info.type;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown element type \"", name, "\""));
}

bool IsFloatingPoint(xla::PrimitiveType type) {
  return type == xla::F16 || type == xla::BF16 || type == xla::F32 ||
         type == xla::F64;
}
bool IsComplex(xla::PrimitiveType type) {
  return type == xla::C64 || type == xla::C128;
}
bool IsSignedInteger(xla::PrimitiveType type) {
  return type == xla::S8 || type == xla::S16 || type == xla::S32 ||
         type == xla::S64;
}
bool IsUnsignedInteger(xla::PrimitiveType type) {
  return type == xla::U8 || type == xla::U16 || type == xla::U32 ||
         type == xla::U64;
}
bool IsArrayType(xla::PrimitiveType type) {
  return type == xla::PRED || IsFloatingPoint(type) || IsComplex(type) ||
         IsSignedInteger(type) || IsUnsignedInteger(type) ||
         ByteWidth(type) == 1;
}

Shape::Shape() : element_type_(xla::TUPLE) {}

Shape Shape::Array(xla::PrimitiveType type, std::vector<int64_t> dimensions) {
  Shape shape;
  shape.element_type_ = type;
  shape.dimensions_ = std::move(dimensions);
  return shape;
}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape shape;
  shape.tuple_shapes_ = std::move(elements);
  return shape;
}

Shape Shape::Token() {
  Shape shape;
  shape.element_type_ = xla::TOKEN;
  return shape;
}

namespace {

// Tuple nesting of the FromProto calls on this thread.
thread_local int from_proto_depth = 0;

struct DepthGuard {
  DepthGuard() { ++from_proto_depth; }
  ~DepthGuard() { --from_proto_depth; }
};

}  // namespace

absl::StatusOr<Shape> Shape::FromProto(const xla::ShapeProto& proto) {
  xla::PrimitiveType type = proto.element_type();
  if (type == xla::TUPLE) {
    DepthGuard guard;
    if (from_proto_depth > kMaxNesting) {
      return absl::InvalidArgumentError(
          absl::StrCat("tuple shapes nest more than ", kMaxNesting, " deep"));
    }
    if (proto.dimensions_size() != 0) {
      return absl::InvalidArgumentError("tuple shape has dimensions");
    }
    std::vector<Shape> elements;
    elements.reserve(proto.tuple_shapes_size());
    for (const xla::ShapeProto& element : proto.tuple_shapes()) {
      absl::StatusOr<Shape> shape = FromProto(element);
      if (!shape.ok()) return shape.status();
      elements.push_back(*std::move(shape));
    }
    return Tuple(std::move(elements));
  }
  if (type == xla::TOKEN) return Token();
  if (!IsArrayType(type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported element type ", PrimitiveTypeName(type), " in shape"));
  }
  if (proto.tuple_shapes_size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array shape of ", PrimitiveTypeName(type), " has tuple elements"));
  }
  std::vector<int64_t> dims(proto.dimensions().begin(),
                            proto.dimensions().end());
  // Reject element counts whose byte size would overflow int64.
  __int128 bytes = ByteWidth(type);
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "negative dimension ", d, " in shape ", PrimitiveTypeName(type), "[",
          absl::StrJoin(dims, ","), "]"));
    }
    bytes *= d;
    if (bytes > (static_cast<__int128>(1) << 62)) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", PrimitiveTypeName(type), "[",
                       absl::StrJoin(dims, ","), "] is too large"));
    }
  }
  const xla::LayoutProto& layout = proto.layout();
  if (layout.minor_to_major_size() != 0) {
    if (layout.minor_to_major_size() != static_cast<int>(dims.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layout minor_to_major has ", layout.minor_to_major_size(),
          " entries for a rank-", dims.size(), " shape"));
    }
    std::vector<bool> seen(dims.size(), false);
    for (int64_t d : layout.minor_to_major()) {
      if (d < 0 || d >= static_cast<int64_t>(dims.size()) || seen[d]) {
        return absl::InvalidArgumentError(
            absl::StrCat("layout minor_to_major is not a permutation of 0..",
                         dims.size() - 1));
      }
      seen[d] = true;
    }
  }
  return Array(type, std::move(dims));
}

xla::ShapeProto Shape::ToProto() const {
  xla::ShapeProto proto;
  proto.set_element_type(element_type_);
  if (IsTuple()) {
    for (const Shape& element : tuple_shapes_) {
      *proto.add_tuple_shapes() = element.ToProto();
    }
  } else if (IsArray()) {
    for (int64_t d : dimensions_) proto.add_dimensions(d);
    xla::LayoutProto* layout = proto.mutable_layout();
    for (int64_t i = rank() - 1; i >= 0; --i) layout->add_minor_to_major(i);
  }
  return proto;
}

bool Shape::IsArray() const { return IsArrayType(element_type_); }

int64_t Shape::element_count() const {
  int64_t count = 1;
  for (int64_t d : dimensions_) count *= d;
  return count;
}

int64_t Shape::ByteSize() const {
  if (IsTuple()) return 8 * tuple_size();
  if (IsArray()) return element_count() * ByteWidth(element_type_);
  return 0;
}

const Shape& Shape::Subshape(const ShapeIndex& index) const {
  const Shape* shape = this;
  for (int64_t i : index) shape = &shape->tuple_shapes_[i];
  return *shape;
}

void Shape::ForEachLeaf(
    const std::function<void(const Shape& leaf, const ShapeIndex& index)>& fn)
    const {
  ShapeIndex index;
  std::function<void(const Shape&)> visit = [&](const Shape& shape) {
    if (!shape.IsTuple()) {
      fn(shape, index);
      return;
    }
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      index.push_back(i);
      visit(shape.tuple_shapes_[i]);
      index.pop_back();
    }
  };
  visit(*this);
}

std::vector<Shape> Shape::Leaves() const {
  std::vector<Shape> leaves;
  ForEachLeaf(
      [&](const Shape& leaf, const ShapeIndex&) { leaves.push_back(leaf); });
  return leaves;
}

std::string Shape::ToString() const {
  if (IsTuple()) {
    std::vector<std::string> parts;
    for (const Shape& element : tuple_shapes_) {
      parts.push_back(element.ToString());
    }
    return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
  }
  if (IsToken()) return "token[]";
  return absl::StrCat(PrimitiveTypeName(element_type_), "[",
                      absl::StrJoin(dimensions_, ","), "]");
}

bool Shape::operator==(const Shape& other) const {
  return element_type_ == other.element_type_ &&
         dimensions_ == other.dimensions_ &&
         tuple_shapes_ == other.tuple_shapes_;
}

}  // namespace tpu
