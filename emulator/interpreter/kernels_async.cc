// Kernel family: asynchronous wrappers, run synchronously. async-start runs
// its called computation at once, async-done passes the result along
// (async-update is the identity of kernels_structural.cc), and
// copy-start/copy-done copy (values are immutable, so the copy shares the
// bytes). A program cannot observe the difference: XLA orders every use of
// the result after the done.
//
// Shapes, as XLA's shape inference builds them:
//   async-start: ((operands...), result, context...) with the context
//                elements (often s32[] or u32[]) left as zeros here;
//   async-update: its operand's shape; async-done: the result;
//   copy-start: (destination, source, u32[] context); copy-done: the
//               destination.

#include "emulator/interpreter/kernel_util.h"
#include "emulator/interpreter/plan.h"

namespace tpu::emulator::interpreter {
namespace {

// Checks that `shape` is a tuple whose element `index` is `expected`.
absl::Status ExpectTupleElement(const Shape& shape, int64_t index,
                                const Shape& expected, absl::string_view what) {
  if (!shape.IsTuple() || shape.tuple_size() <= index ||
      shape.tuple_shapes()[index] != expected) {
    return Malformed(absl::StrCat(what, " must be element ", index, " of ",
                                  shape.ToString(), ", expected ",
                                  expected.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileAsyncStart(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (instruction.called_computations().size() != 1) {
    return Malformed(absl::StrCat("async-start calls one computation, got ",
                                  instruction.called_computations().size()));
  }
  const HloComputation& callee = *instruction.called_computations()[0];
  std::vector<Shape> operand_shapes;
  for (const HloInstruction* operand : instruction.operands()) {
    operand_shapes.push_back(operand->shape());
  }
  if (callee.ParameterShapes() != operand_shapes) {
    return Malformed(
        absl::StrCat("async-start operands do not match the "
                     "parameters of ",
                     callee.name()));
  }
  const Shape& shape = instruction.shape();
  if (absl::Status s = ExpectTupleElement(
          shape, 0, Shape::Tuple(operand_shapes), "the operands");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ExpectTupleElement(shape, 1, callee.root()->shape(), "the result");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<const CompiledComputation*> plan = compiler.Compile(&callee);
  if (!plan.ok()) return plan.status();
  return MakeKernel([plan = *plan, shape](KernelContext& context,
                                          absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    std::vector<Literal> arguments;
    for (const Operand& operand : operands) arguments.push_back(*operand.value);
    std::vector<Literal> parts;
    parts.push_back(Literal::Tuple(arguments));
    absl::StatusOr<Literal> result = context.Call(*plan, std::move(arguments));
    if (!result.ok()) return result.status();
    parts.push_back(*std::move(result));
    for (int64_t i = 2; i < shape.tuple_size(); ++i) {
      parts.push_back(Literal::Zeros(shape.tuple_shapes()[i]));
    }
    return Literal::Tuple(std::move(parts));
  });
}

// async-done returns element 1 of the start's tuple; copy-done element 0.
template <int kIndex>
absl::StatusOr<std::unique_ptr<Kernel>> CompileDone(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  if (absl::Status s =
          ExpectTupleElement(instruction.operand(0)->shape(), kIndex,
                             instruction.shape(), "the result");
      !s.ok()) {
    return s;
  }
  return MakeElementKernel(kIndex);
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileCopyStart(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& shape = instruction.shape();
  for (int64_t i : {0, 1}) {
    if (absl::Status s = ExpectTupleElement(shape, i, operand, "the operand");
        !s.ok()) {
      return s;
    }
  }
  return MakeKernel(
      [shape](KernelContext&,
              absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        std::vector<Literal> parts = {*operands[0].value, *operands[0].value};
        for (int64_t i = 2; i < shape.tuple_size(); ++i) {
          parts.push_back(Literal::Zeros(shape.tuple_shapes()[i]));
        }
        return Literal::Tuple(std::move(parts));
      });
}

}  // namespace

void RegisterAsyncKernels(KernelRegistry& registry) {
  registry.Register("async-start", &CompileAsyncStart);
  registry.Register("async-done", &CompileDone<1>);
  registry.Register("copy-start", &CompileCopyStart);
  registry.Register("copy-done", &CompileDone<0>);
}

}  // namespace tpu::emulator::interpreter
