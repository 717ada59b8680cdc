// Literal values as they stand inside constant(...): nested braces in
// row-major order whatever the layout, tuples in parentheses, complex
// numbers as (re, im).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hlo/text/hlo_text_util.h"
#include "hlo/text/literal_storage.h"
#include "hlo/text/printer_internal.h"

namespace tpu::hlo::text_internal {
namespace {

uint16_t Read16(const std::string& bytes, int64_t index) {
  return static_cast<uint16_t>(
      static_cast<uint8_t>(bytes[2 * index]) |
      (static_cast<uint8_t>(bytes[2 * index + 1]) << 8));
}

// Appends stored element `i` (a physical index).
void AppendElement(xla::PrimitiveType type, const xla::LiteralProto& literal,
                   int64_t i, std::string* out) {
  switch (type) {
    case xla::PRED:
      out->append(literal.preds(i) ? "true" : "false");
      return;
    case xla::S32:
      absl::StrAppend(out, literal.s32s(i));
      return;
    case xla::S64:
      absl::StrAppend(out, literal.s64s(i));
      return;
    case xla::U32:
      absl::StrAppend(out, literal.u32s(i));
      return;
    case xla::U64:
      absl::StrAppend(out, literal.u64s(i));
      return;
    case xla::F32:
      out->append(FormatFloat(literal.f32s(i)));
      return;
    case xla::F64:
      out->append(FormatDouble(literal.f64s(i)));
      return;
    case xla::C64:
      absl::StrAppend(out, "(", FormatFloat(literal.c64s(2 * i)), ", ",
                      FormatFloat(literal.c64s(2 * i + 1)), ")");
      return;
    case xla::C128:
      absl::StrAppend(out, "(", FormatDouble(literal.c128s(2 * i)), ", ",
                      FormatDouble(literal.c128s(2 * i + 1)), ")");
      return;
    case xla::F16:
      out->append(FormatFloat(HalfToFloat(Read16(literal.f16s(), i))));
      return;
    case xla::BF16:
      out->append(FormatFloat(Bf16ToFloat(Read16(literal.bf16s(), i))));
      return;
    case xla::S16:
      absl::StrAppend(out, static_cast<int16_t>(Read16(literal.s16s(), i)));
      return;
    case xla::U16:
      absl::StrAppend(out, Read16(literal.u16s(), i));
      return;
    default:
      break;
  }
  const std::string* bytes = BytesField(type, literal);
  const uint8_t byte = static_cast<uint8_t>((*bytes)[i]);
  if (IsMiniFloatType(type)) {
    out->append(FormatFloat(static_cast<float>(DecodeMiniFloat(type, byte))));
  } else if (IsSignedIntType(type)) {
    absl::StrAppend(out, static_cast<int>(static_cast<int8_t>(byte)));
  } else {
    absl::StrAppend(out, static_cast<int>(byte));
  }
}

// Appends the elements of dimensions dim.. as nested braces; `next` is the
// next logical (row-major) index.
void AppendNested(const xla::LiteralProto& literal,
                  const std::vector<int64_t>& to_physical, int dim,
                  int64_t* next, std::string* out) {
  const xla::ShapeProto& shape = literal.shape();
  out->push_back('{');
  for (int64_t i = 0; i < shape.dimensions(dim); ++i) {
    if (i > 0) out->append(", ");
    if (dim + 1 < shape.dimensions_size()) {
      AppendNested(literal, to_physical, dim + 1, next, out);
      continue;
    }
    const int64_t logical = (*next)++;
    AppendElement(shape.element_type(), literal,
                  to_physical.empty() ? logical : to_physical[logical], out);
  }
  out->push_back('}');
}

}  // namespace

void AppendLiteral(const xla::LiteralProto& literal, std::string* out) {
  const xla::ShapeProto& shape = literal.shape();
  const xla::PrimitiveType type = shape.element_type();
  if (type == xla::TUPLE) {
    out->push_back('(');
    for (int i = 0; i < literal.tuple_literals_size(); ++i) {
      if (i > 0) out->append(", ");
      AppendLiteral(literal.tuple_literals(i), out);
    }
    out->push_back(')');
    return;
  }
  if (!IsArrayType(type)) return;
  if (StoredElementCount(type, literal) != ElementCount(shape)) {
    out->append("{...}");  // Inconsistent literal: print it as elided.
    return;
  }
  const std::vector<int64_t> to_physical = LogicalToPhysicalIndices(shape);
  if (shape.dimensions_size() == 0) {
    AppendElement(type, literal, to_physical.empty() ? 0 : to_physical[0], out);
    return;
  }
  int64_t next = 0;
  AppendNested(literal, to_physical, 0, &next, out);
}

}  // namespace tpu::hlo::text_internal
