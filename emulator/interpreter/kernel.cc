#include "emulator/interpreter/kernel.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "emulator/interpreter/plan.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

class FnKernel : public Kernel {
 public:
  explicit FnKernel(KernelFn fn) : fn_(std::move(fn)) {}
  absl::StatusOr<Literal> Run(
      KernelContext& context,
      absl::Span<const Operand> operands) const override {
    return fn_(context, operands);
  }

 private:
  KernelFn fn_;
};

}  // namespace

std::unique_ptr<Kernel> MakeKernel(KernelFn fn) {
  return std::make_unique<FnKernel>(std::move(fn));
}

void KernelRegistry::Register(const std::string& opcode,
                              KernelFactory factory) {
  factories_[opcode] = factory;
}

KernelFactory KernelRegistry::Find(const std::string& opcode) const {
  auto it = factories_.find(opcode);
  return it == factories_.end() ? nullptr : it->second;
}

std::vector<std::string> KernelRegistry::Opcodes() const {
  std::vector<std::string> opcodes;
  for (const auto& [opcode, factory] : factories_) opcodes.push_back(opcode);
  std::sort(opcodes.begin(), opcodes.end());
  return opcodes;
}

const Eigen::ThreadPoolDevice* KernelContext::device() const {
  return state_->context().device;
}

const ExecutionContext& KernelContext::execution() const {
  return state_->context();
}

absl::Status KernelContext::CheckCancelled() const {
  const std::atomic<bool>* cancelled = state_->context().cancelled;
  if (cancelled != nullptr && cancelled->load(std::memory_order_relaxed)) {
    return absl::CancelledError("execution cancelled");
  }
  return absl::OkStatus();
}

absl::StatusOr<Literal> KernelContext::Call(
    const CompiledComputation& computation, std::vector<Literal> arguments) {
  return computation.Run(*state_, std::move(arguments));
}

absl::StatusOr<Literal> KernelContext::CallTaking(
    const CompiledComputation& computation, absl::Span<Literal> arguments) {
  return computation.RunTaking(*state_, arguments);
}

absl::StatusOr<Literal> KernelContext::CallBorrowing(
    const CompiledComputation& computation,
    absl::Span<const Literal* const> arguments) {
  return computation.RunBorrowing(*state_, arguments);
}

void KernelContext::Send(int64_t channel, Literal value) {
  state_->channels[channel].push_back(std::move(value));
}

int64_t KernelContext::CountRun(const void* key) { return state_->runs[key]++; }

absl::StatusOr<Literal> KernelContext::Receive(int64_t channel) {
  auto it = state_->channels.find(channel);
  if (it == state_->channels.end() || it->second.empty()) {
    return absl::UnimplementedError(absl::StrCat(
        "nothing was sent on channel ", channel,
        " earlier in this execution: the interpreter pairs send and recv "
        "within one program on one core only"));
  }
  Literal value = std::move(it->second.front());
  it->second.pop_front();
  return value;
}

}  // namespace tpu::emulator::interpreter
