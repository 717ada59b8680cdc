#include "tests/driver_conformance/hlo_programs.h"

#include <string>

namespace tpu {
namespace conformance {
namespace {

xla::HloInstructionProto* AddInstruction(xla::HloComputationProto* computation,
                                         int64_t id, const std::string& name,
                                         const std::string& opcode,
                                         const xla::ShapeProto& shape) {
  auto* instruction = computation->add_instructions();
  instruction->set_id(id);
  instruction->set_name(name);
  instruction->set_opcode(opcode);
  *instruction->mutable_shape() = shape;
  return instruction;
}

xla::HloProto Wrap(xla::HloComputationProto computation) {
  xla::HloProto proto;
  xla::HloModuleProto* module = proto.mutable_hlo_module();
  module->set_name("conformance");
  module->set_id(1);
  module->set_entry_computation_name(computation.name());
  module->set_entry_computation_id(computation.id());
  *module->mutable_host_program_shape() = computation.program_shape();
  *module->add_computations() = std::move(computation);
  return proto;
}

// The parameters and add shared by both programs; returns the add's id.
xla::HloComputationProto AddComputation(int64_t n) {
  xla::HloComputationProto computation;
  computation.set_name("main");
  computation.set_id(1);
  const xla::ShapeProto shape = F32Array(n);
  AddInstruction(&computation, 1, "p0", "parameter", shape)
      ->set_parameter_number(0);
  AddInstruction(&computation, 2, "p1", "parameter", shape)
      ->set_parameter_number(1);
  auto* add = AddInstruction(&computation, 3, "sum", "add", shape);
  add->add_operand_ids(1);
  add->add_operand_ids(2);
  xla::ProgramShapeProto* program = computation.mutable_program_shape();
  *program->add_parameters() = shape;
  *program->add_parameters() = shape;
  program->add_parameter_names("p0");
  program->add_parameter_names("p1");
  return computation;
}

}  // namespace

xla::ShapeProto F32Array(int64_t n) {
  xla::ShapeProto shape;
  shape.set_element_type(xla::F32);
  shape.add_dimensions(n);
  shape.add_is_dynamic_dimension(false);
  xla::LayoutProto* layout = shape.mutable_layout();
  layout->add_minor_to_major(0);
  layout->set_format(xla::DENSE);
  return shape;
}

xla::HloProto AddProgram(int64_t n) {
  xla::HloComputationProto computation = AddComputation(n);
  computation.set_root_id(3);
  *computation.mutable_program_shape()->mutable_result() = F32Array(n);
  return Wrap(std::move(computation));
}

xla::HloProto AddAndTupleProgram(int64_t n) {
  xla::HloComputationProto computation = AddComputation(n);
  xla::ShapeProto tuple_shape;
  tuple_shape.set_element_type(xla::TUPLE);
  *tuple_shape.add_tuple_shapes() = F32Array(n);
  *tuple_shape.add_tuple_shapes() = F32Array(n);
  auto* tuple = AddInstruction(&computation, 4, "result", "tuple", tuple_shape);
  tuple->add_operand_ids(3);
  tuple->add_operand_ids(1);
  computation.set_root_id(4);
  *computation.mutable_program_shape()->mutable_result() = tuple_shape;
  return Wrap(std::move(computation));
}

}  // namespace conformance
}  // namespace tpu
