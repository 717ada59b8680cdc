// Shapes, layouts and program shapes as XLA prints them.

#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hlo/text/hlo_text_util.h"
#include "hlo/text/printer_internal.h"

namespace tpu::hlo::text_internal {
namespace {

// D(D,C+,S~,H): level types with '+' for not unique, '~' for not ordered.
void AppendDimLevelTypes(const xla::LayoutProto& layout, std::string* out) {
  *out += "D(";
  for (int i = 0; i < layout.dim_level_types_size(); ++i) {
    if (i > 0) *out += ",";
    switch (layout.dim_level_types(i)) {
      case xla::DIM_COMPRESSED:
        *out += "C";
        break;
      case xla::DIM_SINGLETON:
        *out += "S";
        break;
      case xla::DIM_LOOSE_COMPRESSED:
        *out += "H";
        break;
      default:
        *out += "D";
        break;
    }
    if (i < layout.dim_unique_size() && !layout.dim_unique(i)) *out += "+";
    if (i < layout.dim_ordered_size() && !layout.dim_ordered(i)) *out += "~";
  }
  *out += ")";
}

// T(8,128)(2,1); '*' for a combined dimension.
void AppendTiles(const xla::LayoutProto& layout, std::string* out) {
  *out += "T";
  for (const xla::TileProto& tile : layout.tiles()) {
    *out += "(";
    for (int i = 0; i < tile.dimensions_size(); ++i) {
      if (i > 0) *out += ",";
      const int64_t d = tile.dimensions(i);
      if (d == std::numeric_limits<int64_t>::min()) {
        *out += "*";
      } else {
        absl::StrAppend(out, d);
      }
    }
    *out += ")";
  }
}

// Everything after ':' in a layout, in XLA's order; empty if nothing.
std::string LayoutExtras(const xla::LayoutProto& layout) {
  std::string extras;
  if (layout.dim_level_types_size() > 0) AppendDimLevelTypes(layout, &extras);
  if (layout.tiles_size() > 0) AppendTiles(layout, &extras);
  if (layout.tail_padding_alignment_in_elements() != 0 &&
      layout.tail_padding_alignment_in_elements() != 1) {
    absl::StrAppend(&extras, "L(", layout.tail_padding_alignment_in_elements(),
                    ")");
  }
  if (layout.index_primitive_type() != xla::PRIMITIVE_TYPE_INVALID) {
    absl::StrAppend(&extras, "#(",
                    PrimitiveTypeName(layout.index_primitive_type()), ")");
  }
  if (layout.pointer_primitive_type() != xla::PRIMITIVE_TYPE_INVALID) {
    absl::StrAppend(&extras, "*(",
                    PrimitiveTypeName(layout.pointer_primitive_type()), ")");
  }
  if (layout.element_size_in_bits() != 0) {
    absl::StrAppend(&extras, "E(", layout.element_size_in_bits(), ")");
  }
  if (layout.memory_space() != 0) {
    absl::StrAppend(&extras, "S(", layout.memory_space(), ")");
  }
  for (const xla::SplitConfigProto& split : layout.split_configs()) {
    absl::StrAppend(&extras, "SC(", split.dimension(), ":",
                    absl::StrJoin(split.split_indices(), ","), ")");
  }
  if (layout.has_physical_shape()) {
    extras += "P(";
    AppendShape(layout.physical_shape(), true, &extras);
    extras += ")";
  }
  if (layout.dynamic_shape_metadata_prefix_bytes() != 0) {
    absl::StrAppend(&extras, "M(", layout.dynamic_shape_metadata_prefix_bytes(),
                    ")");
  }
  return extras;
}

void AppendLayout(const xla::LayoutProto& layout, int rank, std::string* out) {
  const std::string extras = LayoutExtras(layout);
  if (rank == 0 && extras.empty()) return;
  absl::StrAppend(out, "{", absl::StrJoin(layout.minor_to_major(), ","));
  if (!extras.empty()) absl::StrAppend(out, ":", extras);
  out->push_back('}');
}

}  // namespace

void AppendShape(const xla::ShapeProto& shape, bool print_layout,
                 std::string* out) {
  const xla::PrimitiveType type = shape.element_type();
  if (type == xla::TUPLE) {
    out->push_back('(');
    for (int i = 0; i < shape.tuple_shapes_size(); ++i) {
      if (i > 0) out->append(", ");
      AppendShape(shape.tuple_shapes(i), print_layout, out);
    }
    out->push_back(')');
    return;
  }
  absl::StrAppend(out, PrimitiveTypeName(type), "[");
  for (int i = 0; i < shape.dimensions_size(); ++i) {
    if (i > 0) out->push_back(',');
    const bool dynamic =
        i < shape.is_dynamic_dimension_size() && shape.is_dynamic_dimension(i);
    const int64_t d = shape.dimensions(i);
    if (d == std::numeric_limits<int64_t>::min()) {
      out->push_back('?');
    } else {
      if (dynamic) out->append("<=");
      absl::StrAppend(out, d);
    }
  }
  out->push_back(']');
  if (print_layout && IsArrayType(type) && shape.has_layout()) {
    AppendLayout(shape.layout(), shape.dimensions_size(), out);
  }
}

std::string ProgramShapeText(const xla::ProgramShapeProto& shape) {
  std::string out = "(";
  for (int i = 0; i < shape.parameters_size(); ++i) {
    if (i > 0) out += ", ";
    AppendShape(shape.parameters(i), true, &out);
  }
  out += ")->";
  AppendShape(shape.result(), true, &out);
  return out;
}

}  // namespace tpu::hlo::text_internal
