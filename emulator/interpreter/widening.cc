// Running instructions on narrow types through their wide types
// (narrow_types.h): the instruction is copied into a small module of its
// own whose entry takes the widened operands, its called computations
// copied along with every narrow shape and constant widened; that module is
// compiled with the registry's ordinary kernels and called at run time
// between a widening of the operands and a narrowing of the result.

#include <deque>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "emulator/interpreter/kernel_util.h"
#include "emulator/interpreter/narrow_types.h"
#include "emulator/interpreter/plan.h"

namespace tpu::emulator::interpreter {
namespace {

// Instructions that move narrow values without looking at them, or that
// narrow_types.cc converts itself.
bool RunsAsIs(const std::string& opcode) {
  static const auto* const kAsIs = new absl::flat_hash_set<std::string>({
      "parameter",   "constant",        "tuple",       "get-tuple-element",
      "convert",     "bitcast-convert", "copy",        "opt-barrier",
      "domain",      "add-dependency",  "send",        "send-done",
      "recv",        "recv-done",       "copy-start",  "copy-done",
      "async-start", "async-update",    "async-done",  "call",
      "fusion",      "while",           "conditional", "tuple-select",
      "custom-call", "after-all",
  });
  return kAsIs->contains(opcode);
}

xla::ShapeProto WidenShapeProto(const xla::ShapeProto& proto,
                                xla::PrimitiveType s4_as,
                                xla::PrimitiveType u4_as) {
  absl::StatusOr<Shape> shape = Shape::FromProto(proto);
  if (!shape.ok() || !HasNarrowType(*shape)) return proto;
  return WidenShape(*shape, s4_as, u4_as).ToProto();
}

// The instruction proto with narrow shapes (and constants) widened.
xla::HloInstructionProto WidenInstruction(xla::HloInstructionProto proto,
                                          xla::PrimitiveType s4_as,
                                          xla::PrimitiveType u4_as) {
  *proto.mutable_shape() = WidenShapeProto(proto.shape(), s4_as, u4_as);
  if (proto.opcode() == "constant") {
    absl::StatusOr<Literal> literal = Literal::FromProto(proto.literal());
    if (literal.ok() && HasNarrowType(literal->shape())) {
      *proto.mutable_literal() = Widen(*literal).ToProto();
    }
  }
  return proto;
}

// The choice of wide types for the instruction's own operands and result:
// the bit operations that see above bit 3 read s4 zero-extended, and the
// arithmetic shift reads u4 sign-extended.
std::pair<xla::PrimitiveType, xla::PrimitiveType> WideIntTypes(
    const std::string& opcode) {
  if (opcode == "shift-right-logical" || opcode == "popcnt" ||
      opcode == "count-leading-zeros" || opcode == "clz") {
    return {xla::U8, xla::U8};
  }
  if (opcode == "shift-right-arithmetic") return {xla::S8, xla::S8};
  return {xla::S8, xla::U8};
}

// Everything the widened kernel owns: the module and its plans.
struct WidenedProgram {
  std::unique_ptr<HloModule> module;
  CompiledComputations compiled;
  const CompiledComputation* entry = nullptr;
  std::vector<Shape> wide_operands;
  Shape result;                // the instruction's own (narrow) shape
  bool subtract_four = false;  // count-leading-zeros on a 4-bit type
};

// The computations `instruction` calls, transitively, as widened protos.
void AddCalledComputations(const HloInstruction& instruction,
                           xla::HloModuleProto& module) {
  absl::flat_hash_set<const HloComputation*> seen;
  std::deque<const HloComputation*> queue(
      instruction.called_computations().begin(),
      instruction.called_computations().end());
  while (!queue.empty()) {
    const HloComputation* c = queue.front();
    queue.pop_front();
    if (!seen.insert(c).second) continue;
    xla::HloComputationProto* proto = module.add_computations();
    proto->set_name(c->name());
    proto->set_id(c->id());
    proto->set_root_id(c->root()->id());
    for (const HloInstruction* i : c->instructions_in_order()) {
      *proto->add_instructions() =
          WidenInstruction(i->proto(), xla::S8, xla::U8);
      for (const HloComputation* callee : i->called_computations()) {
        queue.push_back(callee);
      }
    }
  }
}

// The module: called computations, then an entry taking the widened
// operands and applying the widened instruction to them.
xla::HloModuleProto BuildWidenedModule(const HloInstruction& instruction,
                                       std::vector<Shape>& wide_operands) {
  const auto [s4_as, u4_as] = WideIntTypes(instruction.opcode());
  xla::HloModuleProto module;
  module.set_name(absl::StrCat("widened_", instruction.name()));
  AddCalledComputations(instruction, module);
  // Ids above every id of the original module.
  int64_t next_id = int64_t{1} << 40;
  xla::HloComputationProto* entry = module.add_computations();
  entry->set_name(absl::StrCat("widened_", instruction.name(), "_entry"));
  entry->set_id(next_id++);
  xla::HloInstructionProto op =
      WidenInstruction(instruction.proto(), s4_as, u4_as);
  op.clear_operand_ids();
  op.clear_control_predecessor_ids();
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    const Shape wide =
        WidenShape(instruction.operand(i)->shape(), s4_as, u4_as);
    wide_operands.push_back(wide);
    xla::HloInstructionProto* p = entry->add_instructions();
    p->set_name(absl::StrCat("operand_", i));
    p->set_opcode("parameter");
    p->set_parameter_number(i);
    p->set_id(next_id++);
    *p->mutable_shape() = wide.ToProto();
    op.add_operand_ids(p->id());
  }
  op.set_id(next_id++);
  entry->set_root_id(op.id());
  *entry->add_instructions() = std::move(op);
  module.set_entry_computation_name(entry->name());
  module.set_entry_computation_id(entry->id());
  return module;
}

}  // namespace

bool NeedsWidening(const HloInstruction& instruction) {
  if (RunsAsIs(instruction.opcode())) return false;
  if (HasNarrowType(instruction.shape())) return true;
  for (const HloInstruction* operand : instruction.operands()) {
    if (HasNarrowType(operand->shape())) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileWidened(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  auto program = std::make_shared<WidenedProgram>();
  const xla::HloModuleProto proto =
      BuildWidenedModule(instruction, program->wide_operands);
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      HloModule::FromProto(proto);
  if (!module.ok()) return module.status();
  program->module = *std::move(module);
  // The widened module shares the outer compile's options, kernels and
  // random state.
  PlanningCompiler widened(compiler.options(), compiler.registry(),
                           &compiler.rng_state());
  absl::StatusOr<const CompiledComputation*> entry =
      widened.Compile(program->module->entry());
  if (!entry.ok()) {
    // The entry's only instruction is the original one: its message stands.
    const absl::Status& s = entry.status();
    const absl::string_view message = s.message();
    const size_t colon = message.find("): ");
    return absl::Status(s.code(), colon == absl::string_view::npos
                                      ? message
                                      : message.substr(colon + 3));
  }
  program->entry = *entry;
  program->compiled = std::move(widened).Take();
  program->result = instruction.shape();
  program->subtract_four = (instruction.opcode() == "count-leading-zeros" ||
                            instruction.opcode() == "clz") &&
                           IsNarrowInt(instruction.shape().element_type());
  return MakeKernel(
      [program](KernelContext& context,
                absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        std::vector<Literal> wide;
        for (size_t i = 0; i < operands.size(); ++i) {
          wide.push_back(
              WidenTo(*operands[i].value, program->wide_operands[i]));
        }
        absl::StatusOr<Literal> result =
            context.Call(*program->entry, std::move(wide));
        if (!result.ok()) return result.status();
        if (program->subtract_four) {
          // clz counted the four zero bits above a 4-bit value.
          for (uint8_t& v : result->mutable_data<uint8_t>()) v -= 4;
        }
        return Narrow(*result, program->result);
      });
}

}  // namespace tpu::emulator::interpreter
