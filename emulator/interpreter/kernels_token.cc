// Kernel family: tokens and the operations that order side effects with
// them: after-all, add-dependency, and infeed and outfeed, which name what
// the emulator lacks. send/recv and their -done are kernels_send_recv.cc.
//
// A token carries no data; the interpreter runs one instruction at a time in
// an order that respects the token edges, so tokens only need to exist.

#include "emulator/interpreter/kernel_util.h"

namespace tpu::emulator::interpreter {
namespace {

Literal TokenValue() { return Literal::Zeros(Shape::Token()); }

absl::Status ExpectToken(const HloInstruction& instruction, int64_t operand) {
  const Shape& shape = instruction.operand(operand)->shape();
  if (!shape.IsToken()) {
    return Malformed(absl::StrCat("operand ", operand, " of ",
                                  instruction.opcode(),
                                  " must be a token, got ", shape.ToString()));
  }
  return absl::OkStatus();
}

// after-all joins ordering edges. XLA's verifier checks only its result
// (its own token tests join values too), so operands may be of any type.
absl::StatusOr<std::unique_ptr<Kernel>> CompileAfterAll(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectResultShape(instruction, Shape::Token());
      !s.ok()) {
    return s;
  }
  return MakeConstantKernel(TokenValue());
}

// add-dependency(value, token): the value, once the token is available.
absl::StatusOr<std::unique_ptr<Kernel>> CompileAddDependency(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  if (absl::Status s = ExpectToken(instruction, 1); !s.ok()) return s;
  if (absl::Status s =
          ExpectResultShape(instruction, instruction.operand(0)->shape());
      !s.ok()) {
    return s;
  }
  return MakeForwardKernel(0);
}

// infeed and outfeed move data between the program and the host's feed
// queues, which the tpu_driver API does not expose.
absl::StatusOr<std::unique_ptr<Kernel>> CompileFeed(
    const HloInstruction& instruction, KernelCompiler&) {
  return absl::UnimplementedError(
      absl::StrCat(instruction.opcode(), " ", instruction.name(),
                   " is not supported: the emulator has no host ",
                   instruction.opcode() == "infeed" ? "infeed" : "outfeed",
                   " queue (the tpu_driver API does not reach one)"));
}

}  // namespace

void RegisterTokenKernels(KernelRegistry& registry) {
  registry.Register("after-all", &CompileAfterAll);
  registry.Register("add-dependency", &CompileAddDependency);
  registry.Register("infeed", &CompileFeed);
  registry.Register("outfeed", &CompileFeed);
}

}  // namespace tpu::emulator::interpreter
