#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_EXECUTABLE_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_EXECUTABLE_H_

// A compiled HLO program: the interpreter's unit of compilation and execution.
//
// Compile validates the whole module and builds an execution plan (topological
// order, one kernel per instruction chosen by opcode and element type, last use
// of every intermediate). Everything that can be rejected is rejected here, so
// Execute fails only for reasons that depend on the arguments or on
// cancellation.
//
// Thread safety: an Executable is immutable after Compile; Execute may run
// concurrently from several threads (e.g. one per core).

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/interpreter/collectives.h"
#include "hlo/literal.h"
#include "proto/hlo.pb.h"
#include "proto/xla_data.pb.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace tpu::emulator::interpreter {

struct CompileOptions {
  // Replicas the program is compiled for (collectives and replica-id use it).
  int num_replicas = 1;
  // f32 dot/convolution with DEFAULT precision as a TPU computes them:
  // operands rounded to bf16, products accumulated in f32. HIGH rounds to
  // bf16x3 and HIGHEST is exact f32, as the TPU defines them.
  bool tpu_numerics = false;
};

// Sees each top-level instruction of the entry computation run (nested
// computations run inside their caller's instruction). Used by the worker's
// trace and per-program profile; called on the executing thread.
class InstructionObserver {
 public:
  virtual ~InstructionObserver() = default;
  virtual void Started(const std::string& instruction) = 0;
  // `bytes`: the operands' plus the result's size.
  virtual void Finished(const std::string& instruction,
                        const std::string& opcode, int64_t bytes) = 0;
};

// Per-execution facts and hooks.
struct ExecutionContext {
  int replica_id = 0;
  int partition_id = 0;
  // Where kernels run. Not owned; must outlive the execution. nullptr means
  // single-threaded on the calling thread.
  const Eigen::ThreadPoolDevice* device = nullptr;
  // Which device plays each replica and partition of this launch; nullptr
  // means one device. Not owned.
  const DeviceAssignment* assignment = nullptr;
  // How collectives meet their peers; nullptr outside a worker, where only
  // single-participant collectives run. Not owned.
  CollectiveExecutor* collectives = nullptr;
  // When set to true (e.g. the client closed), the execution stops at the
  // next instruction boundary or loop iteration with CANCELLED. Not owned.
  const std::atomic<bool>* cancelled = nullptr;
  // Told about every top-level instruction; nullptr (the default) costs
  // nothing. Not owned.
  InstructionObserver* observer = nullptr;
};

struct ExecutionStats {
  // Largest sum of live intermediate bytes (arguments excluded) at any point.
  int64_t peak_live_bytes = 0;
  int64_t instructions_executed = 0;
};

class Executable {
 public:
  // INVALID_ARGUMENT for a malformed module (names computation and
  // instruction), UNIMPLEMENTED for an operation or element type the
  // interpreter does not support (names opcode, type and instruction),
  // RESOURCE_EXHAUSTED when host memory for constants is refused (the
  // process budget, hlo/memory_budget.h). Execute fails RESOURCE_EXHAUSTED
  // the same way for arguments and intermediates.
  static absl::StatusOr<std::unique_ptr<Executable>> Compile(
      const xla::HloModuleProto& module, const CompileOptions& options);

  virtual ~Executable() = default;

 private:
  // Compile, letting allocation failures (std::bad_alloc) escape.
  static absl::StatusOr<std::unique_ptr<Executable>> CompileOrThrow(
      const xla::HloModuleProto& module, const CompileOptions& options);

 public:

  // The entry computation's parameter and result shapes.
  virtual const xla::ProgramShapeProto& program_shape() const = 0;

  // Runs the entry computation. `arguments` has one literal per parameter
  // with exactly the parameter's shape (INVALID_ARGUMENT otherwise). They are
  // taken by value so that their buffers may be reused for results when
  // nothing else shares them. `stats` may be null.
  virtual absl::StatusOr<Literal> Execute(std::vector<Literal> arguments,
                                          const ExecutionContext& context,
                                          ExecutionStats* stats) const = 0;
};

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_EXECUTABLE_H_
