// Computations and the structure of an instruction:
//   [ENTRY] name [(signature) -> shape] { instructions } [,
//   execution_thread=..] [ROOT] name = shape opcode(operands), attributes...

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hlo/text/hlo_text_util.h"
#include "hlo/text/opcodes.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo::text_internal {
namespace {

// Same element type and dimensions, recursively; layouts may differ (XLA
// prints operand shapes with layouts the definition may leave out).
bool SameDimensions(const xla::ShapeProto& a, const xla::ShapeProto& b) {
  if (a.element_type() != b.element_type() ||
      a.dimensions_size() != b.dimensions_size() ||
      a.tuple_shapes_size() != b.tuple_shapes_size()) {
    return false;
  }
  for (int i = 0; i < a.dimensions_size(); ++i) {
    if (a.dimensions(i) != b.dimensions(i)) return false;
  }
  for (int i = 0; i < a.tuple_shapes_size(); ++i) {
    if (!SameDimensions(a.tuple_shapes(i), b.tuple_shapes(i))) return false;
  }
  return true;
}

// Fields XLA serializes even when the text leaves them out.
void SetOpcodeDefaults(PendingInstruction* instruction) {
  xla::HloInstructionProto& proto = instruction->proto;
  const std::string& opcode = proto.opcode();
  if (opcode == "convolution") {
    proto.set_feature_group_count(1);
    proto.set_batch_group_count(1);
  }
  if (opcode == "convolution" || opcode == "dot" || opcode == "ragged-dot") {
    for (int i = 0; i < 2; ++i) {
      proto.mutable_precision_config()->add_operand_precision(
          xla::PrecisionConfig::DEFAULT);
    }
  }
  if (opcode == "ragged-dot") {
    // Its dot dimension numbers live inside ragged_dot_dimension_numbers.
    proto.mutable_ragged_dot_dimension_numbers()
        ->mutable_dot_dimension_numbers();
  }
  if (opcode == "custom-call") {
    proto.set_custom_call_api_version(xla::API_VERSION_ORIGINAL);
  }
  if (opcode == "compare") instruction->default_comparison_type = true;
}

}  // namespace

absl::Status Parser::ParseComputation() {
  lexer_.SkipSpace();
  PendingComputation computation;
  computation.is_entry = lexer_.TryConsumeKeyword("ENTRY");
  lexer_.SkipSpace();
  computation.pos = lexer_.pos();
  computation.name = lexer_.ConsumeName();
  if (computation.name.empty()) {
    return Expected(computation.is_entry ? "computation name"
                                         : "computation name or 'ENTRY'");
  }
  if (lexer_.Peek() == '(') {
    // The signature repeats what the parameters say; skip it.
    const size_t at = lexer_.pos();
    if (!lexer_.SkipBalanced()) return ErrorAt(at, "unbalanced parameter list");
    HLO_RETURN_IF_ERROR(ExpectStr("->"));
    xla::ShapeProto ignored;
    HLO_RETURN_IF_ERROR(ParseShape(&ignored));
  }
  HLO_RETURN_IF_ERROR(Expect('{'));
  while (!lexer_.TryConsume('}')) {
    if (lexer_.AtEnd()) return Expected("instruction or '}'");
    HLO_RETURN_IF_ERROR(ParseInstruction(&computation));
  }
  if (computation.instructions.empty()) {
    return ErrorAt(computation.pos, "computation has no instructions");
  }
  if (lexer_.TryConsume(',')) {
    lexer_.SkipSpace();
    const size_t at = lexer_.pos();
    if (lexer_.ConsumeWord() != "execution_thread") {
      return ExpectedAt(at, "'execution_thread'");
    }
    HLO_RETURN_IF_ERROR(Expect('='));
    HLO_RETURN_IF_ERROR(ParseString(&computation.execution_thread));
  }
  if (computation.root < 0) {
    computation.root = static_cast<int>(computation.instructions.size()) - 1;
  }
  computations_.push_back(std::move(computation));
  return absl::OkStatus();
}

absl::Status Parser::ParseInstruction(PendingComputation* computation) {
  lexer_.SkipSpace();
  const size_t start = lexer_.pos();
  const bool is_root = lexer_.TryConsumeKeyword("ROOT");
  lexer_.SkipSpace();
  const size_t name_pos = lexer_.pos();
  absl::string_view name = lexer_.ConsumeName();
  if (name.empty()) return Expected("instruction name");
  const int index = static_cast<int>(computation->instructions.size());
  if (!computation->by_name.emplace(name, index).second) {
    return ErrorAt(name_pos,
                   absl::StrCat("duplicate instruction name '", name, "'"));
  }
  if (is_root) {
    if (computation->root >= 0) {
      return ErrorAt(start, "computation has more than one ROOT");
    }
    computation->root = index;
  }
  computation->instructions.emplace_back();
  PendingInstruction& instruction = computation->instructions.back();
  instruction.pos = name_pos;
  xla::HloInstructionProto& proto = instruction.proto;
  proto.set_name(std::string(name));
  HLO_RETURN_IF_ERROR(Expect('='));
  HLO_RETURN_IF_ERROR(ParseShape(proto.mutable_shape()));
  lexer_.SkipSpace();
  const size_t opcode_pos = lexer_.pos();
  absl::string_view opcode = lexer_.ConsumeWord();
  if (opcode.empty()) return Expected("opcode");
  if (!IsKnownOpcode(opcode)) {
    return ErrorAt(opcode_pos, absl::StrCat("unknown opcode '", opcode, "'"));
  }
  proto.set_opcode(std::string(opcode));
  HLO_RETURN_IF_ERROR(Expect('('));
  HLO_RETURN_IF_ERROR(ParseOperands(computation, &instruction));
  SetOpcodeDefaults(&instruction);
  while (lexer_.TryConsume(',')) {
    HLO_RETURN_IF_ERROR(ParseAttribute(&instruction));
  }
  return absl::OkStatus();
}

// What stands between the parentheses after the opcode (the '(' is read):
// a literal for constant, a number for parameter, else operands.
absl::Status Parser::ParseOperands(PendingComputation* computation,
                                   PendingInstruction* instruction) {
  xla::HloInstructionProto& proto = instruction->proto;
  if (proto.opcode() == "constant") {
    HLO_RETURN_IF_ERROR(ParseLiteral(proto.shape(), proto.mutable_literal()));
    return Expect(')');
  }
  if (proto.opcode() == "parameter") {
    int64_t number;
    const size_t at = lexer_.pos();
    HLO_RETURN_IF_ERROR(ParseInt(&number));
    if (number < 0) return ErrorAt(at, "negative parameter number");
    proto.set_parameter_number(number);
    return Expect(')');
  }
  if (lexer_.TryConsume(')')) return absl::OkStatus();
  while (true) {
    HLO_RETURN_IF_ERROR(ParseOperand(computation, instruction));
    if (lexer_.TryConsume(')')) return absl::OkStatus();
    if (!lexer_.TryConsume(',')) return Expected("',' or ')'");
  }
}

absl::Status Parser::ParseOperand(PendingComputation* computation,
                                  PendingInstruction* instruction) {
  lexer_.SkipSpace();
  const size_t start = lexer_.pos();
  bool has_shape = false;
  if (lexer_.PeekRaw() == '(') {
    scratch_shape_.Clear();
    HLO_RETURN_IF_ERROR(ParseShape(&scratch_shape_));
    has_shape = true;
  } else {
    // A type name right before '[' starts a shape; anything else is a name.
    absl::string_view word = lexer_.ConsumeWord();
    xla::PrimitiveType type;
    const bool is_shape = !word.empty() && lexer_.PeekRaw() == '[' &&
                          PrimitiveTypeFromName(word, &type);
    lexer_.set_pos(start);
    if (is_shape) {
      scratch_shape_.Clear();
      HLO_RETURN_IF_ERROR(ParseShape(&scratch_shape_));
      has_shape = true;
    }
  }
  lexer_.SkipSpace();
  NameRef ref;
  ref.pos = lexer_.pos();
  ref.name = lexer_.ConsumeName();
  if (ref.name.empty()) return Expected("operand name");
  if (has_shape) {
    // Check the declared shape when the operand is already known.
    auto it = computation->by_name.find(ref.name);
    if (it != computation->by_name.end() &&
        &computation->instructions[it->second] != instruction &&
        !SameDimensions(scratch_shape_,
                        computation->instructions[it->second].proto.shape())) {
      return ErrorAt(start, absl::StrCat("operand '", ref.name,
                                         "' is declared with a shape that "
                                         "differs from its definition"));
    }
  }
  instruction->operands.push_back(ref);
  return absl::OkStatus();
}

}  // namespace tpu::hlo::text_internal
