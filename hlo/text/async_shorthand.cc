// The async shorthand: "s = ((f32[]), f32[], u32[]) negate-start(x)",
// "negate-update(s)", "negate-done(u)". XLA's parser turns it into an
// async-start that calls a computation wrapping the op, named
// "async_wrapped", with parameters "async_param"... for the operands and the
// op itself as root "async_op" of shape {1} of the start's shape; the op's
// own attributes go to the wrapped op, while metadata, backend_config,
// frontend_attributes and statistics stay on the start too, and the sharding
// only there. -update and -done call the same computation. So the
// interpreter only ever sees standard async-start/-update/-done.

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo::text_internal {
namespace {

// The fields XLA keeps on the async-start itself.
xla::HloInstructionProto AsyncStartProto(const xla::HloInstructionProto& op) {
  xla::HloInstructionProto start;
  start.set_name(op.name());
  *start.mutable_shape() = op.shape();
  start.set_opcode("async-start");
  if (op.has_metadata()) *start.mutable_metadata() = op.metadata();
  start.set_backend_config(op.backend_config());
  if (op.has_frontend_attributes()) {
    *start.mutable_frontend_attributes() = op.frontend_attributes();
  }
  if (op.has_statistics_viz()) {
    *start.mutable_statistics_viz() = op.statistics_viz();
  }
  if (op.has_sharding()) *start.mutable_sharding() = op.sharding();
  return start;
}

}  // namespace

absl::Status Parser::FinishAsyncShorthand(PendingComputation* computation,
                                          PendingInstruction* instruction,
                                          size_t opcode_pos) {
  if (instruction->async_opcode == "async-start") {
    return WrapAsyncStart(instruction, opcode_pos);
  }
  return LinkAsyncUpdateOrDone(*computation, instruction, opcode_pos);
}

absl::Status Parser::WrapAsyncStart(PendingInstruction* start,
                                    size_t opcode_pos) {
  const xla::ShapeProto& shape = start->proto.shape();
  if (shape.element_type() != xla::TUPLE || shape.tuple_shapes_size() < 2 ||
      shape.tuple_shapes(0).element_type() != xla::TUPLE) {
    return ErrorAt(opcode_pos,
                   "an async start needs the shape ((operands), outputs, "
                   "state)");
  }
  PendingComputation wrapped;
  wrapped.synthesized = true;
  wrapped.pos = opcode_pos;
  owned_names_.push_back("async_wrapped");  // Made unique in Resolve.
  wrapped.name = owned_names_.back();
  PendingInstruction op;
  op.pos = start->pos;
  for (size_t i = 0; i < start->operands.size(); ++i) {
    // The shape is the operand's, known after resolution.
    const absl::string_view name = UniqueName(wrapped, "async_param");
    PendingInstruction parameter;
    parameter.pos = start->pos;
    parameter.proto.set_name(std::string(name));
    parameter.proto.set_opcode("parameter");
    parameter.proto.set_parameter_number(static_cast<int64_t>(i));
    op.operands.push_back({name, start->pos});
    HLO_RETURN_IF_ERROR(
        AddInstruction(&wrapped, std::move(parameter)).status());
  }
  op.proto = start->proto;
  op.proto.set_name("async_op");
  *op.proto.mutable_shape() = shape.tuple_shapes(1);
  op.proto.clear_sharding();
  op.called = std::move(start->called);
  op.default_comparison_type = start->default_comparison_type;
  HLO_RETURN_IF_ERROR(AddInstruction(&wrapped, std::move(op)).status());
  wrapped.root = static_cast<int>(wrapped.instructions.size()) - 1;

  start->proto = AsyncStartProto(start->proto);
  start->default_comparison_type = false;
  start->called = {
      {wrapped.name, opcode_pos, static_cast<int>(computations_.size())}};
  computations_.push_back(std::move(wrapped));
  return absl::OkStatus();
}

// The operand must be the start (or an update) of the same wrapped op,
// defined before; its computation is this one's.
absl::Status Parser::LinkAsyncUpdateOrDone(
    const PendingComputation& computation, PendingInstruction* instruction,
    size_t opcode_pos) {
  const std::string what =
      absl::StrCat(instruction->async_wrapped_opcode, "-start or ",
                   instruction->async_wrapped_opcode, "-update");
  if (instruction->operands.size() != 1) {
    return ErrorAt(opcode_pos,
                   absl::StrCat("expected one operand, the ", what));
  }
  const NameRef& operand = instruction->operands[0];
  auto it = computation.by_name.find(operand.name);
  const PendingInstruction* previous =
      it == computation.by_name.end() ? nullptr
                                      : &computation.instructions[it->second];
  if (previous == nullptr || previous->async_opcode.empty() ||
      previous->async_opcode == "async-done" ||
      previous->async_wrapped_opcode != instruction->async_wrapped_opcode) {
    return ErrorAt(operand.pos, absl::StrCat("expected an earlier ", what,
                                             ", got '", operand.name, "'"));
  }
  instruction->proto.set_opcode(instruction->async_opcode);
  instruction->called = previous->called;
  return absl::OkStatus();
}

}  // namespace tpu::hlo::text_internal
