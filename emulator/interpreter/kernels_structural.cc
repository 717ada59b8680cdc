// Kernel family: constant, tuple, get-tuple-element, copy, opt-barrier,
// replica-id, partition-id.

#include "emulator/interpreter/kernel_util.h"

namespace tpu::emulator::interpreter {
namespace {

absl::StatusOr<std::unique_ptr<Kernel>> CompileConstant(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 0); !s.ok()) return s;
  absl::StatusOr<Literal> literal =
      Literal::FromProto(instruction.proto().literal());
  if (!literal.ok()) {
    return Malformed(
        absl::StrCat("bad constant literal: ", literal.status().message()));
  }
  if (literal->shape() != instruction.shape()) {
    return Malformed(absl::StrCat(
        "constant literal has shape ", literal->shape().ToString(),
        " but the instruction has ", instruction.shape().ToString()));
  }
  Literal value = *std::move(literal);
  // Results share the constant's bytes; the shared count keeps kernels from
  // ever writing into them.
  return MakeKernel([value](KernelContext&, absl::Span<const Operand>)
                        -> absl::StatusOr<Literal> { return value; });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileTuple(
    const HloInstruction& instruction, KernelCompiler&) {
  std::vector<Shape> shapes;
  for (const HloInstruction* operand : instruction.operands()) {
    shapes.push_back(operand->shape());
  }
  if (absl::Status s =
          ExpectResultShape(instruction, Shape::Tuple(std::move(shapes)));
      !s.ok()) {
    return s;
  }
  return MakeKernel(
      [](KernelContext&,
         absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        std::vector<Literal> elements;
        elements.reserve(operands.size());
        for (const Operand& operand : operands)
          elements.push_back(*operand.value);
        return Literal::Tuple(std::move(elements));
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileGetTupleElement(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& tuple = instruction.operand(0)->shape();
  const int64_t index = instruction.proto().tuple_index();
  if (!tuple.IsTuple()) {
    return Malformed(absl::StrCat("get-tuple-element operand is not a tuple: ",
                                  tuple.ToString()));
  }
  if (index < 0 || index >= tuple.tuple_size()) {
    return Malformed(absl::StrCat("tuple index ", index, " out of range for ",
                                  tuple.ToString()));
  }
  if (absl::Status s =
          ExpectResultShape(instruction, tuple.tuple_shapes()[index]);
      !s.ok()) {
    return s;
  }
  return MakeKernel(
      [index](KernelContext&,
              absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        return operands[0].value->element(index);
      });
}

// copy and opt-barrier: values are immutable once produced, so
// sharing the bytes is a correct copy.
absl::StatusOr<std::unique_ptr<Kernel>> CompileIdentity(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  if (absl::Status s =
          ExpectResultShape(instruction, instruction.operand(0)->shape());
      !s.ok()) {
    return s;
  }
  return MakeKernel(
      [](KernelContext&,
         absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        return *operands[0].value;
      });
}

template <bool kReplica>
absl::StatusOr<std::unique_ptr<Kernel>> CompileDeviceId(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 0); !s.ok()) return s;
  if (absl::Status s = ExpectResultShape(instruction, Shape::Scalar(xla::U32));
      !s.ok()) {
    return s;
  }
  return MakeKernel([](KernelContext& context,
                       absl::Span<const Operand>) -> absl::StatusOr<Literal> {
    uint32_t id =
        static_cast<uint32_t>(kReplica ? context.execution().replica_id
                                       : context.execution().partition_id);
    return Literal::FromVector<uint32_t>(xla::U32, {}, {id});
  });
}

}  // namespace

void RegisterStructuralKernels(KernelRegistry& registry) {
  registry.Register("constant", &CompileConstant);
  registry.Register("tuple", &CompileTuple);
  registry.Register("get-tuple-element", &CompileGetTupleElement);
  registry.Register("copy", &CompileIdentity);
  // XLA's opcode name (kOptimizationBarrier prints as "opt-barrier").
  registry.Register("opt-barrier", &CompileIdentity);
  registry.Register("replica-id", &CompileDeviceId<true>);
  registry.Register("partition-id", &CompileDeviceId<false>);
}

}  // namespace tpu::emulator::interpreter
