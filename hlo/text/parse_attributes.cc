// Instruction attributes ("key=value" after the operands), table-driven: each
// key maps to a small parser for its value. Keys are registered by family
// (dimensions, dot, gather/scatter, collectives, ...), and most families
// share a generic value parser (int, bool, int list, enum, string) given the
// proto field to fill. Unknown keys are skipped.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo::text_internal {
namespace {

using Proto = xla::HloInstructionProto;
using Int64List = google::protobuf::RepeatedField<int64_t>;

// Parses the value of one attribute (the text after "key=").
using AttributeParser =
    std::function<absl::Status(Parser&, PendingInstruction&)>;
using AttributeTable = absl::flat_hash_map<absl::string_view, AttributeParser>;

// --- Generic value parsers, given where the value goes ---------------------

AttributeParser IntList(Int64List* (*field)(Proto&)) {
  return [field](Parser& p, PendingInstruction& i) {
    return p.ParseIntList(field(i.proto));
  };
}

AttributeParser Int(void (*set)(Proto&, int64_t)) {
  return [set](Parser& p, PendingInstruction& i) -> absl::Status {
    int64_t value;
    HLO_RETURN_IF_ERROR(p.ParseInt(&value));
    set(i.proto, value);
    return absl::OkStatus();
  };
}

AttributeParser Bool(void (*set)(Proto&, bool)) {
  return [set](Parser& p, PendingInstruction& i) -> absl::Status {
    bool value;
    HLO_RETURN_IF_ERROR(p.ParseBool(&value));
    set(i.proto, value);
    return absl::OkStatus();
  };
}

AttributeParser String(std::string* (*field)(Proto&)) {
  return [field](Parser& p, PendingInstruction& i) {
    return p.ParseString(field(i.proto));
  };
}

// An enum value written in lower or upper case, with or without `prefix`.
template <typename Enum>
AttributeParser EnumValue(const google::protobuf::EnumDescriptor* type,
                          absl::string_view prefix, void (*set)(Proto&, Enum)) {
  return [=](Parser& p, PendingInstruction& i) -> absl::Status {
    Enum value{};
    HLO_RETURN_IF_ERROR(p.ParseEnum(type, prefix, &value));
    set(i.proto, value);
    return absl::OkStatus();
  };
}

// A word from `allowed`, uppercased, stored in a string field; the error
// names the choices as `what`.
AttributeParser UpperWord(std::vector<absl::string_view> allowed,
                          absl::string_view what,
                          void (*set)(PendingInstruction&, std::string)) {
  return [=](Parser& p, PendingInstruction& i) -> absl::Status {
    p.lexer().SkipSpace();
    const size_t at = p.lexer().pos();
    std::string word = absl::AsciiStrToUpper(p.lexer().ConsumeWord());
    for (absl::string_view a : allowed) {
      if (word == a) {
        set(i, std::move(word));
        return absl::OkStatus();
      }
    }
    return p.ExpectedAt(at, what);
  };
}

// Called computations go to fixed slots so XLA's order holds whatever the
// attribute order: while = {body, condition}, conditional = {true, false},
// select-and-scatter = {select, scatter}.
absl::Status ParseCalled(size_t slot, Parser& p, PendingInstruction& i) {
  NameRef ref;
  HLO_RETURN_IF_ERROR(p.ParseNameRef(&ref));
  if (i.called.size() <= slot) i.called.resize(slot + 1);
  i.called[slot] = ref;
  return absl::OkStatus();
}

AttributeParser CalledSlot(size_t slot) {
  return [slot](Parser& p, PendingInstruction& i) {
    return ParseCalled(slot, p, i);
  };
}

// The dot dimension numbers of dot, or of ragged-dot inside its own message.
xla::DotDimensionNumbers* DotNumbers(Proto& proto) {
  if (proto.opcode() == "ragged-dot") {
    return proto.mutable_ragged_dot_dimension_numbers()
        ->mutable_dot_dimension_numbers();
  }
  return proto.mutable_dot_dimension_numbers();
}

xla::GatherDimensionNumbers* Gather(Proto& p) {
  return p.mutable_gather_dimension_numbers();
}
xla::ScatterDimensionNumbers* Scatter(Proto& p) {
  return p.mutable_scatter_dimension_numbers();
}
xla::TriangularSolveOptions* Triangular(Proto& p) {
  return p.mutable_triangular_solve_options();
}

// --- Families -----------------------------------------------------------

void AddShapeAttributes(AttributeTable& t) {
  t["dimensions"] = IntList([](Proto& p) { return p.mutable_dimensions(); });
  t["iota_dimension"] = Int([](Proto& p, int64_t v) { p.add_dimensions(v); });
  t["index"] = Int([](Proto& p, int64_t v) { p.set_tuple_index(v); });
  t["slice"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseSlices(&i.proto);
  };
  t["dynamic_slice_sizes"] =
      IntList([](Proto& p) { return p.mutable_dynamic_slice_sizes(); });
  t["padding"] = [](Parser& p, PendingInstruction& i) {
    return p.ParsePadding(i.proto.mutable_padding_config());
  };
}

void AddConvolutionAttributes(AttributeTable& t) {
  t["window"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseWindow(i.proto.mutable_window());
  };
  t["dim_labels"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseDimLabels(i.proto.mutable_convolution_dimension_numbers());
  };
  t["feature_group_count"] =
      Int([](Proto& p, int64_t v) { p.set_feature_group_count(v); });
  t["batch_group_count"] =
      Int([](Proto& p, int64_t v) { p.set_batch_group_count(v); });
  t["padding_type"] = EnumValue(
      xla::PaddingType_descriptor(), "PADDING_",
      +[](Proto& p, xla::PaddingType v) { p.set_padding_type(v); });
}

AttributeParser OperandPrecision() {
  return [](Parser& p, PendingInstruction& i) {
    auto* precisions =
        i.proto.mutable_precision_config()->mutable_operand_precision();
    precisions->Clear();
    return p.ParseBracedList([&]() -> absl::Status {
      xla::PrecisionConfig::Precision value{};
      HLO_RETURN_IF_ERROR(p.ParseEnum(
          xla::PrecisionConfig::Precision_descriptor(), "", &value));
      precisions->Add(value);
      return absl::OkStatus();
    });
  };
}

// algorithm= is the RNG algorithm of rng-bit-generator and the precision
// algorithm of dots.
AttributeParser Algorithm() {
  return [](Parser& p, PendingInstruction& i) -> absl::Status {
    if (i.proto.opcode() == "rng-bit-generator") {
      xla::RandomAlgorithm algorithm{};
      HLO_RETURN_IF_ERROR(
          p.ParseEnum(xla::RandomAlgorithm_descriptor(), "RNG_", &algorithm));
      i.proto.set_rng_algorithm(algorithm);
      return absl::OkStatus();
    }
    xla::PrecisionConfig::Algorithm algorithm{};
    HLO_RETURN_IF_ERROR(p.ParseEnum(
        xla::PrecisionConfig::Algorithm_descriptor(), "ALG_", &algorithm));
    i.proto.mutable_precision_config()->set_algorithm(algorithm);
    return absl::OkStatus();
  };
}

void AddDotAttributes(AttributeTable& t) {
  t["lhs_batch_dims"] = IntList(
      [](Proto& p) { return DotNumbers(p)->mutable_lhs_batch_dimensions(); });
  t["lhs_contracting_dims"] = IntList([](Proto& p) {
    return DotNumbers(p)->mutable_lhs_contracting_dimensions();
  });
  t["rhs_batch_dims"] = IntList(
      [](Proto& p) { return DotNumbers(p)->mutable_rhs_batch_dimensions(); });
  t["rhs_contracting_dims"] = IntList([](Proto& p) {
    return DotNumbers(p)->mutable_rhs_contracting_dimensions();
  });
  t["lhs_ragged_dims"] = IntList([](Proto& p) {
    return p.mutable_ragged_dot_dimension_numbers()
        ->mutable_lhs_ragged_dimensions();
  });
  t["rhs_group_dims"] = IntList([](Proto& p) {
    return p.mutable_ragged_dot_dimension_numbers()
        ->mutable_rhs_group_dimensions();
  });
  t["operand_precision"] = OperandPrecision();
  t["algorithm"] = Algorithm();
  t["sparsity"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseSparsity(&i.proto);
  };
}

void AddGatherScatterAttributes(AttributeTable& t) {
  t["offset_dims"] =
      IntList([](Proto& p) { return Gather(p)->mutable_offset_dims(); });
  t["collapsed_slice_dims"] = IntList(
      [](Proto& p) { return Gather(p)->mutable_collapsed_slice_dims(); });
  t["start_index_map"] =
      IntList([](Proto& p) { return Gather(p)->mutable_start_index_map(); });
  t["operand_batching_dims"] = IntList(
      [](Proto& p) { return Gather(p)->mutable_operand_batching_dims(); });
  t["start_indices_batching_dims"] = IntList([](Proto& p) {
    return Gather(p)->mutable_start_indices_batching_dims();
  });
  t["slice_sizes"] =
      IntList([](Proto& p) { return p.mutable_gather_slice_sizes(); });
  t["index_vector_dim"] = Int([](Proto& p, int64_t v) {
    if (p.opcode() == "gather") {
      Gather(p)->set_index_vector_dim(v);
    } else {
      Scatter(p)->set_index_vector_dim(v);
    }
  });
  t["update_window_dims"] = IntList(
      [](Proto& p) { return Scatter(p)->mutable_update_window_dims(); });
  t["inserted_window_dims"] = IntList(
      [](Proto& p) { return Scatter(p)->mutable_inserted_window_dims(); });
  t["scatter_dims_to_operand_dims"] = IntList([](Proto& p) {
    return Scatter(p)->mutable_scatter_dims_to_operand_dims();
  });
  t["input_batching_dims"] = IntList(
      [](Proto& p) { return Scatter(p)->mutable_input_batching_dims(); });
  t["scatter_indices_batching_dims"] = IntList([](Proto& p) {
    return Scatter(p)->mutable_scatter_indices_batching_dims();
  });
  t["indices_are_sorted"] =
      Bool([](Proto& p, bool v) { p.set_indices_are_sorted(v); });
  t["unique_indices"] = Bool([](Proto& p, bool v) { p.set_unique_indices(v); });
}

void AddCompareAttributes(AttributeTable& t) {
  t["direction"] = UpperWord({"EQ", "NE", "GE", "GT", "LE", "LT"},
                             "comparison direction (EQ, NE, GE, GT, LE, LT)",
                             [](PendingInstruction& i, std::string v) {
                               i.proto.set_comparison_direction(std::move(v));
                             });
  t["type"] = UpperWord({"FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"},
                        "comparison type (FLOAT, TOTALORDER, SIGNED, UNSIGNED)",
                        [](PendingInstruction& i, std::string v) {
                          i.proto.set_comparison_type(std::move(v));
                          i.default_comparison_type = false;
                        });
}

AttributeParser SourceTargetPairs() {
  return [](Parser& p, PendingInstruction& i) {
    return p.ParseBracedList([&]() -> absl::Status {
      auto* pair = i.proto.add_source_target_pairs();
      int64_t value;
      HLO_RETURN_IF_ERROR(p.Expect('{'));
      HLO_RETURN_IF_ERROR(p.ParseInt(&value));
      pair->set_source(value);
      HLO_RETURN_IF_ERROR(p.Expect(','));
      HLO_RETURN_IF_ERROR(p.ParseInt(&value));
      pair->set_target(value);
      return p.Expect('}');
    });
  };
}

void AddCollectiveAttributes(AttributeTable& t) {
  t["replica_groups"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseReplicaGroups(i.proto.mutable_replica_groups());
  };
  t["source_target_pairs"] = SourceTargetPairs();
  t["channel_id"] = Int([](Proto& p, int64_t v) { p.set_channel_id(v); });
  t["use_global_device_ids"] =
      Bool([](Proto& p, bool v) { p.set_use_global_device_ids(v); });
  t["constrain_layout"] =
      Bool([](Proto& p, bool v) { p.set_constrain_layout(v); });
  t["is_host_transfer"] =
      Bool([](Proto& p, bool v) { p.set_is_host_transfer(v); });
}

void AddCalledComputationAttributes(AttributeTable& t) {
  // custom-call may call several computations: calls={a, b}.
  AttributeParser to_apply = [](Parser& p, PendingInstruction& i) {
    if (i.proto.opcode() == "custom-call" && p.lexer().Peek() == '{') {
      return p.ParseNameList(&i.called);
    }
    return ParseCalled(0, p, i);
  };
  t["to_apply"] = to_apply;
  t["calls"] = to_apply;
  for (absl::string_view key : {"body", "select", "true_computation"}) {
    t[key] = CalledSlot(0);
  }
  for (absl::string_view key : {"condition", "scatter", "false_computation"}) {
    t[key] = CalledSlot(1);
  }
  AttributeParser list = [](Parser& p, PendingInstruction& i) {
    i.called.clear();
    return p.ParseNameList(&i.called);
  };
  t["branch_computations"] = list;
  t["called_computations"] = list;
  t["control-predecessors"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseNameList(&i.control_predecessors);
  };
}

void AddNumericOpAttributes(AttributeTable& t) {
  t["distribution"] = EnumValue(
      xla::RandomDistribution_descriptor(), "RNG_",
      +[](Proto& p, xla::RandomDistribution v) { p.set_distribution(v); });
  t["is_stable"] = Bool([](Proto& p, bool v) { p.set_is_stable(v); });
  t["fft_type"] = EnumValue(
      xla::FftType_descriptor(), "",
      +[](Proto& p, xla::FftType v) { p.set_fft_type(v); });
  t["fft_length"] = IntList([](Proto& p) { return p.mutable_fft_length(); });
  t["exponent_bits"] = Int([](Proto& p, int64_t v) {
    p.set_exponent_bits(static_cast<int32_t>(v));
  });
  t["mantissa_bits"] = Int([](Proto& p, int64_t v) {
    p.set_mantissa_bits(static_cast<int32_t>(v));
  });
  t["epsilon"] = [](Parser& p, PendingInstruction& i) -> absl::Status {
    double epsilon;
    HLO_RETURN_IF_ERROR(p.ParseDouble(&epsilon));
    i.proto.set_epsilon(static_cast<float>(epsilon));
    return absl::OkStatus();
  };
  t["feature_index"] = Int([](Proto& p, int64_t v) { p.set_feature_index(v); });
  t["delta"] = Int([](Proto& p, int64_t v) { p.set_delta(v); });
  t["k"] = Int([](Proto& p, int64_t v) { p.set_k(v); });
  t["largest"] = Bool([](Proto& p, bool v) { p.set_largest(v); });
  t["result_accuracy"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseResultAccuracy(i.proto.mutable_result_accuracy());
  };
}

void AddLinearAlgebraAttributes(AttributeTable& t) {
  t["left_side"] =
      Bool([](Proto& p, bool v) { Triangular(p)->set_left_side(v); });
  t["lower"] = Bool([](Proto& p, bool v) {
    if (p.opcode() == "cholesky") {
      p.mutable_cholesky_options()->set_lower(v);
    } else {
      Triangular(p)->set_lower(v);
    }
  });
  t["unit_diagonal"] =
      Bool([](Proto& p, bool v) { Triangular(p)->set_unit_diagonal(v); });
  t["transpose_a"] = EnumValue(
      xla::TriangularSolveOptions::Transpose_descriptor(), "",
      +[](Proto& p, xla::TriangularSolveOptions::Transpose v) {
        p.mutable_triangular_solve_options()->set_transpose_a(v);
      });
}

AttributeParser OperandLayoutConstraints() {
  return [](Parser& p, PendingInstruction& i) {
    i.proto.set_constrain_layout(true);
    return p.ParseBracedList(
        [&] { return p.ParseShape(i.proto.add_operand_shapes_with_layout()); });
  };
}

// {output index}: (operand, {operand index}), ...
AttributeParser OutputToOperandAliasing() {
  return [](Parser& p, PendingInstruction& i) {
    return p.ParseBracedList([&]() -> absl::Status {
      auto* alias = i.proto.add_output_operand_aliasing();
      HLO_RETURN_IF_ERROR(
          p.ParseShapeIndex(alias->mutable_output_shape_index()));
      HLO_RETURN_IF_ERROR(p.Expect(':'));
      HLO_RETURN_IF_ERROR(p.Expect('('));
      int64_t value;
      HLO_RETURN_IF_ERROR(p.ParseInt(&value));
      alias->set_operand_index(value);
      HLO_RETURN_IF_ERROR(p.Expect(','));
      HLO_RETURN_IF_ERROR(
          p.ParseShapeIndex(alias->mutable_operand_shape_index()));
      return p.Expect(')');
    });
  };
}

void AddCustomCallAttributes(AttributeTable& t) {
  t["custom_call_target"] =
      String([](Proto& p) { return p.mutable_custom_call_target(); });
  t["custom_call_has_side_effect"] =
      Bool([](Proto& p, bool v) { p.set_custom_call_has_side_effect(v); });
  t["api_version"] = EnumValue(
      xla::CustomCallApiVersion_descriptor(), "",
      +[](Proto& p, xla::CustomCallApiVersion v) {
        p.set_custom_call_api_version(v);
      });
  AttributeParser schedule = EnumValue(
      xla::CustomCallSchedule_descriptor(), "SCHEDULE_",
      +[](Proto& p, xla::CustomCallSchedule v) {
        p.set_custom_call_schedule(v);
      });
  t["schedule"] = schedule;
  t["custom_call_schedule"] = schedule;
  t["operand_layout_constraints"] = OperandLayoutConstraints();
  t["output_to_operand_aliasing"] = OutputToOperandAliasing();
  t["infeed_config"] =
      String([](Proto& p) { return p.mutable_infeed_config(); });
  t["outfeed_config"] =
      String([](Proto& p) { return p.mutable_outfeed_config(); });
  t["outfeed_shape"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseShape(i.proto.mutable_outfeed_shape());
  };
}

AttributeParser ParameterReplication() {
  return [](Parser& p, PendingInstruction& i) {
    auto* replication = i.proto.mutable_parameter_replication();
    return p.ParseBracedList([&]() -> absl::Status {
      bool flag;
      HLO_RETURN_IF_ERROR(p.ParseBool(&flag));
      replication->add_replicated_at_leaf_buffers(flag);
      return absl::OkStatus();
    });
  };
}

void AddSchedulingAttributes(AttributeTable& t) {
  t["kind"] = [](Parser& p, PendingInstruction& i) -> absl::Status {
    p.lexer().SkipSpace();
    absl::string_view kind = p.lexer().ConsumeWord();
    if (kind.empty()) return p.Expected("fusion kind");
    i.proto.set_fusion_kind(std::string(kind));
    return absl::OkStatus();
  };
  t["async_execution_thread"] =
      String([](Proto& p) { return p.mutable_async_execution_thread(); });
  t["cross_program_prefetch_index"] = Int([](Proto& p, int64_t v) {
    p.set_cross_program_prefetch_index(static_cast<int32_t>(v));
  });
  t["is_cross_program_prefetch"] =
      Bool([](Proto& p, bool v) { p.set_is_cross_program_prefetch(v); });
  t["is_composite"] = Bool([](Proto& p, bool v) { p.set_is_composite(v); });
  t["parameter_replication"] = ParameterReplication();
}

void AddAnnotationAttributes(AttributeTable& t) {
  t["backend_config"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseBackendConfig(i.proto.mutable_backend_config());
  };
  t["metadata"] = [](Parser& p, PendingInstruction& i) -> absl::Status {
    HLO_RETURN_IF_ERROR(p.ParseMetadata(i.proto.mutable_metadata()));
    if (i.proto.metadata().ByteSizeLong() == 0) i.proto.clear_metadata();
    return absl::OkStatus();
  };
  t["frontend_attributes"] = [](Parser& p,
                                PendingInstruction& i) -> absl::Status {
    HLO_RETURN_IF_ERROR(
        p.ParseFrontendAttributes(i.proto.mutable_frontend_attributes()));
    if (i.proto.frontend_attributes().map().empty()) {
      i.proto.clear_frontend_attributes();
    }
    return absl::OkStatus();
  };
  t["sharding"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseSharding(i.proto.mutable_sharding());
  };
  t["domain"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseDomain(&i.proto);
  };
  t["statistics"] = [](Parser& p, PendingInstruction& i) {
    return p.ParseStatistics(i.proto.mutable_statistics_viz());
  };
}

const AttributeTable& Attributes() {
  static const AttributeTable* const kTable = [] {
    auto* table = new AttributeTable();
    AddShapeAttributes(*table);
    AddConvolutionAttributes(*table);
    AddDotAttributes(*table);
    AddGatherScatterAttributes(*table);
    AddCompareAttributes(*table);
    AddCollectiveAttributes(*table);
    AddCalledComputationAttributes(*table);
    AddNumericOpAttributes(*table);
    AddLinearAlgebraAttributes(*table);
    AddCustomCallAttributes(*table);
    AddSchedulingAttributes(*table);
    AddAnnotationAttributes(*table);
    return table;
  }();
  return *kTable;
}

}  // namespace

absl::Status Parser::ParseAttribute(PendingInstruction* instruction) {
  lexer_.SkipSpace();
  absl::string_view key = lexer_.ConsumeWord();
  if (key.empty()) return Expected("attribute name");
  HLO_RETURN_IF_ERROR(Expect('='));
  const AttributeTable& table = Attributes();
  auto it = table.find(key);
  if (it == table.end()) return SkipValue();
  return it->second(*this, *instruction);
}

}  // namespace tpu::hlo::text_internal
