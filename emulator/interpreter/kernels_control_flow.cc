// Kernel family: call, fusion, while, conditional, map.

#include <cstring>

#include "emulator/interpreter/kernel_util.h"
#include "emulator/interpreter/plan.h"

namespace tpu::emulator::interpreter {
namespace {

absl::Status ExpectCalled(const HloInstruction& instruction, int64_t n) {
  if (static_cast<int64_t>(instruction.called_computations().size()) != n) {
    return Malformed(absl::StrCat(instruction.opcode(), " calls ", n,
                                  " computation", n == 1 ? "" : "s", ", got ",
                                  instruction.called_computations().size()));
  }
  return absl::OkStatus();
}

// The callee's parameters must be the operands' shapes and its root the
// instruction's shape.
absl::Status ExpectSignature(const HloComputation& callee,
                             const std::vector<Shape>& parameters,
                             const Shape& result) {
  std::vector<Shape> actual = callee.ParameterShapes();
  if (actual != parameters) {
    std::vector<std::string> want, got;
    for (const Shape& s : parameters) want.push_back(s.ToString());
    for (const Shape& s : actual) got.push_back(s.ToString());
    return Malformed(absl::StrCat("called computation ", callee.name(),
                                  " takes (", absl::StrJoin(got, ", "),
                                  ") but is passed (",
                                  absl::StrJoin(want, ", "), ")"));
  }
  if (callee.root()->shape() != result) {
    return Malformed(absl::StrCat(
        "called computation ", callee.name(), " returns ",
        callee.root()->shape().ToString(), ", expected ", result.ToString()));
  }
  return absl::OkStatus();
}

std::vector<Shape> OperandShapes(const HloInstruction& instruction,
                                 int64_t first = 0) {
  std::vector<Shape> shapes;
  for (int64_t i = first; i < instruction.operand_count(); ++i) {
    shapes.push_back(instruction.operand(i)->shape());
  }
  return shapes;
}

std::vector<Literal> OperandValues(absl::Span<const Operand> operands,
                                   size_t first = 0) {
  std::vector<Literal> values;
  for (size_t i = first; i < operands.size(); ++i) {
    values.push_back(*operands[i].value);
  }
  return values;
}

// call and fusion: run the callee on the operands.
absl::StatusOr<std::unique_ptr<Kernel>> CompileCall(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (absl::Status s = ExpectCalled(instruction, 1); !s.ok()) return s;
  const HloComputation& callee = *instruction.called_computations()[0];
  if (absl::Status s = ExpectSignature(callee, OperandShapes(instruction),
                                       instruction.shape());
      !s.ok()) {
    return s;
  }
  absl::StatusOr<const CompiledComputation*> compiled =
      compiler.Compile(&callee);
  if (!compiled.ok()) return compiled.status();
  const CompiledComputation* plan = *compiled;
  return MakeKernel(
      [plan](KernelContext& context, absl::Span<const Operand> operands) {
        return context.Call(*plan, OperandValues(operands));
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileWhile(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  // XLA stores the body first, then the condition.
  if (absl::Status s = ExpectCalled(instruction, 2); !s.ok()) return s;
  const HloComputation& body = *instruction.called_computations()[0];
  const HloComputation& condition = *instruction.called_computations()[1];
  const Shape& state = instruction.operand(0)->shape();
  if (absl::Status s = ExpectResultShape(instruction, state); !s.ok()) {
    return s;
  }
  if (absl::Status s = ExpectSignature(body, {state}, state); !s.ok()) return s;
  if (absl::Status s =
          ExpectSignature(condition, {state}, Shape::Scalar(xla::PRED));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<const CompiledComputation*> body_plan =
      compiler.Compile(&body);
  if (!body_plan.ok()) return body_plan.status();
  absl::StatusOr<const CompiledComputation*> condition_plan =
      compiler.Compile(&condition);
  if (!condition_plan.ok()) return condition_plan.status();
  const CompiledComputation* b = *body_plan;
  const CompiledComputation* c = *condition_plan;
  return MakeKernel(
      [b, c](KernelContext& context,
             absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        // Per iteration: the condition reads the state in place, the body
        // takes it (its buffers may be reused for the next state); neither
        // copies it nor builds an argument vector.
        Literal state = *operands[0].value;
        while (true) {
          if (absl::Status s = context.CheckCancelled(); !s.ok()) return s;
          const Literal* read = &state;
          absl::StatusOr<Literal> keep_going =
              context.CallBorrowing(*c, absl::MakeConstSpan(&read, 1));
          if (!keep_going.ok()) return keep_going.status();
          if (!keep_going->data<bool>()[0]) break;
          absl::StatusOr<Literal> next =
              context.CallTaking(*b, absl::MakeSpan(&state, 1));
          if (!next.ok()) return next.status();
          state = *std::move(next);
        }
        return state;
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileConditional(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  const int64_t branches = instruction.called_computations().size();
  if (instruction.operand_count() != branches + 1 || branches == 0) {
    return Malformed(absl::StrCat(
        "conditional with ", branches, " branches needs ", branches + 1,
        " operands (selector plus one per branch), got ",
        instruction.operand_count()));
  }
  const Shape& selector = instruction.operand(0)->shape();
  const bool is_pred = selector == Shape::Scalar(xla::PRED);
  if (!is_pred && selector != Shape::Scalar(xla::S32)) {
    return Malformed(
        absl::StrCat("conditional selector must be pred[] or s32[], got ",
                     selector.ToString()));
  }
  if (is_pred && branches != 2) {
    return Malformed(absl::StrCat(
        "conditional with a pred selector needs 2 branches, got ", branches));
  }
  std::vector<const CompiledComputation*> plans;
  for (int64_t i = 0; i < branches; ++i) {
    const HloComputation& branch = *instruction.called_computations()[i];
    if (absl::Status s = ExpectSignature(
            branch, {instruction.operand(i + 1)->shape()}, instruction.shape());
        !s.ok()) {
      return s;
    }
    absl::StatusOr<const CompiledComputation*> plan = compiler.Compile(&branch);
    if (!plan.ok()) return plan.status();
    plans.push_back(*plan);
  }
  return MakeKernel(
      [plans, is_pred](
          KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        int64_t index;
        const int64_t n = plans.size();
        if (is_pred) {
          // true runs the first branch, false the second.
          index = operands[0].value->data<bool>()[0] ? 0 : 1;
        } else {
          index = operands[0].value->data<int32_t>()[0];
          // Out-of-range indices run the last branch (XLA's rule).
          if (index < 0 || index >= n) index = n - 1;
        }
        return context.Call(*plans[index], {*operands[index + 1].value});
      });
}

// map: the computation applied to the operands' elements, one call per
// element.
absl::StatusOr<std::unique_ptr<Kernel>> CompileMap(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (absl::Status s = ExpectCalled(instruction, 1); !s.ok()) return s;
  if (instruction.operand_count() < 1) {
    return Malformed("map needs at least one operand");
  }
  const Shape& result = instruction.shape();
  if (absl::Status s = ExpectArray(result, "result"); !s.ok()) return s;
  std::vector<Shape> scalars;
  for (const HloInstruction* operand : instruction.operands()) {
    if (absl::Status s = ExpectArray(operand->shape(), "operand"); !s.ok()) {
      return s;
    }
    if (operand->shape().dimensions() != result.dimensions()) {
      return Malformed("map operands must have the result's dimensions");
    }
    scalars.push_back(Shape::Scalar(operand->shape().element_type()));
  }
  const HloComputation& callee = *instruction.called_computations()[0];
  if (absl::Status s = ExpectSignature(callee, scalars,
                                       Shape::Scalar(result.element_type()));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<const CompiledComputation*> compiled =
      compiler.Compile(&callee);
  if (!compiled.ok()) return compiled.status();
  const CompiledComputation* plan = *compiled;
  return MakeKernel([plan, scalars, result](KernelContext& context,
                                            absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    Literal out = Literal::Uninitialized(result);
    const int64_t n = result.element_count();
    const int64_t out_width = ByteWidth(result.element_type());
    for (int64_t i = 0; i < n; ++i) {
      std::vector<Literal> args;
      for (size_t k = 0; k < operands.size(); ++k) {
        const int64_t w = ByteWidth(scalars[k].element_type());
        Literal v = Literal::Uninitialized(scalars[k]);
        std::memcpy(
            const_cast<void*>(v.untyped_data()),
            static_cast<const char*>(operands[k].value->untyped_data()) + i * w,
            w);
        args.push_back(std::move(v));
      }
      absl::StatusOr<Literal> r = context.Call(*plan, std::move(args));
      if (!r.ok()) return r.status();
      std::memcpy(static_cast<char*>(const_cast<void*>(out.untyped_data())) +
                      i * out_width,
                  r->untyped_data(), out_width);
    }
    return out;
  });
}

}  // namespace

void RegisterControlFlowKernels(KernelRegistry& registry) {
  registry.Register("call", &CompileCall);
  registry.Register("fusion", &CompileCall);
  registry.Register("while", &CompileWhile);
  registry.Register("conditional", &CompileConditional);
  registry.Register("map", &CompileMap);
}

}  // namespace tpu::emulator::interpreter
