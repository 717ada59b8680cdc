// Shapes ("f32[2,<=3]{1,0:T(8,128)S(1)}", tuples, tokens), their layouts
// and program shapes ("(f32[2], s32[]) -> f32[2]").

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "hlo/text/hlo_text_util.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo::text_internal {

absl::Status Parser::ParseShape(xla::ShapeProto* shape) {
  const char c = lexer_.Peek();
  if (c == '(') {
    NestingScope nesting(this);
    HLO_RETURN_IF_ERROR(nesting.status());
    lexer_.set_pos(lexer_.pos() + 1);
    shape->set_element_type(xla::TUPLE);
    if (lexer_.TryConsume(')')) return absl::OkStatus();
    while (true) {
      HLO_RETURN_IF_ERROR(ParseShape(shape->add_tuple_shapes()));
      if (lexer_.TryConsume(')')) return absl::OkStatus();
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  const size_t pos = lexer_.pos();
  absl::string_view word = lexer_.ConsumeWord();
  xla::PrimitiveType type;
  if (word.empty() || !PrimitiveTypeFromName(word, &type)) {
    lexer_.set_pos(pos);
    return ExpectedAt(pos, "shape");
  }
  shape->set_element_type(type);
  if (lexer_.PeekRaw() != '[') return Expected("'['");
  lexer_.set_pos(lexer_.pos() + 1);
  if (!IsArrayType(type)) return Expect(']');
  if (!lexer_.TryConsume(']')) {
    while (true) {
      bool dynamic = lexer_.TryConsume("<=");
      int64_t size;
      if (lexer_.TryConsume('?')) {
        size = std::numeric_limits<int64_t>::min();
        dynamic = true;
      } else {
        const size_t at = lexer_.pos();
        HLO_RETURN_IF_ERROR(ParseInt(&size));
        if (size < 0) return ErrorAt(at, "negative dimension size");
      }
      shape->add_dimensions(size);
      shape->add_is_dynamic_dimension(dynamic);
      if (lexer_.TryConsume(']')) break;
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  // A layout must follow ']' directly ("f32[2]{0}"); a '{' after a space
  // belongs to what follows the shape (e.g. an old-style literal).
  if (lexer_.PeekRaw() == '{') {
    return ParseLayout(shape->dimensions_size(), shape->mutable_layout());
  }
  SetDefaultLayout(shape->dimensions_size(), shape->mutable_layout());
  return absl::OkStatus();
}

absl::Status Parser::ParseLayout(int rank, xla::LayoutProto* layout) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  layout->set_format(xla::DENSE);
  const size_t m2m_pos = lexer_.pos();
  const char first = lexer_.Peek();
  if (first != ':' && first != '}') {
    while (true) {
      int64_t dim;
      HLO_RETURN_IF_ERROR(ParseInt(&dim));
      layout->add_minor_to_major(dim);
      if (lexer_.Peek() != ',') break;
      lexer_.set_pos(lexer_.pos() + 1);
    }
  }
  if (layout->minor_to_major_size() != rank &&
      !(layout->minor_to_major_size() == 0 && rank == 0)) {
    return ErrorAt(m2m_pos,
                   absl::StrCat("layout has ", layout->minor_to_major_size(),
                                " dimensions but the shape has rank ", rank));
  }
  // Every dimension exactly once: literals are permuted by this order, so an
  // index out of range would reach past the shape's dimensions.
  std::vector<bool> seen(rank, false);
  for (int64_t dim : layout->minor_to_major()) {
    if (dim < 0 || dim >= rank || seen[dim]) {
      return ErrorAt(
          m2m_pos,
          absl::StrCat("layout {", absl::StrJoin(layout->minor_to_major(), ","),
                       "} is not a permutation of the dimensions 0 "
                       "to ",
                       rank - 1, " of a rank-", rank, " shape"));
    }
    seen[dim] = true;
  }
  if (lexer_.TryConsume(':')) {
    while (lexer_.Peek() != '}') {
      HLO_RETURN_IF_ERROR(ParseLayoutItem(layout));
    }
  }
  return Expect('}');
}

// One item after ':' in a layout: D(...), T(...)(...), L(n), E(n), S(n),
// M(n), SC(d:i,...), #(type), *(type) or P(shape).
absl::Status Parser::ParseLayoutItem(xla::LayoutProto* layout) {
  const size_t at = lexer_.pos();
  const char c = lexer_.PeekRaw();
  const char next = lexer_.PeekRawAt(1);
  if (c == 'D' && next == '(') return ParseDimLevelTypes(layout);
  if (c == 'T' && next == '(') return ParseTiles(layout);
  if (c == 'S' && next == 'C') return ParseSplitConfig(layout);
  if ((c == 'L' || c == 'E' || c == 'S' || c == 'M') && next == '(') {
    lexer_.set_pos(at + 2);
    int64_t value;
    HLO_RETURN_IF_ERROR(ParseInt(&value));
    HLO_RETURN_IF_ERROR(Expect(')'));
    if (c == 'L') layout->set_tail_padding_alignment_in_elements(value);
    if (c == 'E') layout->set_element_size_in_bits(value);
    if (c == 'S') layout->set_memory_space(value);
    if (c == 'M') layout->set_dynamic_shape_metadata_prefix_bytes(value);
    return absl::OkStatus();
  }
  if ((c == '#' || c == '*') && next == '(') {
    lexer_.set_pos(at + 2);
    const size_t type_pos = lexer_.pos();
    xla::PrimitiveType type;
    if (!PrimitiveTypeFromName(lexer_.ConsumeWord(), &type)) {
      return ExpectedAt(type_pos, "primitive type");
    }
    HLO_RETURN_IF_ERROR(Expect(')'));
    if (c == '#') {
      layout->set_index_primitive_type(type);
    } else {
      layout->set_pointer_primitive_type(type);
    }
    return absl::OkStatus();
  }
  if (c == 'P' && next == '(') {
    lexer_.set_pos(at + 2);
    HLO_RETURN_IF_ERROR(ParseShape(layout->mutable_physical_shape()));
    return Expect(')');
  }
  return Expected("layout attribute (D, T, L, E, S, SC, M, #, *, P)");
}

// D(D,C+,S~,H): a level type per dimension; '+' marks not unique, '~' not
// ordered.
absl::Status Parser::ParseDimLevelTypes(xla::LayoutProto* layout) {
  lexer_.set_pos(lexer_.pos() + 2);
  std::vector<std::pair<bool, bool>> flags;  // (unique, ordered)
  while (!lexer_.TryConsume(')')) {
    xla::DimLevelType level;
    switch (lexer_.Peek()) {
      case 'D':
        level = xla::DIM_DENSE;
        break;
      case 'C':
        level = xla::DIM_COMPRESSED;
        break;
      case 'S':
        level = xla::DIM_SINGLETON;
        break;
      case 'H':
        level = xla::DIM_LOOSE_COMPRESSED;
        break;
      default:
        return Expected("dimension level type (D, C, S or H)");
    }
    lexer_.set_pos(lexer_.pos() + 1);
    bool unique = true, ordered = true;
    while (lexer_.PeekRaw() == '+' || lexer_.PeekRaw() == '~') {
      (lexer_.PeekRaw() == '+' ? unique : ordered) = false;
      lexer_.set_pos(lexer_.pos() + 1);
    }
    layout->add_dim_level_types(level);
    flags.emplace_back(unique, ordered);
    lexer_.TryConsume(',');
  }
  // XLA stores the flags only when one of them is not the default.
  bool any_flag = false;
  for (const auto& f : flags) any_flag |= !f.first || !f.second;
  if (any_flag) {
    for (const auto& f : flags) {
      layout->add_dim_unique(f.first);
      layout->add_dim_ordered(f.second);
    }
  }
  return absl::OkStatus();
}

// T(8,128)(2,1): one tile per group; '*' is a combined dimension.
absl::Status Parser::ParseTiles(xla::LayoutProto* layout) {
  lexer_.set_pos(lexer_.pos() + 1);
  while (lexer_.PeekRaw() == '(') {
    lexer_.set_pos(lexer_.pos() + 1);
    xla::TileProto* tile = layout->add_tiles();
    while (true) {
      if (lexer_.TryConsume('*')) {
        tile->add_dimensions(std::numeric_limits<int64_t>::min());
      } else {
        int64_t value;
        HLO_RETURN_IF_ERROR(ParseInt(&value));
        tile->add_dimensions(value);
      }
      if (lexer_.TryConsume(')')) break;
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  return absl::OkStatus();
}

// SC(dimension:index,index,...)
absl::Status Parser::ParseSplitConfig(xla::LayoutProto* layout) {
  lexer_.set_pos(lexer_.pos() + 2);
  HLO_RETURN_IF_ERROR(Expect('('));
  xla::SplitConfigProto* split = layout->add_split_configs();
  int64_t value;
  HLO_RETURN_IF_ERROR(ParseInt(&value));
  split->set_dimension(value);
  HLO_RETURN_IF_ERROR(Expect(':'));
  while (true) {
    HLO_RETURN_IF_ERROR(ParseInt(&value));
    split->add_split_indices(value);
    if (lexer_.TryConsume(')')) return absl::OkStatus();
    HLO_RETURN_IF_ERROR(Expect(','));
  }
}

absl::Status Parser::ParseSingleShape(xla::ShapeProto* shape) {
  HLO_RETURN_IF_ERROR(ParseShape(shape));
  if (!lexer_.AtEnd()) return Expected("end of input");
  return absl::OkStatus();
}

absl::Status Parser::ParseProgramShape(xla::ProgramShapeProto* program_shape) {
  HLO_RETURN_IF_ERROR(Expect('('));
  if (!lexer_.TryConsume(')')) {
    while (true) {
      HLO_RETURN_IF_ERROR(ParseShape(program_shape->add_parameters()));
      if (lexer_.TryConsume(')')) break;
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  HLO_RETURN_IF_ERROR(ExpectStr("->"));
  return ParseShape(program_shape->mutable_result());
}

}  // namespace tpu::hlo::text_internal
