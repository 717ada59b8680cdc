#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_PLAN_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_PLAN_H_

// The execution plan of one computation and the state of one execution.
//
// A CompiledComputation is the computation's instructions in topological
// order, each with its kernel and operand slots, plus for every step the
// slots whose last use it is (freed right after the step). ExecState carries
// one execution's context and its live-memory accounting.
//
// Thread safety: CompiledComputation is immutable after Build and may run
// concurrently; ExecState belongs to one execution (one thread).

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/kernel.h"
#include "hlo/hlo_module.h"
#include "hlo/literal.h"

namespace tpu::emulator::interpreter {

// The reusable storage of one run of a computation: its value slots and
// the operand list of the step running. Runs of called computations (a
// while loop's body and condition, a reduction's computation) take one from
// ExecState and give it back, so that a loop iteration allocates none.
struct Frame {
  std::vector<Literal> slots;
  std::vector<Operand> operands;
};

class ExecState {
 public:
  // `account_memory`: keep the live-memory accounting (peak_live_bytes);
  // it costs a hash-map update per value, so only callers that read it
  // (ExecutionStats) ask for it.
  ExecState(const ExecutionContext& context, bool account_memory)
      : observer(context.observer),
        context_(context),
        account_memory_(account_memory) {}

  const ExecutionContext& context() const { return context_; }

  // Live-memory accounting of values held by the executor, per distinct
  // buffer. Argument buffers are tracked but never counted. No-ops unless
  // constructed with account_memory.
  void Acquire(const Literal& value, bool is_argument) {
    if (account_memory_) AcquireAccounted(value, is_argument);
  }
  void Release(const Literal& value) {
    if (account_memory_) ReleaseAccounted(value);
  }
  int64_t peak_live_bytes() const { return peak_; }

  // A frame with at least `slots` empty slots; give it back with PutFrame
  // once every slot is empty again.
  std::unique_ptr<Frame> TakeFrame(size_t slots);
  void PutFrame(std::unique_ptr<Frame> frame);
  int64_t instructions_executed = 0;
  // The context's observer until the entry computation takes it: nested
  // computations then find none, so only top-level instructions are seen.
  InstructionObserver* observer = nullptr;
  // Values sent and not yet received, per channel id: send and recv-done of
  // one program pair up within its execution (oldest send first).
  absl::flat_hash_map<int64_t, std::deque<Literal>> channels;
  // Runs so far of the instructions that count them (KernelContext::CountRun).
  absl::flat_hash_map<const void*, int64_t> runs;

 private:
  struct Entry {
    int64_t count = 0;
    int64_t bytes = 0;
    bool is_argument = false;
  };
  void AcquireAccounted(const Literal& value, bool is_argument);
  void ReleaseAccounted(const Literal& value);

  const ExecutionContext& context_;
  const bool account_memory_;
  absl::flat_hash_map<const AlignedBuffer*, Entry> buffers_;
  // Frames of finished runs, for the next (nested runs take several).
  std::vector<std::unique_ptr<Frame>> spare_frames_;
  int64_t live_ = 0;
  int64_t peak_ = 0;
};

class CompiledComputation {
 public:
  // Chooses a kernel for every instruction (see kernel.h for the factory
  // contract). Errors name the computation and instruction.
  static absl::StatusOr<std::unique_ptr<CompiledComputation>> Build(
      const HloComputation& computation, KernelCompiler& compiler);

  const HloComputation& hlo() const { return *hlo_; }

  // REQUIRES: arguments match the parameter shapes (checked by callers that
  // take arguments from outside; kernels guarantee it by construction).
  absl::StatusOr<Literal> Run(ExecState& state,
                              std::vector<Literal> arguments) const;
  // The same, taking the arguments out of `arguments` (left empty), which
  // saves the caller a vector per run.
  absl::StatusOr<Literal> RunTaking(ExecState& state,
                                    absl::Span<Literal> arguments) const;
  // The same, reading the arguments where they are: they stay the caller's
  // (no kernel writes into their buffers), and nothing copies them.
  absl::StatusOr<Literal> RunBorrowing(
      ExecState& state, absl::Span<const Literal* const> arguments) const;

 private:
  struct Step {
    const HloInstruction* instruction;
    std::unique_ptr<Kernel> kernel;  // null for parameters
    int64_t parameter_number = -1;
    bool skipped = false;  // computed inside a fused kernel
    std::vector<int64_t> operand_slots;
    std::vector<bool> last_use;          // per operand
    std::vector<int64_t> release_after;  // slots dead after this step
  };

  // Runs with each argument either taken from `taken` or read from
  // `borrowed` (one of them non-empty, or both empty for no parameters).
  absl::StatusOr<Literal> RunFrame(
      ExecState& state, absl::Span<Literal> taken,
      absl::Span<const Literal* const> borrowed) const;

  const HloComputation* hlo_ = nullptr;
  std::vector<Step> steps_;  // slot i is produced by steps_[i]
  std::vector<int64_t> unused_parameter_slots_;
  int64_t root_slot_ = 0;
};

// The compiled computations of one module, by computation.
using CompiledComputations =
    absl::flat_hash_map<const HloComputation*,
                        std::unique_ptr<CompiledComputation>>;

// A KernelCompiler that builds each computation's plan once and owns the
// plans until Take(). Thread-compatible (one per compile).
class PlanningCompiler : public KernelCompiler {
 public:
  // `registry` and `rng_state` must outlive the compiler (and rng_state the
  // plans, whose kernels point to it).
  PlanningCompiler(const CompileOptions& options,
                   const KernelRegistry& registry, RngState* rng_state)
      : options_(options), registry_(registry), rng_state_(rng_state) {}

  const CompileOptions& options() const override { return options_; }
  const KernelRegistry& registry() const override { return registry_; }
  RngState& rng_state() override { return *rng_state_; }
  absl::StatusOr<const CompiledComputation*> Compile(
      const HloComputation* computation) override;

  CompiledComputations Take() && { return std::move(compiled_); }

 private:
  const CompileOptions options_;
  const KernelRegistry& registry_;
  RngState* const rng_state_;
  CompiledComputations compiled_;
};

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_PLAN_H_
