// Kernel family: tokens and the operations that order side effects with
// them: after-all, add-dependency, send/send-done and recv/recv-done between
// instructions of one program (channels of the execution), and infeed and
// outfeed, which name what the emulator lacks.
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

// Host transfers go to the host program through the runtime, which the
// tpu_driver API has no way to reach.
absl::Status RejectHostTransfer(const HloInstruction& instruction) {
  if (!instruction.proto().is_host_transfer()) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      instruction.opcode(), " on channel ", instruction.proto().channel_id(),
      " is a host transfer (is_host_transfer=true), which the emulator does "
      "not support: only send and recv between instructions of one program "
      "on one core run"));
}

// The (data, u32 context, token) tuple send and recv return.
Shape TransferShape(const Shape& data) {
  return Shape::Tuple({data, Shape::Scalar(xla::U32), Shape::Token()});
}

Literal TransferValue(Literal data) {
  std::vector<Literal> parts;
  parts.push_back(std::move(data));
  parts.push_back(Literal::Zeros(Shape::Scalar(xla::U32)));
  parts.push_back(TokenValue());
  return Literal::Tuple(std::move(parts));
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileSend(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  if (absl::Status s = ExpectToken(instruction, 1); !s.ok()) return s;
  if (absl::Status s = RejectHostTransfer(instruction); !s.ok()) return s;
  if (absl::Status s = ExpectResultShape(
          instruction, TransferShape(instruction.operand(0)->shape()));
      !s.ok()) {
    return s;
  }
  const int64_t channel = instruction.proto().channel_id();
  return MakeKernel(
      [channel](KernelContext& context,
                absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        context.Send(channel, *operands[0].value);
        return TransferValue(*operands[0].value);
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileRecv(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  if (absl::Status s = ExpectToken(instruction, 0); !s.ok()) return s;
  if (absl::Status s = RejectHostTransfer(instruction); !s.ok()) return s;
  const Shape& shape = instruction.shape();
  if (!shape.IsTuple() || shape.tuple_size() != 3 ||
      shape != TransferShape(shape.tuple_shapes()[0])) {
    return Malformed(absl::StrCat(
        "recv must return (data, u32[], token[]), got ", shape.ToString()));
  }
  // The data arrives at recv-done; until then the buffer holds zeros.
  return MakeConstantKernel(
      TransferValue(Literal::Zeros(shape.tuple_shapes()[0])));
}

absl::Status ExpectDoneOf(const HloInstruction& instruction,
                          const std::string& start) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  if (instruction.operand(0)->opcode() != start) {
    return Malformed(absl::StrCat(instruction.opcode(), " must take a ", start,
                                  ", got ", instruction.operand(0)->opcode()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileSendDone(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectDoneOf(instruction, "send"); !s.ok()) return s;
  if (absl::Status s = ExpectResultShape(instruction, Shape::Token());
      !s.ok()) {
    return s;
  }
  return MakeConstantKernel(TokenValue());
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileRecvDone(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectDoneOf(instruction, "recv"); !s.ok()) return s;
  const HloInstruction& recv = *instruction.operand(0);
  const Shape& data = recv.shape().tuple_shapes()[0];
  if (absl::Status s =
          ExpectResultShape(instruction, Shape::Tuple({data, Shape::Token()}));
      !s.ok()) {
    return s;
  }
  const int64_t channel = recv.proto().channel_id();
  return MakeKernel(
      [channel](KernelContext& context,
                absl::Span<const Operand>) -> absl::StatusOr<Literal> {
        absl::StatusOr<Literal> value = context.Receive(channel);
        if (!value.ok()) return value.status();
        std::vector<Literal> parts;
        parts.push_back(*std::move(value));
        parts.push_back(TokenValue());
        return Literal::Tuple(std::move(parts));
      });
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
  registry.Register("send", &CompileSend);
  registry.Register("send-done", &CompileSendDone);
  registry.Register("recv", &CompileRecv);
  registry.Register("recv-done", &CompileRecvDone);
  registry.Register("infeed", &CompileFeed);
  registry.Register("outfeed", &CompileFeed);
}

}  // namespace tpu::emulator::interpreter
