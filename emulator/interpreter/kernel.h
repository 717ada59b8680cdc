#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_KERNEL_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_KERNEL_H_

// Kernels: how the interpreter runs one HLO instruction, and the extension
// point through which kernel families are added.
//
// EXTENSION POINT. A kernel family is a translation unit (e.g.
// kernels_elementwise.cc) that defines
//
//   void RegisterFooKernels(KernelRegistry& registry) {
//     registry.Register("foo", &CompileFoo);
//   }
//
// where CompileFoo is a KernelFactory. To add a family: write the .cc, add it
// to the `kernels` library in BUILD.bazel, declare its Register function below
// and call it from kernel_registry.cc (one line each; that target depends
// on every family, the families only on :kernel_api). A factory runs at
// compile time, once per instruction: it verifies everything it can (operand
// count and shapes, result shape, attributes, element types) and returns
// INVALID_ARGUMENT for a malformed instruction or UNIMPLEMENTED for a type or
// attribute it does not support; the caller adds the computation and
// instruction names to the message. It then returns a Kernel with every
// decision already made (typed loop, strides, called computations compiled),
// so Kernel::Run does only the arithmetic. Run must not fail for reasons the
// factory could have seen.
//
// Thread safety: kernels are immutable after construction and Run may be
// called concurrently (several executions of one Executable).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/rng_state.h"
#include "hlo/hlo_module.h"
#include "hlo/literal.h"

namespace tpu::emulator::interpreter {

class CompiledComputation;
class ExecState;

// One operand of an instruction as a kernel sees it.
struct Operand {
  const Literal* value;
  // This is the value's last use: the executor drops its reference right
  // after the kernel returns. If also value->buffer().use_count() == 1, the
  // kernel may write its result into that buffer (when the computation reads
  // each input element before writing the same output element).
  bool last_use;
};

// What a kernel may use while it runs. Not thread-safe; one per execution.
class KernelContext {
 public:
  explicit KernelContext(ExecState* state) : state_(state) {}
  // Where to run parallel work; nullptr means the calling thread only.
  const Eigen::ThreadPoolDevice* device() const;
  const ExecutionContext& execution() const;
  // CANCELLED if the execution was cancelled.
  absl::Status CheckCancelled() const;
  // Runs a called computation (compiled by KernelCompiler::Compile).
  absl::StatusOr<Literal> Call(const CompiledComputation& computation,
                               std::vector<Literal> arguments);
  // The same, taking the arguments out of `arguments` (no vector to build).
  absl::StatusOr<Literal> CallTaking(const CompiledComputation& computation,
                                     absl::Span<Literal> arguments);
  // The same, reading the arguments in place: they stay the caller's and are
  // neither copied nor written (e.g. a while loop's state for its condition).
  absl::StatusOr<Literal> CallBorrowing(
      const CompiledComputation& computation,
      absl::Span<const Literal* const> arguments);
  // Channels between send and recv-done of this execution: Send queues a
  // value; Receive takes the oldest one, or UNIMPLEMENTED if no send on that
  // channel ran earlier in this execution (a send from another program or
  // device, which the interpreter cannot see).
  void Send(int64_t channel, Literal value);
  absl::StatusOr<Literal> Receive(int64_t channel);
  // How many times the instruction `key` ran before in this execution (0 the
  // first time); counts this run.
  int64_t CountRun(const void* key);

 private:
  ExecState* state_;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual absl::StatusOr<Literal> Run(
      KernelContext& context, absl::Span<const Operand> operands) const = 0;
};

// A kernel from a callable, for the many kernels with no state of their own.
using KernelFn = std::function<absl::StatusOr<Literal>(
    KernelContext&, absl::Span<const Operand>)>;
std::unique_ptr<Kernel> MakeKernel(KernelFn fn);

// Compile-time services for factories. Not thread-safe (one per Compile).
class KernelRegistry;

class KernelCompiler {
 public:
  virtual ~KernelCompiler() = default;
  virtual const CompileOptions& options() const = 0;
  virtual const KernelRegistry& registry() const = 0;
  // The compiled form of a called computation (compiled once, shared).
  virtual absl::StatusOr<const CompiledComputation*> Compile(
      const HloComputation* computation) = 0;
  // The program's random-number state. It lives as long as the Executable,
  // so kernels may keep a pointer to it.
  virtual RngState& rng_state() = 0;
};

using KernelFactory = absl::StatusOr<std::unique_ptr<Kernel>> (*)(
    const HloInstruction& instruction, KernelCompiler& compiler);

// opcode -> factory. Thread safety: filled once, then read-only.
class KernelRegistry {
 public:
  // The registry with every family registered (defined by the
  // :kernel_registry target, which links every family).
  static const KernelRegistry& Global();

  // The latest registration for an opcode wins.
  void Register(const std::string& opcode, KernelFactory factory);
  // nullptr if no family handles `opcode`.
  KernelFactory Find(const std::string& opcode) const;
  std::vector<std::string> Opcodes() const;

 private:
  absl::flat_hash_map<std::string, KernelFactory> factories_;
};

// The families (one .cc each).
void RegisterStructuralKernels(KernelRegistry& registry);  // constant, tuple..
void RegisterControlFlowKernels(KernelRegistry& registry);
void RegisterElementwiseKernels(KernelRegistry& registry);
void RegisterUnaryKernels(KernelRegistry& registry);
void RegisterCompareSelectKernels(KernelRegistry& registry);
void RegisterConvertKernels(KernelRegistry& registry);
void RegisterDataMovementKernels(KernelRegistry& registry);
void RegisterDotKernels(KernelRegistry& registry);
void RegisterReduceKernels(KernelRegistry& registry);
void RegisterConvolutionKernels(KernelRegistry& registry);
void RegisterWindowKernels(KernelRegistry& registry);
void RegisterLinalgKernels(KernelRegistry& registry);
void RegisterFftKernels(KernelRegistry& registry);
void RegisterRngKernels(KernelRegistry& registry);
void RegisterGatherScatterKernels(KernelRegistry& registry);
void RegisterSortKernels(KernelRegistry& registry);
void RegisterCollectiveKernels(KernelRegistry& registry);
void RegisterRaggedAllToAllKernels(KernelRegistry& registry);
void RegisterSendRecvKernels(KernelRegistry& registry);  // send, recv, -done
void RegisterTokenKernels(KernelRegistry& registry);     // after-all, infeed..
void RegisterAsyncKernels(KernelRegistry& registry);     // async-*, copy-*
void RegisterTopKKernels(KernelRegistry& registry);
void RegisterCustomCallKernels(KernelRegistry& registry);
void RegisterBatchNormKernels(KernelRegistry& registry);
void RegisterRaggedDotKernels(KernelRegistry& registry);
void RegisterStochasticConvertKernels(KernelRegistry& registry);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_KERNEL_H_
