#include "emulator/interpreter/executable.h"

#include <new>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "emulator/interpreter/kernel.h"
#include "emulator/interpreter/plan.h"
#include "hlo/hlo_module.h"
#include "hlo/memory_budget.h"

namespace tpu::emulator::interpreter {
namespace {

using interpreter::CompiledComputation;
using interpreter::ExecState;

class InterpreterExecutable : public Executable {
 public:
  InterpreterExecutable(std::unique_ptr<RngState> rng_state,
                        std::unique_ptr<HloModule> module,
                        CompiledComputations compiled,
                        const CompiledComputation* entry)
      : rng_state_(std::move(rng_state)),
        module_(std::move(module)),
        compiled_(std::move(compiled)),
        entry_(entry),
        program_shape_(module_->entry()->ComputeProgramShape()),
        parameter_shapes_(module_->entry()->ParameterShapes()) {}

  const xla::ProgramShapeProto& program_shape() const override {
    return program_shape_;
  }

  absl::StatusOr<Literal> Execute(std::vector<Literal> arguments,
                                  const ExecutionContext& context,
                                  ExecutionStats* stats) const override {
    if (arguments.size() != parameter_shapes_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "program ", module_->name(), " takes ", parameter_shapes_.size(),
          " arguments, got ", arguments.size()));
    }
    for (size_t i = 0; i < arguments.size(); ++i) {
      if (arguments[i].shape() != parameter_shapes_[i]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "argument ", i, " of program ", module_->name(), " has shape ",
            arguments[i].shape().ToString(), " but parameter ", i, " expects ",
            parameter_shapes_[i].ToString()));
      }
    }
    // Live-memory accounting only for a caller that reads it.
    ExecState state(context, /*account_memory=*/stats != nullptr);
    absl::StatusOr<Literal> result;
    // The budget (hlo/memory_budget.h) or the system may refuse any
    // intermediate deep inside a kernel: that fails this execution only.
    try {
      result = entry_->Run(state, std::move(arguments));
    } catch (const std::bad_alloc& error) {
      result = AllocationFailureStatus(error);
    }
    if (stats != nullptr) {
      stats->peak_live_bytes = state.peak_live_bytes();
      stats->instructions_executed = state.instructions_executed;
    }
    return result;
  }

 private:
  // Kernels of `compiled_` point into it (the only state that changes across
  // executions; see rng_state.h).
  std::unique_ptr<RngState> rng_state_;
  std::unique_ptr<HloModule> module_;
  CompiledComputations compiled_;
  const CompiledComputation* entry_;
  xla::ProgramShapeProto program_shape_;
  std::vector<Shape> parameter_shapes_;
};

bool HasDynamicDimension(const xla::ShapeProto& shape) {
  for (bool dynamic : shape.is_dynamic_dimension()) {
    if (dynamic) return true;
  }
  for (const xla::ShapeProto& element : shape.tuple_shapes()) {
    if (HasDynamicDimension(element)) return true;
  }
  return false;
}

// Checked on the proto, before loading: an unbounded dimension ("?") has no
// size a dense array could take.
absl::Status RejectDynamicShapes(const xla::HloModuleProto& module) {
  for (const xla::HloComputationProto& computation : module.computations()) {
    for (const xla::HloInstructionProto& instruction :
         computation.instructions()) {
      if (HasDynamicDimension(instruction.shape())) {
        return absl::UnimplementedError(absl::StrCat(
            "HLO computation ", computation.name(), ", instruction ",
            instruction.name(), " (", instruction.opcode(),
            "): dynamic dimensions are not supported (the interpreter runs "
            "static shapes only; the result type has a bounded or unbounded "
            "dynamic dimension)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Executable>> Executable::Compile(
    const xla::HloModuleProto& module_proto, const CompileOptions& options) {
  // Constants and kernels' precomputed tables are allocated while planning.
  try {
    return CompileOrThrow(module_proto, options);
  } catch (const std::bad_alloc& error) {
    return AllocationFailureStatus(error);
  }
}

absl::StatusOr<std::unique_ptr<Executable>> Executable::CompileOrThrow(
    const xla::HloModuleProto& module_proto, const CompileOptions& options) {
  if (absl::Status s = RejectDynamicShapes(module_proto); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      HloModule::FromProto(module_proto);
  if (!module.ok()) return module.status();
  auto rng_state = std::make_unique<RngState>();
  PlanningCompiler compiler(options, KernelRegistry::Global(), rng_state.get());
  absl::StatusOr<const CompiledComputation*> entry =
      compiler.Compile((*module)->entry());
  if (!entry.ok()) return entry.status();
  return std::unique_ptr<Executable>(
      new InterpreterExecutable(std::move(rng_state), *std::move(module),
                                std::move(compiler).Take(), *entry));
}

}  // namespace tpu::emulator::interpreter
