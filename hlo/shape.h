#ifndef SOFTWARE_TPU_HLO_SHAPE_H_
#define SOFTWARE_TPU_HLO_SHAPE_H_

// Shapes of arrays, tuples and tokens, and facts about element types.
//
// Arrays are always dense and row-major here (the driver's layout); layouts
// found in protos are accepted and ignored except for validation.
//
// Thread safety: Shape is a value type; const methods are safe concurrently.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/xla_data.pb.h"

namespace tpu {

// Bytes per element: PRED/S8/U8 1, F16/BF16/S16/U16 2, F32/S32/U32 4,
// F64/S64/U64/C64 8, C128 16; S4/U4 and the F8 types 1 (one element per
// byte, as XLA's literals hold them). 0 for TUPLE, TOKEN, OPAQUE and invalid
// types.
int64_t ByteWidth(xla::PrimitiveType type);

// XLA's lower-case spelling: "pred", "s32", "bf16", "f32", "c64", "token"...
std::string PrimitiveTypeName(xla::PrimitiveType type);

// Inverse of PrimitiveTypeName; INVALID_ARGUMENT for an unknown name.
absl::StatusOr<xla::PrimitiveType> PrimitiveTypeFromName(
    absl::string_view name);

bool IsFloatingPoint(xla::PrimitiveType type);    // f16 bf16 f32 f64
bool IsComplex(xla::PrimitiveType type);          // c64 c128
bool IsSignedInteger(xla::PrimitiveType type);    // s8..s64
bool IsUnsignedInteger(xla::PrimitiveType type);  // u8..u64
// pred, integers (s4/u4 too), floats (f8 too), complex.
bool IsArrayType(xla::PrimitiveType type);

// Index of a subshape inside nested tuples ({} is the shape itself).
using ShapeIndex = std::vector<int64_t>;

class Shape {
 public:
  // An empty tuple.
  Shape();
  static Shape Array(xla::PrimitiveType type, std::vector<int64_t> dimensions);
  static Shape Scalar(xla::PrimitiveType type) { return Array(type, {}); }
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Token();

  // Validates: known element type, non-negative dimensions, tuples nested
  // properly. Layouts are ignored. INVALID_ARGUMENT names what is wrong.
  // Tuples nest at most kMaxNesting deep (INVALID_ARGUMENT beyond): a
  // hostile proto must not exhaust the stack of the code that walks shapes.
  static constexpr int kMaxNesting = 256;
  static absl::StatusOr<Shape> FromProto(const xla::ShapeProto& proto);
  // With a dense row-major layout ({rank-1,...,0}) on arrays.
  xla::ShapeProto ToProto() const;

  xla::PrimitiveType element_type() const { return element_type_; }
  bool IsArray() const;
  bool IsTuple() const { return element_type_ == xla::TUPLE; }
  bool IsToken() const { return element_type_ == xla::TOKEN; }

  // Arrays only.
  int64_t rank() const { return static_cast<int64_t>(dimensions_.size()); }
  const std::vector<int64_t>& dimensions() const { return dimensions_; }
  int64_t dimensions(int64_t i) const { return dimensions_[i]; }
  int64_t element_count() const;  // product of dimensions; 1 for scalars

  // Tuples only.
  const std::vector<Shape>& tuple_shapes() const { return tuple_shapes_; }
  int64_t tuple_size() const {
    return static_cast<int64_t>(tuple_shapes_.size());
  }

  // Bytes in the driver's layout: element_count * ByteWidth for arrays,
  // 8 * tuple_size for tuples (a pointer table), 0 for tokens.
  int64_t ByteSize() const;

  // The subshape at `index`; REQUIRES: index is valid for this shape.
  const Shape& Subshape(const ShapeIndex& index) const;

  // Calls `fn` on every array or token leaf, in order, with its index.
  void ForEachLeaf(
      const std::function<void(const Shape& leaf, const ShapeIndex& index)>& fn)
      const;
  // The array/token leaves in order (a non-tuple shape is its own only leaf).
  std::vector<Shape> Leaves() const;

  // "f32[2,3]", "pred[]", "(f32[2], s32[])", "token[]".
  std::string ToString() const;

  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }

 private:
  xla::PrimitiveType element_type_;
  std::vector<int64_t> dimensions_;
  std::vector<Shape> tuple_shapes_;
};

}  // namespace tpu

#endif  // SOFTWARE_TPU_HLO_SHAPE_H_
