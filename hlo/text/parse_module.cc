// The module: "HloModule name, attr=value, ...", the stack-frame tables and
// then the computations.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo::text_internal {

absl::Status Parser::ParseModule(xla::HloModuleProto* module) {
  if (!lexer_.TryConsumeKeyword("HloModule")) return Expected("'HloModule'");
  absl::string_view name = lexer_.ConsumeName();
  if (name.empty()) return Expected("module name");
  module->set_name(std::string(name));
  // Older XLA wrote "HloModule name:" (XLA's lexer reads "name:" as a name).
  if (lexer_.PeekRaw() == ':') lexer_.set_pos(lexer_.pos() + 1);
  while (lexer_.TryConsume(',')) {
    HLO_RETURN_IF_ERROR(ParseModuleAttribute(module));
  }
  HLO_RETURN_IF_ERROR(ParseStackFrameIndex(module));
  while (!lexer_.AtEnd()) {
    HLO_RETURN_IF_ERROR(ParseComputation());
  }
  if (computations_.empty()) return Expected("computation");
  return Resolve(module);
}

absl::Status Parser::ParseModuleAttribute(xla::HloModuleProto* module) {
  lexer_.SkipSpace();
  absl::string_view key = lexer_.ConsumeWord();
  if (key.empty()) return Expected("module attribute name");
  HLO_RETURN_IF_ERROR(Expect('='));
  if (key == "is_scheduled") return ParseBool(&is_scheduled_);
  if (key == "entry_computation_layout") return ParseEntryComputationLayout();
  if (key == "input_output_alias") return ParseInputOutputAlias(module);
  if (key == "buffer_donor") return ParseBufferDonor(module);
  if (key == "frontend_attributes") {
    return ParseFrontendAttributes(module->mutable_frontend_attributes());
  }
  if (key == "spmd_output_sharding") {
    return ParseSharding(module->mutable_spmd_output_sharding());
  }
  if (key == "spmd_parameters_shardings") {
    return ParseBracedList(
        [&] { return ParseSharding(module->add_spmd_parameters_shardings()); });
  }
  // replica_count, num_partitions, alias_passthrough_params,
  // allow_spmd_sharding_propagation_to_*, ...: not part of HloModuleProto.
  return SkipValue();
}

// {(param shapes) -> result shape}; checked against the entry computation
// once it is known.
absl::Status Parser::ParseEntryComputationLayout() {
  HLO_RETURN_IF_ERROR(Expect('{'));
  lexer_.SkipSpace();
  entry_layout_pos_ = lexer_.pos();
  has_entry_layout_ = true;
  entry_layout_.Clear();
  HLO_RETURN_IF_ERROR(ParseProgramShape(&entry_layout_));
  return Expect('}');
}

// { {output index}: (param, {param index}[, may-alias|must-alias]), ... }
absl::Status Parser::ParseInputOutputAlias(xla::HloModuleProto* module) {
  return ParseBracedList([&]() -> absl::Status {
    auto* entry = module->mutable_input_output_alias()->add_entries();
    HLO_RETURN_IF_ERROR(ParseShapeIndex(entry->mutable_output_shape_index()));
    HLO_RETURN_IF_ERROR(Expect(':'));
    HLO_RETURN_IF_ERROR(Expect('('));
    int64_t param;
    HLO_RETURN_IF_ERROR(
        ParseParameterAndIndex(&param, entry->mutable_parameter_shape_index()));
    entry->set_parameter_number(param);
    entry->set_kind(xla::MAY_ALIAS);
    if (lexer_.TryConsume(',')) {
      lexer_.SkipSpace();
      const size_t at = lexer_.pos();
      absl::string_view kind = lexer_.ConsumeWord();
      if (kind == "must-alias") {
        entry->set_kind(xla::MUST_ALIAS);
      } else if (kind != "may-alias") {
        return ExpectedAt(at, "'may-alias' or 'must-alias'");
      }
    }
    return Expect(')');
  });
}

// { (param, {param index}), ... }
absl::Status Parser::ParseBufferDonor(xla::HloModuleProto* module) {
  return ParseBracedList([&]() -> absl::Status {
    auto* entry = module->mutable_buffer_donor()->add_entries();
    HLO_RETURN_IF_ERROR(Expect('('));
    int64_t param;
    HLO_RETURN_IF_ERROR(
        ParseParameterAndIndex(&param, entry->mutable_parameter_shape_index()));
    entry->set_parameter_number(param);
    return Expect(')');
  });
}

absl::Status Parser::ParseParameterAndIndex(
    int64_t* param, google::protobuf::RepeatedField<int64_t>* index) {
  HLO_RETURN_IF_ERROR(ParseInt(param));
  HLO_RETURN_IF_ERROR(Expect(','));
  return ParseShapeIndex(index);
}

}  // namespace tpu::hlo::text_internal
