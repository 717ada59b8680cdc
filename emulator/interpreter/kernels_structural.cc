// Kernel family: constant, tuple, get-tuple-element, copy, opt-barrier,
// domain, tuple-select, replica-id, partition-id, and get-dimension-size /
// set-dimension-size on static shapes.

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
  return MakeConstantKernel(*std::move(literal));
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
  return MakeElementKernel(index);
}

// copy, opt-barrier, domain and async-update: values are immutable once
// produced, so sharing the bytes is a correct copy.
absl::StatusOr<std::unique_ptr<Kernel>> CompileIdentity(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  if (absl::Status s =
          ExpectResultShape(instruction, instruction.operand(0)->shape());
      !s.ok()) {
    return s;
  }
  return MakeForwardKernel(0);
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

// tuple-select(pred[], on_true, on_false): one of two whole values (tuples
// included), chosen by a scalar.
absl::StatusOr<std::unique_ptr<Kernel>> CompileTupleSelect(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 3); !s.ok()) return s;
  if (instruction.operand(0)->shape() != Shape::Scalar(xla::PRED)) {
    return Malformed(absl::StrCat("tuple-select needs a pred[] selector, got ",
                                  instruction.operand(0)->shape().ToString()));
  }
  if (instruction.operand(1)->shape() != instruction.operand(2)->shape()) {
    return Malformed("tuple-select operands must have the same shape");
  }
  if (absl::Status s =
          ExpectResultShape(instruction, instruction.operand(1)->shape());
      !s.ok()) {
    return s;
  }
  return MakeKernel(
      [](KernelContext&,
         absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const bool pick_true = operands[0].value->data<bool>()[0];
        return *operands[pick_true ? 1 : 2].value;
      });
}

// The dimension an operation of the dimension-size family names.
absl::StatusOr<int64_t> SizedDimension(const HloInstruction& instruction) {
  const Shape& operand = instruction.operand(0)->shape();
  if (absl::Status s = ExpectArray(operand, "operand"); !s.ok()) return s;
  if (instruction.proto().dimensions_size() != 1) {
    return Malformed(absl::StrCat(instruction.opcode(),
                                  " names one dimension, got ",
                                  instruction.proto().dimensions_size()));
  }
  const int64_t d = instruction.proto().dimensions(0);
  if (d < 0 || d >= operand.rank()) {
    return Malformed(absl::StrCat("dimension ", d, " out of range for ",
                                  operand.ToString()));
  }
  return d;
}

// get-dimension-size of a static shape is the dimension itself (s32[]).
absl::StatusOr<std::unique_ptr<Kernel>> CompileGetDimensionSize(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  absl::StatusOr<int64_t> d = SizedDimension(instruction);
  if (!d.ok()) return d.status();
  if (absl::Status s = ExpectResultShape(instruction, Shape::Scalar(xla::S32));
      !s.ok()) {
    return s;
  }
  return MakeConstantKernel(Literal::FromVector<int32_t>(
      xla::S32, {},
      {static_cast<int32_t>(instruction.operand(0)->shape().dimensions(*d))}));
}

// set-dimension-size with a static result: the data is unchanged (a dynamic
// result type is rejected before kernels are chosen; see executable.cc).
absl::StatusOr<std::unique_ptr<Kernel>> CompileSetDimensionSize(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  if (absl::Status s = SizedDimension(instruction).status(); !s.ok()) {
    return s;
  }
  if (instruction.operand(1)->shape() != Shape::Scalar(xla::S32)) {
    return Malformed(
        absl::StrCat("set-dimension-size takes an s32[] size, got ",
                     instruction.operand(1)->shape().ToString()));
  }
  if (absl::Status s =
          ExpectResultShape(instruction, instruction.operand(0)->shape());
      !s.ok()) {
    return s;
  }
  return MakeForwardKernel(0);
}

}  // namespace

void RegisterStructuralKernels(KernelRegistry& registry) {
  registry.Register("constant", &CompileConstant);
  registry.Register("tuple", &CompileTuple);
  registry.Register("get-tuple-element", &CompileGetTupleElement);
  registry.Register("copy", &CompileIdentity);
  // XLA's opcode name (kOptimizationBarrier prints as "opt-barrier").
  registry.Register("opt-barrier", &CompileIdentity);
  registry.Register("domain", &CompileIdentity);
  // The update of an async operation run synchronously (kernels_async.cc).
  registry.Register("async-update", &CompileIdentity);
  registry.Register("tuple-select", &CompileTupleSelect);
  registry.Register("get-dimension-size", &CompileGetDimensionSize);
  registry.Register("set-dimension-size", &CompileSetDimensionSize);
  registry.Register("replica-id", &CompileDeviceId<true>);
  registry.Register("partition-id", &CompileDeviceId<false>);
}

}  // namespace tpu::emulator::interpreter
