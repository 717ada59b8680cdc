#include "hlo/hlo_module.h"

#include "gtest/gtest.h"

namespace tpu {
namespace {

xla::HloInstructionProto* Add(xla::HloComputationProto* c, int64_t id,
                              const std::string& opcode,
                              std::vector<int64_t> operands) {
  xla::HloInstructionProto* i = c->add_instructions();
  i->set_id(id);
  i->set_name(opcode + "." + std::to_string(id));
  i->set_opcode(opcode);
  *i->mutable_shape() = Shape::Array(xla::F32, {2}).ToProto();
  for (int64_t o : operands) i->add_operand_ids(o);
  return i;
}

// entry(p0, p1) = add(p0, p1), written out of order on purpose.
xla::HloModuleProto TwoParamAdd() {
  xla::HloModuleProto m;
  m.set_name("m");
  xla::HloComputationProto* c = m.add_computations();
  c->set_name("entry");
  c->set_id(7);
  Add(c, 3, "add", {1, 2});
  Add(c, 2, "parameter", {})->set_parameter_number(1);
  Add(c, 1, "parameter", {})->set_parameter_number(0);
  c->set_root_id(3);
  m.set_entry_computation_id(7);
  m.set_entry_computation_name("entry");
  return m;
}

TEST(HloModuleTest, LoadsAndOrders) {
  absl::StatusOr<std::unique_ptr<HloModule>> m =
      HloModule::FromProto(TwoParamAdd());
  ASSERT_TRUE(m.ok()) << m.status();
  const HloComputation* entry = (*m)->entry();
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->root()->opcode(), "add");
  ASSERT_EQ(entry->num_parameters(), 2);
  EXPECT_EQ(entry->parameters()[0]->id(), 1);
  EXPECT_EQ(entry->instructions_in_order().back()->id(), 3);
  xla::ProgramShapeProto ps = entry->ComputeProgramShape();
  EXPECT_EQ(ps.parameters_size(), 2);
  EXPECT_EQ(ps.result().dimensions(0), 2);
}

void ExpectInvalid(const xla::HloModuleProto& m, const std::string& needle) {
  absl::Status status = HloModule::FromProto(m).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find(needle), std::string::npos) << status;
}

TEST(HloModuleTest, RejectsMalformedModules) {
  xla::HloModuleProto m = TwoParamAdd();
  m.mutable_computations(0)->mutable_instructions(0)->set_operand_ids(1, 99);
  ExpectInvalid(m, "instruction add.3: operand id 99");

  m = TwoParamAdd();
  m.mutable_computations(0)->mutable_instructions(1)->set_parameter_number(2);
  ExpectInvalid(m, "not dense");

  m = TwoParamAdd();
  m.mutable_computations(0)->mutable_instructions(1)->set_parameter_number(0);
  ExpectInvalid(m, "parameter number 0 is also used");

  m = TwoParamAdd();
  m.mutable_computations(0)
      ->mutable_instructions(0)
      ->add_called_computation_ids(42);
  ExpectInvalid(m, "called computation id 42");

  m = TwoParamAdd();
  m.mutable_computations(0)->mutable_instructions(1)->add_operand_ids(3);
  ExpectInvalid(m, "cycle");

  m = TwoParamAdd();
  m.mutable_computations(0)
      ->mutable_instructions(0)
      ->mutable_shape()
      ->set_dimensions(0, -3);
  ExpectInvalid(m, "computation entry, instruction add.3: bad shape");

  m = TwoParamAdd();
  m.mutable_computations(0)->set_root_id(55);
  ExpectInvalid(m, "root id 55");

  m = TwoParamAdd();
  m.set_entry_computation_name("nope");
  ExpectInvalid(m, "entry computation nope");

  m = TwoParamAdd();
  m.mutable_computations(0)
      ->mutable_instructions(0)
      ->add_called_computation_ids(7);
  ExpectInvalid(m, "recursion");
}

}  // namespace
}  // namespace tpu
