// One instruction: "%name = shape opcode(operands), attributes". Attributes
// are printed by family, in the order XLA prints them, and only when they
// differ from what the parser fills in by default.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "hlo/text/hlo_text_util.h"
#include "hlo/text/printer_internal.h"

namespace tpu::hlo::text_internal {
namespace {

using Proto = xla::HloInstructionProto;

bool IsCollective(absl::string_view op) {
  return op == "all-reduce" || op == "all-reduce-start" || op == "all-gather" ||
         op == "all-gather-start" || op == "all-to-all" ||
         op == "reduce-scatter" || op == "collective-broadcast" ||
         op == "ragged-all-to-all";
}

std::string ShapeText(const xla::ShapeProto& shape) {
  std::string text;
  AppendShape(shape, true, &text);
  return text;
}

// dimensions, index, slice, dynamic_slice_sizes, padding.
void ShapeAttributes(const Proto& in, AttributeList* a) {
  const std::string& op = in.opcode();
  if (op == "iota") {
    if (in.dimensions_size() > 0) a->Add("iota_dimension=", in.dimensions(0));
  } else if (op == "broadcast" || op == "concatenate" || op == "reduce" ||
             op == "reverse" || op == "transpose" || op == "sort" ||
             in.dimensions_size() > 0) {
    a->Add("dimensions=", IntList(in.dimensions()));
  }
  if (op == "get-tuple-element") a->Add("index=", in.tuple_index());
  if (in.slice_dimensions_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& s : in.slice_dimensions()) {
      parts.push_back(s.stride() == 1
                          ? absl::StrCat("[", s.start(), ":", s.limit(), "]")
                          : absl::StrCat("[", s.start(), ":", s.limit(), ":",
                                         s.stride(), "]"));
    }
    a->Add("slice={", absl::StrJoin(parts, ", "), "}");
  }
  if (in.dynamic_slice_sizes_size() > 0) {
    a->Add("dynamic_slice_sizes=", IntList(in.dynamic_slice_sizes()));
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
    a->Add("padding=", absl::StrJoin(parts, "x"));
  }
}

void ConvolutionAttributes(const Proto& in, AttributeList* a) {
  if (in.has_window()) a->Add("window=", PrintWindow(in.window()));
  if (in.has_convolution_dimension_numbers()) {
    a->Add("dim_labels=", PrintDimLabels(in.convolution_dimension_numbers()));
  }
  if (in.feature_group_count() != 0 && in.feature_group_count() != 1) {
    a->Add("feature_group_count=", in.feature_group_count());
  }
  if (in.batch_group_count() != 0 && in.batch_group_count() != 1) {
    a->Add("batch_group_count=", in.batch_group_count());
  }
}

void DotDimensions(const xla::DotDimensionNumbers& d, AttributeList* a) {
  if (d.lhs_batch_dimensions_size() > 0) {
    a->Add("lhs_batch_dims=", IntList(d.lhs_batch_dimensions()));
  }
  if (d.lhs_contracting_dimensions_size() > 0) {
    a->Add("lhs_contracting_dims=", IntList(d.lhs_contracting_dimensions()));
  }
  if (d.rhs_batch_dimensions_size() > 0) {
    a->Add("rhs_batch_dims=", IntList(d.rhs_batch_dimensions()));
  }
  if (d.rhs_contracting_dimensions_size() > 0) {
    a->Add("rhs_contracting_dims=", IntList(d.rhs_contracting_dimensions()));
  }
}

void PrecisionAttributes(const xla::PrecisionConfig& pc, AttributeList* a) {
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
    a->Add("operand_precision={", absl::StrJoin(names, ","), "}");
  }
  if (pc.algorithm() != xla::PrecisionConfig::ALG_UNSET) {
    a->Add("algorithm=",
           LowerEnumName(xla::PrecisionConfig::Algorithm_Name(pc.algorithm()),
                         "ALG_"));
  }
}

// Dot and ragged-dot dimensions, sparsity and precision.
void DotAttributes(const Proto& in, AttributeList* a) {
  if (in.has_dot_dimension_numbers()) {
    DotDimensions(in.dot_dimension_numbers(), a);
  }
  if (in.has_ragged_dot_dimension_numbers()) {
    const auto& r = in.ragged_dot_dimension_numbers();
    DotDimensions(r.dot_dimension_numbers(), a);
    if (r.lhs_ragged_dimensions_size() > 0) {
      a->Add("lhs_ragged_dims=", IntList(r.lhs_ragged_dimensions()));
    }
    if (r.rhs_group_dimensions_size() > 0) {
      a->Add("rhs_group_dims=", IntList(r.rhs_group_dimensions()));
    }
  }
  if (in.dot_sparsity_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& s : in.dot_sparsity()) {
      parts.push_back(absl::StrCat(s.index() == 0 ? "L." : "R.", s.dimension(),
                                   "@", s.n(), ":", s.m()));
    }
    a->Add("sparsity=", absl::StrJoin(parts, "_"));
  }
  if (in.has_precision_config()) {
    PrecisionAttributes(in.precision_config(), a);
  }
}

void GatherScatterAttributes(const Proto& in, AttributeList* a) {
  if (in.has_gather_dimension_numbers()) {
    const auto& g = in.gather_dimension_numbers();
    a->Add("offset_dims=", IntList(g.offset_dims()));
    a->Add("collapsed_slice_dims=", IntList(g.collapsed_slice_dims()));
    a->Add("start_index_map=", IntList(g.start_index_map()));
    if (g.operand_batching_dims_size() > 0) {
      a->Add("operand_batching_dims=", IntList(g.operand_batching_dims()));
    }
    if (g.start_indices_batching_dims_size() > 0) {
      a->Add("start_indices_batching_dims=",
             IntList(g.start_indices_batching_dims()));
    }
    a->Add("index_vector_dim=", g.index_vector_dim());
  }
  if (in.gather_slice_sizes_size() > 0 || in.opcode() == "gather") {
    a->Add("slice_sizes=", IntList(in.gather_slice_sizes()));
  }
  if (in.has_scatter_dimension_numbers()) {
    const auto& s = in.scatter_dimension_numbers();
    a->Add("update_window_dims=", IntList(s.update_window_dims()));
    a->Add("inserted_window_dims=", IntList(s.inserted_window_dims()));
    a->Add("scatter_dims_to_operand_dims=",
           IntList(s.scatter_dims_to_operand_dims()));
    if (s.input_batching_dims_size() > 0) {
      a->Add("input_batching_dims=", IntList(s.input_batching_dims()));
    }
    if (s.scatter_indices_batching_dims_size() > 0) {
      a->Add("scatter_indices_batching_dims=",
             IntList(s.scatter_indices_batching_dims()));
    }
    a->Add("index_vector_dim=", s.index_vector_dim());
  }
  if (in.indices_are_sorted()) a->Add("indices_are_sorted=true");
  if (in.unique_indices()) a->Add("unique_indices=true");
}

void CollectiveAttributes(const Proto& in, AttributeList* a) {
  const std::string& op = in.opcode();
  if (IsCollective(op) || in.replica_groups_size() > 0) {
    a->Add("replica_groups=", PrintReplicaGroups(in.replica_groups()));
  }
  if (in.channel_id() > 0) a->Add("channel_id=", in.channel_id());
  if (in.use_global_device_ids()) a->Add("use_global_device_ids=true");
  if (in.constrain_layout() && op != "custom-call") {
    a->Add("constrain_layout=true");
  }
  if (in.source_target_pairs_size() > 0 || op == "collective-permute" ||
      op == "collective-permute-start") {
    std::vector<std::string> parts;
    for (const auto& p : in.source_target_pairs()) {
      parts.push_back(absl::StrCat("{", p.source(), ",", p.target(), "}"));
    }
    a->Add("source_target_pairs={", absl::StrJoin(parts, ","), "}");
  }
}

// rng, fft, reduce-precision, batch-norm, fusion and feeds.
void OpSpecificAttributes(const Proto& in, AttributeList* a) {
  const std::string& op = in.opcode();
  if (op == "rng") {
    a->Add("distribution=",
           LowerEnumName(xla::RandomDistribution_Name(in.distribution()), ""));
  }
  if (op == "rng-bit-generator") {
    a->Add("algorithm=",
           LowerEnumName(xla::RandomAlgorithm_Name(in.rng_algorithm()), ""));
  }
  if (in.delta() != 0) a->Add("delta=", in.delta());
  if (op == "fft") {
    a->Add("fft_type=", xla::FftType_Name(in.fft_type()));
    a->Add("fft_length=", IntList(in.fft_length()));
  }
  if (op == "reduce-precision") {
    a->Add("exponent_bits=", in.exponent_bits());
    a->Add("mantissa_bits=", in.mantissa_bits());
  }
  if (absl::StartsWith(op, "batch-norm")) {
    a->Add("epsilon=", FormatFloat(in.epsilon()));
    a->Add("feature_index=", in.feature_index());
  }
  if (!in.fusion_kind().empty()) a->Add("kind=", in.fusion_kind());
  if (in.is_host_transfer()) a->Add("is_host_transfer=true");
  if (!in.infeed_config().empty()) {
    a->Add("infeed_config=", Quoted(in.infeed_config()));
  }
  if (!in.outfeed_config().empty()) {
    a->Add("outfeed_config=", Quoted(in.outfeed_config()));
  }
  if (in.has_outfeed_shape()) {
    a->Add("outfeed_shape=", ShapeText(in.outfeed_shape()));
  }
}

void CustomCallAttributes(const Proto& in, AttributeList* a) {
  if (in.opcode() == "custom-call") {
    a->Add("custom_call_target=", Quoted(in.custom_call_target()));
    if (in.custom_call_has_side_effect()) {
      a->Add("custom_call_has_side_effect=true");
    }
    if (in.custom_call_api_version() != xla::API_VERSION_ORIGINAL) {
      a->Add("api_version=",
             xla::CustomCallApiVersion_Name(in.custom_call_api_version()));
    }
    if (in.custom_call_schedule() != xla::SCHEDULE_NONE) {
      a->Add("schedule=",
             xla::CustomCallSchedule_Name(in.custom_call_schedule()));
    }
    if (in.constrain_layout()) {
      std::vector<std::string> shapes;
      for (const auto& s : in.operand_shapes_with_layout()) {
        shapes.push_back(ShapeText(s));
      }
      a->Add("operand_layout_constraints={", absl::StrJoin(shapes, ", "), "}");
    }
  }
  if (in.output_operand_aliasing_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& alias : in.output_operand_aliasing()) {
      parts.push_back(absl::StrCat(IntList(alias.output_shape_index()), ": (",
                                   alias.operand_index(), ", ",
                                   IntList(alias.operand_shape_index()), ")"));
    }
    a->Add("output_to_operand_aliasing={", absl::StrJoin(parts, ", "), "}");
  }
}

// Triangular solve, cholesky, sort, topk.
void LinearAlgebraAttributes(const Proto& in, AttributeList* a) {
  if (in.has_triangular_solve_options()) {
    const auto& t = in.triangular_solve_options();
    if (t.left_side()) a->Add("left_side=true");
    if (t.lower()) a->Add("lower=true");
    if (t.unit_diagonal()) a->Add("unit_diagonal=true");
    a->Add("transpose_a=",
           xla::TriangularSolveOptions::Transpose_Name(t.transpose_a()));
  }
  if (in.has_cholesky_options() && in.cholesky_options().lower()) {
    a->Add("lower=true");
  }
  if (in.is_stable()) a->Add("is_stable=true");
  if (in.has_parameter_replication()) {
    std::vector<std::string> parts;
    for (bool b : in.parameter_replication().replicated_at_leaf_buffers()) {
      parts.push_back(b ? "true" : "false");
    }
    a->Add("parameter_replication={", absl::StrJoin(parts, ","), "}");
  }
  if (in.opcode() == "topk") {
    a->Add("k=", in.k());
    a->Add("largest=", in.largest() ? "true" : "false");
  }
}

// Prefetch, composite, padding type, domain, accuracy, async thread.
void MiscAttributes(const Proto& in, AttributeList* a) {
  if (in.optional_cross_program_prefetch_index_case() ==
      xla::HloInstructionProto::kCrossProgramPrefetchIndex) {
    a->Add("cross_program_prefetch_index=", in.cross_program_prefetch_index());
  }
  if (in.is_cross_program_prefetch()) a->Add("is_cross_program_prefetch=true");
  if (in.is_composite()) a->Add("is_composite=true");
  if (in.padding_type() != xla::PADDING_INVALID) {
    a->Add("padding_type=", xla::PaddingType_Name(in.padding_type()));
  }
  if (in.opcode() == "domain") {
    a->Add("domain={kind=\"sharding\", entry=",
           PrintSharding(in.domain_entry_sharding()),
           ", exit=", PrintSharding(in.domain_exit_sharding()), "}");
  }
  if (in.has_result_accuracy()) {
    const auto& r = in.result_accuracy();
    if (r.has_tolerance()) {
      a->Add("result_accuracy={tolerance={atol=",
             FormatDouble(r.tolerance().atol()),
             ",rtol=", FormatDouble(r.tolerance().rtol()),
             ",ulps=", r.tolerance().ulps(), "}}");
    } else {
      a->Add("result_accuracy={mode=",
             LowerEnumName(xla::ResultAccuracy::Mode_Name(r.mode()), ""), "}");
    }
  }
  if (!in.async_execution_thread().empty()) {
    a->Add("async_execution_thread=", Quoted(in.async_execution_thread()));
  }
}

// sharding, frontend_attributes, statistics.
void AnnotationAttributes(const Proto& in, AttributeList* a) {
  if (in.has_sharding()) a->Add("sharding=", PrintSharding(in.sharding()));
  if (in.has_frontend_attributes() && !in.frontend_attributes().map().empty()) {
    a->Add("frontend_attributes=",
           PrintFrontendAttributes(in.frontend_attributes()));
  }
  if (in.has_statistics_viz()) {
    std::string s = absl::StrCat("statistics={visualizing_index=",
                                 in.statistics_viz().stat_index_to_visualize());
    for (const auto& stat : in.statistics_viz().statistics()) {
      absl::StrAppend(&s, ",", stat.stat_name(), "=",
                      FormatDouble(stat.stat_val()));
    }
    a->Add(s, "}");
  }
}

// metadata and backend_config come last, as in XLA.
void TrailingAttributes(const Proto& in, AttributeList* a) {
  if (in.has_metadata()) {
    std::string m = PrintMetadata(in.metadata());
    if (m != "{}") a->Add("metadata=", m);
  }
  if (!in.backend_config().empty()) {
    a->Add("backend_config=", PrintBackendConfig(in.backend_config()));
  }
}

}  // namespace

InstructionPrinter::InstructionPrinter(const xla::HloModuleProto* module) {
  if (module == nullptr) return;
  for (const auto& c : module->computations()) {
    computations_[c.id()] = &c;
    for (const auto& i : c.instructions()) instructions_[i.id()] = &i;
  }
}

void InstructionPrinter::IndexComputation(
    const xla::HloComputationProto& computation) {
  for (const auto& i : computation.instructions()) instructions_[i.id()] = &i;
}

std::string InstructionPrinter::ComputationName(int64_t id) const {
  auto it = computations_.find(id);
  if (it == computations_.end()) return absl::StrCat("%computation.", id);
  return absl::StrCat("%", it->second->name());
}

void InstructionPrinter::Instruction(const xla::HloInstructionProto& in,
                                     bool is_root, std::string* out) const {
  if (is_root) out->append("ROOT ");
  absl::StrAppend(out, "%", in.name(), " = ");
  AppendShape(in.shape(), true, out);
  absl::StrAppend(out, " ", in.opcode(), "(");
  Operands(in, out);
  out->push_back(')');
  AttributeList attrs;
  Attributes(in, &attrs);
  for (const std::string& a : attrs.items()) absl::StrAppend(out, ", ", a);
}

// The literal of a constant, the number of a parameter, else the operands
// with their shapes and an index comment every fifth.
void InstructionPrinter::Operands(const xla::HloInstructionProto& in,
                                  std::string* out) const {
  if (in.opcode() == "constant") {
    if (in.has_literal()) AppendLiteral(in.literal(), out);
    return;
  }
  if (in.opcode() == "parameter") {
    absl::StrAppend(out, in.parameter_number());
    return;
  }
  for (int i = 0; i < in.operand_ids_size(); ++i) {
    if (i > 0) out->append(", ");
    if (i > 0 && i % 5 == 0) absl::StrAppend(out, "/*index=", i, "*/");
    const xla::HloInstructionProto* operand = Find(in.operand_ids(i));
    if (operand == nullptr) {
      absl::StrAppend(out, "%unknown.", in.operand_ids(i));
      continue;
    }
    AppendShape(operand->shape(), true, out);
    absl::StrAppend(out, " %", operand->name());
  }
}

void InstructionPrinter::Attributes(const xla::HloInstructionProto& in,
                                    AttributeList* attrs) const {
  ShapeAttributes(in, attrs);
  ConvolutionAttributes(in, attrs);
  DotAttributes(in, attrs);
  GatherScatterAttributes(in, attrs);
  ComparisonAttributes(in, attrs);
  CollectiveAttributes(in, attrs);
  OpSpecificAttributes(in, attrs);
  CustomCallAttributes(in, attrs);
  LinearAlgebraAttributes(in, attrs);
  MiscAttributes(in, attrs);
  CalledComputations(in, attrs);
  AnnotationAttributes(in, attrs);
  ControlPredecessors(in, attrs);
  TrailingAttributes(in, attrs);
}

void InstructionPrinter::ComparisonAttributes(
    const xla::HloInstructionProto& in, AttributeList* attrs) const {
  if (!in.comparison_direction().empty()) {
    attrs->Add("direction=", in.comparison_direction());
  }
  if (in.comparison_type().empty()) return;
  // Print the type only when it differs from the operand type's default.
  absl::string_view default_type;
  if (in.operand_ids_size() > 0) {
    if (const auto* operand = Find(in.operand_ids(0))) {
      default_type = DefaultComparisonType(operand->shape().element_type());
    }
  }
  if (in.comparison_type() != default_type) {
    attrs->Add("type=", in.comparison_type());
  }
}

// Called computations, in XLA's spelling for the opcode.
void InstructionPrinter::CalledComputations(const xla::HloInstructionProto& in,
                                            AttributeList* attrs) const {
  const std::string& op = in.opcode();
  const auto& called = in.called_computation_ids();
  if (called.empty()) return;
  auto name_list = [&] {
    std::vector<std::string> names;
    for (int64_t id : called) names.push_back(ComputationName(id));
    return absl::StrCat("{", absl::StrJoin(names, ", "), "}");
  };
  if (op == "while" && called.size() == 2) {
    attrs->Add("condition=", ComputationName(called[1]));
    attrs->Add("body=", ComputationName(called[0]));
  } else if (op == "select-and-scatter" && called.size() == 2) {
    attrs->Add("select=", ComputationName(called[0]));
    attrs->Add("scatter=", ComputationName(called[1]));
  } else if (op == "conditional") {
    const xla::HloInstructionProto* predicate =
        in.operand_ids_size() > 0 ? Find(in.operand_ids(0)) : nullptr;
    if (called.size() == 2 && predicate != nullptr &&
        predicate->shape().element_type() == xla::PRED) {
      attrs->Add("true_computation=", ComputationName(called[0]));
      attrs->Add("false_computation=", ComputationName(called[1]));
    } else {
      attrs->Add("branch_computations=", name_list());
    }
  } else if (called.size() == 1 &&
             (op == "fusion" || absl::StartsWith(op, "async-"))) {
    attrs->Add("calls=", ComputationName(called[0]));
  } else if (called.size() == 1) {
    attrs->Add("to_apply=", ComputationName(called[0]));
  } else {
    attrs->Add("called_computations=", name_list());
  }
}

void InstructionPrinter::ControlPredecessors(const xla::HloInstructionProto& in,
                                             AttributeList* attrs) const {
  if (in.control_predecessor_ids_size() == 0) return;
  std::vector<std::string> names;
  for (int64_t id : in.control_predecessor_ids()) {
    const auto* p = Find(id);
    names.push_back(p == nullptr ? absl::StrCat("%unknown.", id)
                                 : absl::StrCat("%", p->name()));
  }
  attrs->Add("control-predecessors={", absl::StrJoin(names, ", "), "}");
}

}  // namespace tpu::hlo::text_internal
