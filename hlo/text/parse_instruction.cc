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
  if (computation->by_name.contains(name)) {
    return ErrorAt(name_pos,
                   absl::StrCat("duplicate instruction name '", name, "'"));
  }
  if (is_root && computation->root >= 0) {
    return ErrorAt(start, "computation has more than one ROOT");
  }
  PendingInstruction instruction;
  instruction.pos = name_pos;
  instruction.proto.set_name(std::string(name));
  HLO_RETURN_IF_ERROR(Expect('='));
  HLO_RETURN_IF_ERROR(ParseInstructionRhs(computation, &instruction,
                                          /*allow_attributes=*/true));
  // Nested instructions were added while reading the operands, so this one
  // comes after them, as XLA orders them.
  absl::StatusOr<int> index =
      AddInstruction(computation, std::move(instruction));
  if (!index.ok()) return index.status();
  if (is_root) computation->root = *index;
  return absl::OkStatus();
}

absl::Status Parser::ParseInstructionRhs(PendingComputation* computation,
                                         PendingInstruction* instruction,
                                         bool allow_attributes) {
  xla::HloInstructionProto& proto = instruction->proto;
  lexer_.SkipSpace();
  // A type name never is an opcode: let ParseShape say what is missing.
  const bool has_shape = StartsShape() || StartsTypeName();
  if (has_shape) HLO_RETURN_IF_ERROR(ParseShape(proto.mutable_shape()));
  lexer_.SkipSpace();
  const size_t opcode_pos = lexer_.pos();
  HLO_RETURN_IF_ERROR(ParseOpcode(has_shape, instruction));
  HLO_RETURN_IF_ERROR(Expect('('));
  HLO_RETURN_IF_ERROR(ParseOperands(computation, instruction));
  SetOpcodeDefaults(instruction);
  while (allow_attributes && lexer_.TryConsume(',')) {
    HLO_RETURN_IF_ERROR(ParseAttribute(instruction));
  }
  if (instruction->async_wrapped_opcode.empty()) return absl::OkStatus();
  return FinishAsyncShorthand(computation, instruction, opcode_pos);
}

// The opcode; without a shape before it, only one whose shape XLA infers.
// For the async shorthand the proto gets the wrapped opcode until the
// attributes are read, so that they mean what they mean for that op.
absl::Status Parser::ParseOpcode(bool has_shape,
                                 PendingInstruction* instruction) {
  const size_t opcode_pos = lexer_.pos();
  absl::string_view opcode = lexer_.ConsumeWord();
  if (!has_shape && (opcode.empty() || !CanInferShape(opcode))) {
    // Not an opcode XLA infers the shape of: the shape is what is missing.
    return ExpectedAt(opcode_pos, "shape");
  }
  if (opcode.empty()) return Expected("opcode");
  instruction->infer_shape = !has_shape;
  absl::string_view wrapped;
  if (AsyncShorthandWrappedOpcode(opcode, &wrapped)) {
    instruction->async_wrapped_opcode = std::string(wrapped);
    instruction->async_opcode = std::string(AsyncOpcodeOfShorthand(opcode));
    instruction->proto.set_opcode(std::string(wrapped));
    return absl::OkStatus();
  }
  if (!IsKnownOpcode(opcode)) {
    return ErrorAt(opcode_pos, absl::StrCat("unknown opcode '", opcode, "'"));
  }
  instruction->proto.set_opcode(std::string(opcode));
  return absl::OkStatus();
}

absl::StatusOr<int> Parser::AddInstruction(PendingComputation* computation,
                                           PendingInstruction instruction) {
  const int index = static_cast<int>(computation->instructions.size());
  computation->instructions.push_back(std::move(instruction));
  PendingInstruction& added = computation->instructions.back();
  if (!computation->by_name.emplace(added.proto.name(), index).second) {
    return ErrorAt(added.pos, absl::StrCat("duplicate instruction name '",
                                           added.proto.name(), "'"));
  }
  return index;
}

absl::string_view Parser::UniqueName(const PendingComputation& computation,
                                     absl::string_view base) {
  std::string name(base);
  for (int i = 1; computation.by_name.contains(name); ++i) {
    name = absl::StrCat(base, ".", i);
  }
  owned_names_.push_back(std::move(name));
  return owned_names_.back();
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
  const bool has_shape = StartsShape();
  if (has_shape) {
    scratch_shape_.Clear();
    HLO_RETURN_IF_ERROR(ParseShape(&scratch_shape_));
  }
  lexer_.SkipSpace();
  NameRef ref;
  ref.pos = lexer_.pos();
  const bool percent = lexer_.PeekRaw() == '%';
  ref.name = lexer_.ConsumeName();
  if (ref.name.empty()) return Expected("operand name");
  if (!percent && lexer_.Peek() == '(') {
    // An opcode, not a name: an instruction written inline.
    lexer_.set_pos(start);
    HLO_RETURN_IF_ERROR(ParseNestedInstruction(computation, &ref));
    instruction->operands.push_back(ref);
    return absl::OkStatus();
  }
  if (has_shape) {
    // Check the declared shape when the operand is already known.
    auto it = computation->by_name.find(ref.name);
    if (it != computation->by_name.end() &&
        !computation->instructions[it->second].infer_shape &&
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

// Named "<opcode>.anon" (then ".anon.1", ...), as XLA names them.
absl::Status Parser::ParseNestedInstruction(PendingComputation* computation,
                                            NameRef* ref) {
  NestingScope nesting(this);
  HLO_RETURN_IF_ERROR(nesting.status());
  lexer_.SkipSpace();
  PendingInstruction nested;
  nested.pos = lexer_.pos();
  HLO_RETURN_IF_ERROR(ParseInstructionRhs(computation, &nested,
                                          /*allow_attributes=*/false));
  ref->name =
      UniqueName(*computation, absl::StrCat(nested.proto.opcode(), ".anon"));
  ref->pos = nested.pos;
  nested.proto.set_name(std::string(ref->name));
  return AddInstruction(computation, std::move(nested)).status();
}

// A shape starts with '(' or with a type name right before '['.
bool Parser::StartsShape() {
  lexer_.SkipSpace();
  return lexer_.PeekRaw() == '(' || StartsArrayShape();
}

bool Parser::StartsTypeName() {
  lexer_.SkipSpace();
  const size_t at = lexer_.pos();
  xla::PrimitiveType type;
  const bool is_type = PrimitiveTypeFromName(lexer_.ConsumeWord(), &type);
  lexer_.set_pos(at);
  return is_type;
}

bool Parser::StartsArrayShape() {
  lexer_.SkipSpace();
  const size_t at = lexer_.pos();
  absl::string_view word = lexer_.ConsumeWord();
  xla::PrimitiveType type;
  const bool is_shape = !word.empty() && lexer_.PeekRaw() == '[' &&
                        PrimitiveTypeFromName(word, &type);
  lexer_.set_pos(at);
  return is_shape;
}

}  // namespace tpu::hlo::text_internal
