#include "hlo/text/hlo_printer.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "hlo/text/hlo_text_util.h"

namespace tpu::hlo {
namespace {

using namespace text_internal;  // NOLINT

template <typename Container>
std::string IntList(const Container& values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}

std::string Quoted(absl::string_view s) {
  return absl::StrCat("\"", absl::CEscape(s), "\"");
}

void AppendShape(const xla::ShapeProto& shape, bool print_layout,
                 std::string* out);

void AppendLayout(const xla::LayoutProto& layout, int rank, std::string* out) {
  std::string extras;
  if (layout.dim_level_types_size() > 0) {
    extras += "D(";
    for (int i = 0; i < layout.dim_level_types_size(); ++i) {
      if (i > 0) extras += ",";
      switch (layout.dim_level_types(i)) {
        case xla::DIM_COMPRESSED:
          extras += "C";
          break;
        case xla::DIM_SINGLETON:
          extras += "S";
          break;
        case xla::DIM_LOOSE_COMPRESSED:
          extras += "H";
          break;
        default:
          extras += "D";
          break;
      }
      if (i < layout.dim_unique_size() && !layout.dim_unique(i)) extras += "+";
      if (i < layout.dim_ordered_size() && !layout.dim_ordered(i))
        extras += "~";
    }
    extras += ")";
  }
  if (layout.tiles_size() > 0) {
    extras += "T";
    for (const xla::TileProto& tile : layout.tiles()) {
      extras += "(";
      for (int i = 0; i < tile.dimensions_size(); ++i) {
        if (i > 0) extras += ",";
        const int64_t d = tile.dimensions(i);
        if (d == std::numeric_limits<int64_t>::min()) {
          extras += "*";
        } else {
          absl::StrAppend(&extras, d);
        }
      }
      extras += ")";
    }
  }
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
  if (rank == 0 && extras.empty()) return;
  absl::StrAppend(out, "{", absl::StrJoin(layout.minor_to_major(), ","));
  if (!extras.empty()) absl::StrAppend(out, ":", extras);
  out->push_back('}');
}

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

// --- Literals
// -----------------------------------------------------------------

uint16_t Read16(const std::string& bytes, int64_t index) {
  return static_cast<uint16_t>(
      static_cast<uint8_t>(bytes[2 * index]) |
      (static_cast<uint8_t>(bytes[2 * index + 1]) << 8));
}

const std::string* BytesFieldOf(xla::PrimitiveType type,
                                const xla::LiteralProto& literal) {
  switch (type) {
    case xla::S1:
      return &literal.s1s();
    case xla::S2:
      return &literal.s2s();
    case xla::S4:
      return &literal.s4s();
    case xla::S8:
      return &literal.s8s();
    case xla::U1:
      return &literal.u1s();
    case xla::U2:
      return &literal.u2s();
    case xla::U4:
      return &literal.u4s();
    case xla::U8:
      return &literal.u8s();
    case xla::S16:
      return &literal.s16s();
    case xla::U16:
      return &literal.u16s();
    case xla::F16:
      return &literal.f16s();
    case xla::BF16:
      return &literal.bf16s();
    case xla::F8E5M2:
      return &literal.f8e5m2s();
    case xla::F8E4M3:
      return &literal.f8e4m3s();
    case xla::F8E4M3FN:
      return &literal.f8e4m3fns();
    case xla::F8E4M3B11FNUZ:
      return &literal.f8e4m3b11fnuzs();
    case xla::F8E3M4:
      return &literal.f8e3m4s();
    case xla::F8E5M2FNUZ:
      return &literal.f8e5m2fnuzs();
    case xla::F8E4M3FNUZ:
      return &literal.f8e4m3fnuzs();
    case xla::F4E2M1FN:
      return &literal.f4e2m1fns();
    case xla::F8E8M0FNU:
      return &literal.f8e8m0fnus();
    default:
      return nullptr;
  }
}

// Number of stored elements of the field for `type`.
int64_t StoredCount(xla::PrimitiveType type, const xla::LiteralProto& literal) {
  switch (type) {
    case xla::PRED:
      return literal.preds_size();
    case xla::S32:
      return literal.s32s_size();
    case xla::S64:
      return literal.s64s_size();
    case xla::U32:
      return literal.u32s_size();
    case xla::U64:
      return literal.u64s_size();
    case xla::F32:
      return literal.f32s_size();
    case xla::F64:
      return literal.f64s_size();
    case xla::C64:
      return literal.c64s_size() / 2;
    case xla::C128:
      return literal.c128s_size() / 2;
    case xla::S16:
    case xla::U16:
    case xla::F16:
    case xla::BF16:
      return static_cast<int64_t>(BytesFieldOf(type, literal)->size()) / 2;
    default: {
      const std::string* bytes = BytesFieldOf(type, literal);
      return bytes == nullptr ? 0 : static_cast<int64_t>(bytes->size());
    }
  }
}

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
  const std::string* bytes = BytesFieldOf(type, literal);
  const uint8_t byte = static_cast<uint8_t>((*bytes)[i]);
  if (IsMiniFloatType(type)) {
    out->append(FormatFloat(static_cast<float>(DecodeMiniFloat(type, byte))));
  } else if (IsSignedIntType(type)) {
    absl::StrAppend(out, static_cast<int>(static_cast<int8_t>(byte)));
  } else {
    absl::StrAppend(out, static_cast<int>(byte));
  }
}

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
  const int64_t count = ElementCount(shape);
  if (StoredCount(type, literal) != count) {
    out->append("{...}");  // Inconsistent literal: print it as elided.
    return;
  }
  const std::vector<int64_t> to_physical = LogicalToPhysicalIndices(shape);
  auto element = [&](int64_t logical) {
    AppendElement(type, literal,
                  to_physical.empty() ? logical : to_physical[logical], out);
  };
  const int rank = shape.dimensions_size();
  if (rank == 0) {
    element(0);
    return;
  }
  int64_t next = 0;
  std::function<void(int)> nested = [&](int dim) {
    out->push_back('{');
    for (int64_t i = 0; i < shape.dimensions(dim); ++i) {
      if (i > 0) out->append(", ");
      if (dim + 1 == rank) {
        element(next++);
      } else {
        nested(dim + 1);
      }
    }
    out->push_back('}');
  };
  nested(0);
}

// --- Attributes
// -----------------------------------------------------------------

std::string PrintMetadata(const xla::OpMetadata& m) {
  std::vector<std::string> parts;
  if (!m.op_type().empty())
    parts.push_back(absl::StrCat("op_type=", Quoted(m.op_type())));
  if (!m.op_name().empty())
    parts.push_back(absl::StrCat("op_name=", Quoted(m.op_name())));
  if (!m.source_file().empty()) {
    parts.push_back(absl::StrCat("source_file=", Quoted(m.source_file())));
  }
  if (m.source_line() != 0)
    parts.push_back(absl::StrCat("source_line=", m.source_line()));
  if (m.source_end_line() != 0) {
    parts.push_back(absl::StrCat("source_end_line=", m.source_end_line()));
  }
  if (m.source_column() != 0) {
    parts.push_back(absl::StrCat("source_column=", m.source_column()));
  }
  if (m.source_end_column() != 0) {
    parts.push_back(absl::StrCat("source_end_column=", m.source_end_column()));
  }
  if (m.profile_type_size() > 0) {
    std::vector<std::string> types;
    for (int t : m.profile_type()) {
      types.push_back(xla::ProfileType_Name(static_cast<xla::ProfileType>(t)));
    }
    parts.push_back(
        absl::StrCat("profile_type={", absl::StrJoin(types, ","), "}"));
  }
  if (m.creation_pass_id() != 0) {
    parts.push_back(absl::StrCat("creation_pass_id=", m.creation_pass_id()));
  }
  if (m.logical_creation_pass_id() != 0) {
    parts.push_back(absl::StrCat("logical_creation_pass_id=",
                                 m.logical_creation_pass_id()));
  }
  if (m.size_of_generated_code_in_bytes() != 0) {
    parts.push_back(absl::StrCat("size_of_generated_code_in_bytes=",
                                 m.size_of_generated_code_in_bytes()));
  }
  if (m.size_of_memory_working_set_in_bytes() != 0) {
    parts.push_back(absl::StrCat("size_of_memory_working_set_in_bytes=",
                                 m.size_of_memory_working_set_in_bytes()));
  }
  if (!m.deduplicated_name().empty()) {
    parts.push_back(
        absl::StrCat("deduplicated_name=", Quoted(m.deduplicated_name())));
  }
  if (m.stack_frame_id() != 0) {
    parts.push_back(absl::StrCat("stack_frame_id=", m.stack_frame_id()));
  }
  if (!m.scheduling_name().empty()) {
    parts.push_back(
        absl::StrCat("scheduling_name=", Quoted(m.scheduling_name())));
  }
  return absl::StrCat("{", absl::StrJoin(parts, " "), "}");
}

absl::string_view SubgroupName(int type) {
  switch (type) {
    case xla::OpSharding::MANUAL:
      return "manual";
    case xla::OpSharding::UNREDUCED:
      return "unreduced";
    case xla::OpSharding::MAXIMAL:
      return "maximal";
    default:
      return "replicated";
  }
}

std::string PrintSharding(const xla::OpSharding& s) {
  if (s.type() == xla::OpSharding::TUPLE) {
    std::vector<std::string> parts;
    for (const auto& element : s.tuple_shardings())
      parts.push_back(PrintSharding(element));
    return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
  }
  std::string out = "{";
  switch (s.type()) {
    case xla::OpSharding::REPLICATED:
      out += "replicated";
      break;
    case xla::OpSharding::MANUAL:
      out += "manual";
      break;
    case xla::OpSharding::UNKNOWN:
      out += "unknown";
      break;
    case xla::OpSharding::UNREDUCED:
      out += "unreduced";
      break;
    case xla::OpSharding::MAXIMAL:
      absl::StrAppend(&out, "maximal device=",
                      s.tile_assignment_devices_size() > 0
                          ? s.tile_assignment_devices(0)
                          : 0);
      break;
    default: {
      absl::StrAppend(&out, "devices=[",
                      absl::StrJoin(s.tile_assignment_dimensions(), ","), "]");
      if (s.iota_reshape_dims_size() > 0) {
        absl::StrAppend(&out, "<=[", absl::StrJoin(s.iota_reshape_dims(), ","),
                        "]");
        bool identity = true;
        for (int i = 0; i < s.iota_transpose_perm_size(); ++i) {
          identity &= s.iota_transpose_perm(i) == i;
        }
        if (!identity) {
          absl::StrAppend(&out, "T(",
                          absl::StrJoin(s.iota_transpose_perm(), ","), ")");
        }
      } else {
        absl::StrAppend(&out, absl::StrJoin(s.tile_assignment_devices(), ","));
      }
      if (s.replicate_on_last_tile_dim()) out += " last_tile_dim_replicate";
      if (s.last_tile_dims_size() > 0) {
        std::vector<absl::string_view> names;
        for (int t : s.last_tile_dims()) names.push_back(SubgroupName(t));
        absl::StrAppend(&out, " last_tile_dims={", absl::StrJoin(names, ", "),
                        "}");
      }
    }
  }
  if (s.is_shard_group()) {
    absl::StrAppend(&out,
                    s.shard_group_type() == xla::OpSharding::AS
                        ? " shard_as "
                        : " shard_like ",
                    s.shard_group_id());
  }
  if (s.metadata_size() == 1) {
    absl::StrAppend(&out, " metadata=", PrintMetadata(s.metadata(0)));
  } else if (s.metadata_size() > 1) {
    std::vector<std::string> parts;
    for (const auto& m : s.metadata()) parts.push_back(PrintMetadata(m));
    absl::StrAppend(&out, " metadata={", absl::StrJoin(parts, ", "), "}");
  }
  out += "}";
  return out;
}

std::string PrintFrontendAttributes(const xla::FrontendAttributes& attributes) {
  std::vector<std::pair<std::string, std::string>> sorted(
      attributes.map().begin(), attributes.map().end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> parts;
  for (const auto& [key, value] : sorted) {
    bool plain = !key.empty();
    for (char c : key) plain &= absl::ascii_isalnum(c) || c == '_' || c == '.';
    parts.push_back(
        absl::StrCat(plain ? key : Quoted(key), "=", Quoted(value)));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

std::string PrintWindow(const xla::Window& window) {
  std::vector<std::string> parts;
  auto join = [&](auto get) {
    std::vector<std::string> values;
    for (const auto& d : window.dimensions()) values.push_back(get(d));
    return absl::StrJoin(values, "x");
  };
  auto any = [&](auto pred) {
    for (const auto& d : window.dimensions()) {
      if (pred(d)) return true;
    }
    return false;
  };
  using Dim = xla::WindowDimension;
  if (window.dimensions_size() > 0) {
    parts.push_back("size=" +
                    join([](const Dim& d) { return absl::StrCat(d.size()); }));
  }
  if (any([](const Dim& d) { return d.stride() != 1; })) {
    parts.push_back("stride=" + join([](const Dim& d) {
                      return absl::StrCat(d.stride());
                    }));
  }
  if (any([](const Dim& d) {
        return d.padding_low() != 0 || d.padding_high() != 0;
      })) {
    parts.push_back("pad=" + join([](const Dim& d) {
                      return absl::StrCat(d.padding_low(), "_",
                                          d.padding_high());
                    }));
  }
  if (any([](const Dim& d) { return d.base_dilation() != 1; })) {
    parts.push_back("lhs_dilate=" + join([](const Dim& d) {
                      return absl::StrCat(d.base_dilation());
                    }));
  }
  if (any([](const Dim& d) { return d.window_dilation() != 1; })) {
    parts.push_back("rhs_dilate=" + join([](const Dim& d) {
                      return absl::StrCat(d.window_dilation());
                    }));
  }
  if (any([](const Dim& d) { return d.window_reversal(); })) {
    parts.push_back("rhs_reversal=" + join([](const Dim& d) {
                      return std::string(d.window_reversal() ? "1" : "0");
                    }));
  }
  return absl::StrCat("{", absl::StrJoin(parts, " "), "}");
}

std::string PrintDimLabels(const xla::ConvolutionDimensionNumbers& d) {
  auto labels = [](int64_t a, char ca, int64_t b, char cb,
                   const google::protobuf::RepeatedField<int64_t>& spatial) {
    const int rank = 2 + spatial.size();
    std::string s(rank, '?');
    if (a >= 0 && a < rank) s[a] = ca;
    if (b >= 0 && b < rank) s[b] = cb;
    for (int i = 0; i < spatial.size(); ++i) {
      if (spatial[i] >= 0 && spatial[i] < rank)
        s[spatial[i]] = static_cast<char>('0' + i);
    }
    return s;
  };
  return absl::StrCat(
      labels(d.input_batch_dimension(), 'b', d.input_feature_dimension(), 'f',
             d.input_spatial_dimensions()),
      "_",
      labels(d.kernel_input_feature_dimension(), 'i',
             d.kernel_output_feature_dimension(), 'o',
             d.kernel_spatial_dimensions()),
      "->",
      labels(d.output_batch_dimension(), 'b', d.output_feature_dimension(), 'f',
             d.output_spatial_dimensions()));
}

std::string PrintReplicaGroups(
    const google::protobuf::RepeatedPtrField<xla::ReplicaGroup>& groups) {
  std::vector<std::string> parts;
  for (const auto& g : groups) parts.push_back(IntList(g.replica_ids()));
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

std::string LowerEnumName(const std::string& name, absl::string_view prefix) {
  absl::string_view view = name;
  if (absl::StartsWith(view, prefix)) view.remove_prefix(prefix.size());
  return absl::AsciiStrToLower(view);
}

bool IsCollective(absl::string_view op) {
  return op == "all-reduce" || op == "all-reduce-start" || op == "all-gather" ||
         op == "all-gather-start" || op == "all-to-all" ||
         op == "reduce-scatter" || op == "collective-broadcast" ||
         op == "ragged-all-to-all";
}

class Printer {
 public:
  explicit Printer(const xla::HloModuleProto* module) : module_(module) {
    if (module == nullptr) return;
    for (const auto& c : module->computations()) {
      computations_[c.id()] = &c;
      for (const auto& i : c.instructions()) instructions_[i.id()] = &i;
    }
  }

  void IndexComputation(const xla::HloComputationProto& computation) {
    for (const auto& i : computation.instructions()) instructions_[i.id()] = &i;
  }

  std::string Module() const;
  void Instruction(const xla::HloInstructionProto& instruction, bool is_root,
                   std::string* out) const;

 private:
  std::string ComputationName(int64_t id) const {
    auto it = computations_.find(id);
    if (it == computations_.end()) return absl::StrCat("%computation.", id);
    return absl::StrCat("%", it->second->name());
  }
  const xla::HloInstructionProto* Find(int64_t id) const {
    auto it = instructions_.find(id);
    return it == instructions_.end() ? nullptr : it->second;
  }
  void Attributes(const xla::HloInstructionProto& instruction,
                  std::vector<std::string>* attrs) const;

  const xla::HloModuleProto* module_;
  absl::flat_hash_map<int64_t, const xla::HloComputationProto*> computations_;
  absl::flat_hash_map<int64_t, const xla::HloInstructionProto*> instructions_;
};

void Printer::Instruction(const xla::HloInstructionProto& instruction,
                          bool is_root, std::string* out) const {
  if (is_root) out->append("ROOT ");
  absl::StrAppend(out, "%", instruction.name(), " = ");
  AppendShape(instruction.shape(), true, out);
  absl::StrAppend(out, " ", instruction.opcode(), "(");
  const std::string& op = instruction.opcode();
  if (op == "constant") {
    if (instruction.has_literal()) AppendLiteral(instruction.literal(), out);
  } else if (op == "parameter") {
    absl::StrAppend(out, instruction.parameter_number());
  } else {
    for (int i = 0; i < instruction.operand_ids_size(); ++i) {
      if (i > 0) out->append(", ");
      if (i > 0 && i % 5 == 0) absl::StrAppend(out, "/*index=", i, "*/");
      const xla::HloInstructionProto* operand =
          Find(instruction.operand_ids(i));
      if (operand == nullptr) {
        absl::StrAppend(out, "%unknown.", instruction.operand_ids(i));
        continue;
      }
      AppendShape(operand->shape(), true, out);
      absl::StrAppend(out, " %", operand->name());
    }
  }
  out->push_back(')');
  std::vector<std::string> attrs;
  Attributes(instruction, &attrs);
  for (const std::string& a : attrs) absl::StrAppend(out, ", ", a);
}

void Printer::Attributes(const xla::HloInstructionProto& in,
                         std::vector<std::string>* attrs) const {
  const std::string& op = in.opcode();
  auto add = [&](auto&&... parts) { attrs->push_back(absl::StrCat(parts...)); };
  // Shape-related and opcode-specific attributes.
  if (op == "iota") {
    if (in.dimensions_size() > 0) add("iota_dimension=", in.dimensions(0));
  } else if (op == "broadcast" || op == "concatenate" || op == "reduce" ||
             op == "reverse" || op == "transpose" || op == "sort" ||
             in.dimensions_size() > 0) {
    add("dimensions=", IntList(in.dimensions()));
  }
  if (op == "get-tuple-element") add("index=", in.tuple_index());
  if (in.slice_dimensions_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& s : in.slice_dimensions()) {
      parts.push_back(s.stride() == 1
                          ? absl::StrCat("[", s.start(), ":", s.limit(), "]")
                          : absl::StrCat("[", s.start(), ":", s.limit(), ":",
                                         s.stride(), "]"));
    }
    add("slice={", absl::StrJoin(parts, ", "), "}");
  }
  if (in.dynamic_slice_sizes_size() > 0) {
    add("dynamic_slice_sizes=", IntList(in.dynamic_slice_sizes()));
  }
  if (in.has_padding_config()) {
    bool interior = false;
    for (const auto& d : in.padding_config().dimensions()) {
      interior |= d.interior_padding() != 0;
    }
    std::vector<std::string> parts;
    for (const auto& d : in.padding_config().dimensions()) {
      parts.push_back(
          interior
              ? absl::StrCat(d.edge_padding_low(), "_", d.edge_padding_high(),
                             "_", d.interior_padding())
              : absl::StrCat(d.edge_padding_low(), "_", d.edge_padding_high()));
    }
    add("padding=", absl::StrJoin(parts, "x"));
  }
  if (in.has_window()) add("window=", PrintWindow(in.window()));
  if (in.has_convolution_dimension_numbers()) {
    add("dim_labels=", PrintDimLabels(in.convolution_dimension_numbers()));
  }
  if (in.feature_group_count() != 0 && in.feature_group_count() != 1) {
    add("feature_group_count=", in.feature_group_count());
  }
  if (in.batch_group_count() != 0 && in.batch_group_count() != 1) {
    add("batch_group_count=", in.batch_group_count());
  }
  auto dot_dims = [&](const xla::DotDimensionNumbers& d) {
    if (d.lhs_batch_dimensions_size() > 0) {
      add("lhs_batch_dims=", IntList(d.lhs_batch_dimensions()));
    }
    if (d.lhs_contracting_dimensions_size() > 0) {
      add("lhs_contracting_dims=", IntList(d.lhs_contracting_dimensions()));
    }
    if (d.rhs_batch_dimensions_size() > 0) {
      add("rhs_batch_dims=", IntList(d.rhs_batch_dimensions()));
    }
    if (d.rhs_contracting_dimensions_size() > 0) {
      add("rhs_contracting_dims=", IntList(d.rhs_contracting_dimensions()));
    }
  };
  if (in.has_dot_dimension_numbers()) dot_dims(in.dot_dimension_numbers());
  if (in.has_ragged_dot_dimension_numbers()) {
    const auto& r = in.ragged_dot_dimension_numbers();
    dot_dims(r.dot_dimension_numbers());
    if (r.lhs_ragged_dimensions_size() > 0) {
      add("lhs_ragged_dims=", IntList(r.lhs_ragged_dimensions()));
    }
    if (r.rhs_group_dimensions_size() > 0) {
      add("rhs_group_dims=", IntList(r.rhs_group_dimensions()));
    }
  }
  if (in.dot_sparsity_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& s : in.dot_sparsity()) {
      parts.push_back(absl::StrCat(s.index() == 0 ? "L." : "R.", s.dimension(),
                                   "@", s.n(), ":", s.m()));
    }
    add("sparsity=", absl::StrJoin(parts, "_"));
  }
  if (in.has_precision_config()) {
    const auto& pc = in.precision_config();
    bool non_default = false;
    for (int p : pc.operand_precision()) non_default |= p != 0;
    if (non_default) {
      std::vector<std::string> names;
      for (int p : pc.operand_precision()) {
        names.push_back(
            LowerEnumName(xla::PrecisionConfig::Precision_Name(
                              static_cast<xla::PrecisionConfig::Precision>(p)),
                          ""));
      }
      add("operand_precision={", absl::StrJoin(names, ","), "}");
    }
    if (pc.algorithm() != xla::PrecisionConfig::ALG_UNSET) {
      add("algorithm=",
          LowerEnumName(xla::PrecisionConfig::Algorithm_Name(pc.algorithm()),
                        "ALG_"));
    }
  }
  if (in.has_gather_dimension_numbers()) {
    const auto& g = in.gather_dimension_numbers();
    add("offset_dims=", IntList(g.offset_dims()));
    add("collapsed_slice_dims=", IntList(g.collapsed_slice_dims()));
    add("start_index_map=", IntList(g.start_index_map()));
    if (g.operand_batching_dims_size() > 0) {
      add("operand_batching_dims=", IntList(g.operand_batching_dims()));
    }
    if (g.start_indices_batching_dims_size() > 0) {
      add("start_indices_batching_dims=",
          IntList(g.start_indices_batching_dims()));
    }
    add("index_vector_dim=", g.index_vector_dim());
  }
  if (in.gather_slice_sizes_size() > 0 || op == "gather") {
    add("slice_sizes=", IntList(in.gather_slice_sizes()));
  }
  if (in.has_scatter_dimension_numbers()) {
    const auto& s = in.scatter_dimension_numbers();
    add("update_window_dims=", IntList(s.update_window_dims()));
    add("inserted_window_dims=", IntList(s.inserted_window_dims()));
    add("scatter_dims_to_operand_dims=",
        IntList(s.scatter_dims_to_operand_dims()));
    if (s.input_batching_dims_size() > 0) {
      add("input_batching_dims=", IntList(s.input_batching_dims()));
    }
    if (s.scatter_indices_batching_dims_size() > 0) {
      add("scatter_indices_batching_dims=",
          IntList(s.scatter_indices_batching_dims()));
    }
    add("index_vector_dim=", s.index_vector_dim());
  }
  if (in.indices_are_sorted()) add("indices_are_sorted=true");
  if (in.unique_indices()) add("unique_indices=true");
  if (!in.comparison_direction().empty()) {
    add("direction=", in.comparison_direction());
  }
  if (!in.comparison_type().empty()) {
    // Print the type only when it differs from the operand type's default.
    std::string default_type;
    if (in.operand_ids_size() > 0) {
      if (const auto* operand = Find(in.operand_ids(0))) {
        const xla::PrimitiveType t = operand->shape().element_type();
        default_type = IsFloatType(t) || IsComplexType(t) ? "FLOAT"
                       : IsSignedIntType(t)               ? "SIGNED"
                                                          : "UNSIGNED";
      }
    }
    if (in.comparison_type() != default_type)
      add("type=", in.comparison_type());
  }
  if (IsCollective(op) || in.replica_groups_size() > 0) {
    add("replica_groups=", PrintReplicaGroups(in.replica_groups()));
  }
  if (in.channel_id() > 0) add("channel_id=", in.channel_id());
  if (in.use_global_device_ids()) add("use_global_device_ids=true");
  if (in.constrain_layout() && op != "custom-call")
    add("constrain_layout=true");
  if (in.source_target_pairs_size() > 0 || op == "collective-permute" ||
      op == "collective-permute-start") {
    std::vector<std::string> parts;
    for (const auto& p : in.source_target_pairs()) {
      parts.push_back(absl::StrCat("{", p.source(), ",", p.target(), "}"));
    }
    add("source_target_pairs={", absl::StrJoin(parts, ","), "}");
  }
  if (op == "rng") {
    add("distribution=",
        LowerEnumName(xla::RandomDistribution_Name(in.distribution()), ""));
  }
  if (op == "rng-bit-generator") {
    add("algorithm=",
        LowerEnumName(xla::RandomAlgorithm_Name(in.rng_algorithm()), ""));
  }
  if (in.delta() != 0) add("delta=", in.delta());
  if (op == "fft") {
    add("fft_type=", xla::FftType_Name(in.fft_type()));
    add("fft_length=", IntList(in.fft_length()));
  }
  if (op == "reduce-precision") {
    add("exponent_bits=", in.exponent_bits());
    add("mantissa_bits=", in.mantissa_bits());
  }
  if (absl::StartsWith(op, "batch-norm")) {
    add("epsilon=", FormatFloat(in.epsilon()));
    add("feature_index=", in.feature_index());
  }
  if (!in.fusion_kind().empty()) add("kind=", in.fusion_kind());
  if (in.is_host_transfer()) add("is_host_transfer=true");
  if (!in.infeed_config().empty())
    add("infeed_config=", Quoted(in.infeed_config()));
  if (!in.outfeed_config().empty())
    add("outfeed_config=", Quoted(in.outfeed_config()));
  if (in.has_outfeed_shape()) {
    std::string shape;
    AppendShape(in.outfeed_shape(), true, &shape);
    add("outfeed_shape=", shape);
  }
  if (op == "custom-call") {
    add("custom_call_target=", Quoted(in.custom_call_target()));
    if (in.custom_call_has_side_effect())
      add("custom_call_has_side_effect=true");
    if (in.custom_call_api_version() != xla::API_VERSION_ORIGINAL) {
      add("api_version=",
          xla::CustomCallApiVersion_Name(in.custom_call_api_version()));
    }
    if (in.custom_call_schedule() != xla::SCHEDULE_NONE) {
      add("schedule=", xla::CustomCallSchedule_Name(in.custom_call_schedule()));
    }
    if (in.constrain_layout()) {
      std::vector<std::string> shapes;
      for (const auto& s : in.operand_shapes_with_layout()) {
        std::string text;
        AppendShape(s, true, &text);
        shapes.push_back(text);
      }
      add("operand_layout_constraints={", absl::StrJoin(shapes, ", "), "}");
    }
  }
  if (in.output_operand_aliasing_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& a : in.output_operand_aliasing()) {
      parts.push_back(absl::StrCat(IntList(a.output_shape_index()), ": (",
                                   a.operand_index(), ", ",
                                   IntList(a.operand_shape_index()), ")"));
    }
    add("output_to_operand_aliasing={", absl::StrJoin(parts, ", "), "}");
  }
  if (in.has_triangular_solve_options()) {
    const auto& t = in.triangular_solve_options();
    if (t.left_side()) add("left_side=true");
    if (t.lower()) add("lower=true");
    if (t.unit_diagonal()) add("unit_diagonal=true");
    add("transpose_a=",
        xla::TriangularSolveOptions::Transpose_Name(t.transpose_a()));
  }
  if (in.has_cholesky_options() && in.cholesky_options().lower())
    add("lower=true");
  if (in.is_stable()) add("is_stable=true");
  if (in.has_parameter_replication()) {
    std::vector<std::string> parts;
    for (bool b : in.parameter_replication().replicated_at_leaf_buffers()) {
      parts.push_back(b ? "true" : "false");
    }
    add("parameter_replication={", absl::StrJoin(parts, ","), "}");
  }
  if (op == "topk") {
    add("k=", in.k());
    add("largest=", in.largest() ? "true" : "false");
  }
  if (in.optional_cross_program_prefetch_index_case() ==
      xla::HloInstructionProto::kCrossProgramPrefetchIndex) {
    add("cross_program_prefetch_index=", in.cross_program_prefetch_index());
  }
  if (in.is_cross_program_prefetch()) add("is_cross_program_prefetch=true");
  if (in.is_composite()) add("is_composite=true");
  if (in.padding_type() != xla::PADDING_INVALID) {
    add("padding_type=", xla::PaddingType_Name(in.padding_type()));
  }
  if (op == "domain") {
    add("domain={kind=\"sharding\", entry=",
        PrintSharding(in.domain_entry_sharding()),
        ", exit=", PrintSharding(in.domain_exit_sharding()), "}");
  }
  if (in.has_result_accuracy()) {
    const auto& r = in.result_accuracy();
    if (r.has_tolerance()) {
      add("result_accuracy={tolerance={atol=",
          FormatDouble(r.tolerance().atol()),
          ",rtol=", FormatDouble(r.tolerance().rtol()),
          ",ulps=", r.tolerance().ulps(), "}}");
    } else {
      add("result_accuracy={mode=",
          LowerEnumName(xla::ResultAccuracy::Mode_Name(r.mode()), ""), "}");
    }
  }
  if (!in.async_execution_thread().empty()) {
    add("async_execution_thread=", Quoted(in.async_execution_thread()));
  }
  // Called computations, in XLA's spelling for the opcode.
  const auto& called = in.called_computation_ids();
  if (called.size() > 0) {
    if (op == "while" && called.size() == 2) {
      add("condition=", ComputationName(called[1]));
      add("body=", ComputationName(called[0]));
    } else if (op == "select-and-scatter" && called.size() == 2) {
      add("select=", ComputationName(called[0]));
      add("scatter=", ComputationName(called[1]));
    } else if (op == "conditional") {
      const xla::HloInstructionProto* predicate =
          in.operand_ids_size() > 0 ? Find(in.operand_ids(0)) : nullptr;
      if (called.size() == 2 && predicate != nullptr &&
          predicate->shape().element_type() == xla::PRED) {
        add("true_computation=", ComputationName(called[0]));
        add("false_computation=", ComputationName(called[1]));
      } else {
        std::vector<std::string> names;
        for (int64_t id : called) names.push_back(ComputationName(id));
        add("branch_computations={", absl::StrJoin(names, ", "), "}");
      }
    } else if (called.size() == 1 &&
               (op == "fusion" || absl::StartsWith(op, "async-"))) {
      add("calls=", ComputationName(called[0]));
    } else if (called.size() == 1) {
      add("to_apply=", ComputationName(called[0]));
    } else {
      std::vector<std::string> names;
      for (int64_t id : called) names.push_back(ComputationName(id));
      add("called_computations={", absl::StrJoin(names, ", "), "}");
    }
  }
  if (in.has_sharding()) add("sharding=", PrintSharding(in.sharding()));
  if (in.has_frontend_attributes() && !in.frontend_attributes().map().empty()) {
    add("frontend_attributes=",
        PrintFrontendAttributes(in.frontend_attributes()));
  }
  if (in.has_statistics_viz()) {
    std::string s = absl::StrCat("statistics={visualizing_index=",
                                 in.statistics_viz().stat_index_to_visualize());
    for (const auto& stat : in.statistics_viz().statistics()) {
      absl::StrAppend(&s, ",", stat.stat_name(), "=",
                      FormatDouble(stat.stat_val()));
    }
    s += "}";
    attrs->push_back(s);
  }
  if (in.control_predecessor_ids_size() > 0) {
    std::vector<std::string> names;
    for (int64_t id : in.control_predecessor_ids()) {
      const auto* p = Find(id);
      names.push_back(p == nullptr ? absl::StrCat("%unknown.", id)
                                   : absl::StrCat("%", p->name()));
    }
    add("control-predecessors={", absl::StrJoin(names, ", "), "}");
  }
  if (in.has_metadata()) {
    std::string m = PrintMetadata(in.metadata());
    if (m != "{}") add("metadata=", m);
  }
  if (!in.backend_config().empty()) {
    const std::string& config = in.backend_config();
    bool raw = config.front() == '{' && config.back() == '}';
    if (raw) {
      // Raw only if braces balance outside strings and nothing follows.
      int depth = 0;
      bool in_string = false;
      for (size_t i = 0; i < config.size() && raw; ++i) {
        const char c = config[i];
        if (in_string) {
          if (c == '\\') {
            ++i;
          } else if (c == '"') {
            in_string = false;
          }
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[' || c == '(') {
          ++depth;
        } else if (c == '}' || c == ']' || c == ')') {
          if (--depth == 0 && i + 1 != config.size()) raw = false;
          if (depth < 0) raw = false;
        } else if (c == '\n') {
          raw = false;
        }
      }
      raw = raw && depth == 0 && !in_string;
    }
    add("backend_config=", raw ? config : Quoted(config));
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

std::string Printer::Module() const {
  const xla::HloModuleProto& m = *module_;
  std::string out = absl::StrCat("HloModule ", m.name());
  const bool scheduled = m.has_schedule() && !m.schedule().sequences().empty();
  if (scheduled) out += ", is_scheduled=true";
  if (m.has_host_program_shape()) {
    absl::StrAppend(&out, ", entry_computation_layout={",
                    ProgramShapeText(m.host_program_shape()), "}");
  }
  if (m.has_input_output_alias() && m.input_output_alias().entries_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& e : m.input_output_alias().entries()) {
      parts.push_back(absl::StrCat(
          IntList(e.output_shape_index()), ": (", e.parameter_number(), ", ",
          IntList(e.parameter_shape_index()), ", ",
          e.kind() == xla::MUST_ALIAS ? "must-alias" : "may-alias", ")"));
    }
    absl::StrAppend(&out, ", input_output_alias={ ", absl::StrJoin(parts, ", "),
                    " }");
  }
  if (m.has_buffer_donor() && m.buffer_donor().entries_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& e : m.buffer_donor().entries()) {
      parts.push_back(absl::StrCat("(", e.parameter_number(), ", ",
                                   IntList(e.parameter_shape_index()), ")"));
    }
    absl::StrAppend(&out, ", buffer_donor={ ", absl::StrJoin(parts, ", "),
                    " }");
  }
  if (m.has_frontend_attributes() && !m.frontend_attributes().map().empty()) {
    absl::StrAppend(&out, ", frontend_attributes=",
                    PrintFrontendAttributes(m.frontend_attributes()));
  }
  if (m.has_spmd_output_sharding()) {
    absl::StrAppend(&out, ", spmd_output_sharding=",
                    PrintSharding(m.spmd_output_sharding()));
  }
  if (m.spmd_parameters_shardings_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& s : m.spmd_parameters_shardings())
      parts.push_back(PrintSharding(s));
    absl::StrAppend(&out, ", spmd_parameters_shardings={",
                    absl::StrJoin(parts, ","), "}");
  }
  out += "\n";
  for (const xla::HloComputationProto& c : m.computations()) {
    out += "\n";
    if (c.id() == m.entry_computation_id()) out += "ENTRY ";
    absl::StrAppend(&out, "%", c.name(), " ");
    // Signature (informational; the parser reads parameters from the body).
    const auto& ps = c.program_shape();
    out += "(";
    for (int i = 0; i < ps.parameters_size(); ++i) {
      if (i > 0) out += ", ";
      absl::StrAppend(&out,
                      i < ps.parameter_names_size() ? ps.parameter_names(i)
                                                    : absl::StrCat("p", i),
                      ": ");
      AppendShape(ps.parameters(i), false, &out);
    }
    out += ") -> ";
    AppendShape(ps.result(), false, &out);
    out += " {\n";
    // Scheduled modules print in schedule order.
    std::vector<const xla::HloInstructionProto*> ordered;
    if (scheduled) {
      auto it = m.schedule().sequences().find(c.id());
      if (it != m.schedule().sequences().end() &&
          it->second.instruction_ids_size() == c.instructions_size()) {
        for (int64_t id : it->second.instruction_ids()) {
          const auto* i = Find(id);
          if (i == nullptr) {
            ordered.clear();
            break;
          }
          ordered.push_back(i);
        }
      }
    }
    if (ordered.empty()) {
      for (const auto& i : c.instructions()) ordered.push_back(&i);
    }
    for (const xla::HloInstructionProto* i : ordered) {
      out += "  ";
      Instruction(*i, i->id() == c.root_id(), &out);
      out += "\n";
    }
    out += "}";
    if (!c.execution_thread().empty() && c.execution_thread() != "main") {
      absl::StrAppend(&out,
                      ", execution_thread=", Quoted(c.execution_thread()));
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string PrintHloModule(const xla::HloModuleProto& module) {
  return Printer(&module).Module();
}

std::string PrintHloInstruction(const xla::HloInstructionProto& instruction,
                                const xla::HloComputationProto& computation,
                                const xla::HloModuleProto* module) {
  Printer printer(module);
  printer.IndexComputation(computation);
  std::string out;
  printer.Instruction(instruction, false, &out);
  return out;
}

std::string PrintShape(const xla::ShapeProto& shape) {
  std::string out;
  AppendShape(shape, true, &out);
  return out;
}

std::string PrintLiteral(const xla::LiteralProto& literal) {
  std::string out;
  AppendLiteral(literal, &out);
  return out;
}

}  // namespace tpu::hlo
