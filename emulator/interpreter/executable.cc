#include "emulator/interpreter/executable.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "emulator/interpreter/kernel.h"
#include "emulator/interpreter/plan.h"
#include "hlo/hlo_module.h"

namespace tpu::emulator::interpreter {
namespace {

using interpreter::CompiledComputation;
using interpreter::ExecState;

class ModuleCompiler : public interpreter::KernelCompiler {
 public:
  ModuleCompiler(const CompileOptions& options, RngState* rng_state)
      : options_(options), rng_state_(rng_state) {}

  const CompileOptions& options() const override { return options_; }
  const interpreter::KernelRegistry& registry() const override {
    return interpreter::KernelRegistry::Global();
  }
  RngState& rng_state() override { return *rng_state_; }

  absl::StatusOr<const CompiledComputation*> Compile(
      const HloComputation* computation) override {
    auto it = compiled_.find(computation);
    if (it != compiled_.end()) return it->second.get();
    absl::StatusOr<std::unique_ptr<CompiledComputation>> plan =
        CompiledComputation::Build(*computation, *this);
    if (!plan.ok()) return plan.status();
    const CompiledComputation* result = plan->get();
    compiled_[computation] = *std::move(plan);
    return result;
  }

  absl::flat_hash_map<const HloComputation*,
                      std::unique_ptr<CompiledComputation>>
  Take() && {
    return std::move(compiled_);
  }

 private:
  CompileOptions options_;
  RngState* rng_state_;  // Owned by the executable being compiled.
  absl::flat_hash_map<const HloComputation*,
                      std::unique_ptr<CompiledComputation>>
      compiled_;
};

class InterpreterExecutable : public Executable {
 public:
  InterpreterExecutable(
      std::unique_ptr<RngState> rng_state, std::unique_ptr<HloModule> module,
      absl::flat_hash_map<const HloComputation*,
                          std::unique_ptr<CompiledComputation>>
          compiled,
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
    ExecState state(context);
    absl::StatusOr<Literal> result = entry_->Run(state, std::move(arguments));
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
  absl::flat_hash_map<const HloComputation*,
                      std::unique_ptr<CompiledComputation>>
      compiled_;
  const CompiledComputation* entry_;
  xla::ProgramShapeProto program_shape_;
  std::vector<Shape> parameter_shapes_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Executable>> Executable::Compile(
    const xla::HloModuleProto& module_proto, const CompileOptions& options) {
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      HloModule::FromProto(module_proto);
  if (!module.ok()) return module.status();
  auto rng_state = std::make_unique<RngState>();
  ModuleCompiler compiler(options, rng_state.get());
  absl::StatusOr<const CompiledComputation*> entry =
      compiler.Compile((*module)->entry());
  if (!entry.ok()) return entry.status();
  return std::unique_ptr<Executable>(
      new InterpreterExecutable(std::move(rng_state), *std::move(module),
                                std::move(compiler).Take(), *entry));
}

}  // namespace tpu::emulator::interpreter
