// Helpers shared by the HLO text parser and printer: primitive type names,
// default layouts, element counts and conversions between floating-point
// formats (f16, bf16, the 8-bit and 4-bit minifloats) and float/double.
//
// Everything here is a pure function; thread-safe.

#ifndef HLO_TEXT_HLO_TEXT_UTIL_H_
#define HLO_TEXT_HLO_TEXT_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/xla_data.pb.h"

namespace tpu::hlo::text_internal {

// Parses XLA's lower-case type name ("f32", "pred", "token", "opaque", ...).
// Returns false for unknown names. "tuple" is not a type name in HLO text.
bool PrimitiveTypeFromName(absl::string_view name, xla::PrimitiveType* type);

// The lower-case name XLA prints for `type` ("f32", "opaque", ...).
absl::string_view PrimitiveTypeName(xla::PrimitiveType type);

// True for types whose shapes have dimensions (everything except TUPLE,
// TOKEN, OPAQUE_TYPE, BUFFER and INVALID).
bool IsArrayType(xla::PrimitiveType type);
bool IsComplexType(xla::PrimitiveType type);
// IEEE and minifloat real types (not complex).
bool IsFloatType(xla::PrimitiveType type);
bool IsSignedIntType(xla::PrimitiveType type);
bool IsUnsignedIntType(xla::PrimitiveType type);
// The 8-bit and 4-bit float types stored one per byte.
bool IsMiniFloatType(xla::PrimitiveType type);
// Bit width of signed/unsigned integer types; 0 for others.
int IntBitWidth(xla::PrimitiveType type);
// Bit width of any array type (pred 1, c64 64, the 4-bit types 4); 0 for
// tuple, token and invalid types.
int TypeBitWidth(xla::PrimitiveType type);

// The comparison type XLA gives a compare of operands of `type` when the
// text has no type= ("FLOAT", "SIGNED" or "UNSIGNED").
absl::string_view DefaultComparisonType(xla::PrimitiveType type);

// Number of elements of an array shape (1 for scalars).
int64_t ElementCount(const xla::ShapeProto& shape);

// Fills `layout` with the default (major-to-minor) layout for `rank`.
void SetDefaultLayout(int rank, xla::LayoutProto* layout);

// True if `shape` has a layout whose minor_to_major is not the default
// descending order (so literal data must be permuted).
bool HasNonDefaultMinorToMajor(const xla::ShapeProto& shape);

// For an array shape whose layout is not the default: the storage index of
// each logical (row-major) element index. Empty when no permutation is
// needed. Tiling is ignored (literals are stored untiled).
std::vector<int64_t> LogicalToPhysicalIndices(const xla::ShapeProto& shape);

// IEEE half and bfloat16 <-> float, round to nearest even.
uint16_t FloatToHalf(float value);
float HalfToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);
float Bf16ToFloat(uint16_t bits);

// Minifloat (F8*, F4E2M1FN) <-> double. Encoding rounds to nearest, ties to
// even; values beyond the range become infinity where the type has one, NaN
// where it has NaN but no infinity, and the largest value otherwise.
// REQUIRES: IsMiniFloatType(type).
uint8_t EncodeMiniFloat(xla::PrimitiveType type, double value);
double DecodeMiniFloat(xla::PrimitiveType type, uint8_t bits);

// Shortest decimal text that reads back to exactly `value` ("1", "0.1",
// "1e-05", "inf", "-inf", "nan", "-nan"; NaNs with a non-default payload print
// as "nan(0x<payload>)").
std::string FormatFloat(float value);
std::string FormatDouble(double value);

}  // namespace tpu::hlo::text_internal

#endif  // HLO_TEXT_HLO_TEXT_UTIL_H_
