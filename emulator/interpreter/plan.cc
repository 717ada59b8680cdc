#include "emulator/interpreter/plan.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "emulator/fiber/fiber.h"
#include "emulator/interpreter/execution_order.h"
#include "emulator/interpreter/fusion.h"
#include "emulator/interpreter/narrow_types.h"

namespace tpu::emulator::interpreter {
namespace {

// Bytes of an array or of every array in a tuple.
int64_t TotalBytes(const Literal& value) {
  if (!value.shape().IsTuple()) return value.size_bytes();
  int64_t bytes = 0;
  for (int64_t i = 0; i < value.tuple_size(); ++i) {
    bytes += TotalBytes(value.element(i));
  }
  return bytes;
}

template <typename Fn>
void ForEachBuffer(const Literal& value, Fn fn) {
  if (value.shape().IsTuple()) {
    for (int64_t i = 0; i < value.tuple_size(); ++i) {
      ForEachBuffer(value.element(i), fn);
    }
  } else if (value.buffer() != nullptr) {
    fn(value.buffer().get());
  }
}

absl::Status WithContext(const absl::Status& status,
                         const HloInstruction& instruction) {
  return absl::Status(status.code(), absl::StrCat("HLO ", instruction.Context(),
                                                  ": ", status.message()));
}

}  // namespace

std::unique_ptr<Frame> ExecState::TakeFrame(size_t slots) {
  std::unique_ptr<Frame> frame;
  if (spare_frames_.empty()) {
    frame = std::make_unique<Frame>();
  } else {
    frame = std::move(spare_frames_.back());
    spare_frames_.pop_back();
  }
  frame->slots.resize(slots);
  return frame;
}

void ExecState::PutFrame(std::unique_ptr<Frame> frame) {
  spare_frames_.push_back(std::move(frame));
}

void ExecState::AcquireAccounted(const Literal& value, bool is_argument) {
  ForEachBuffer(value, [&](const AlignedBuffer* buffer) {
    Entry& entry = buffers_[buffer];
    if (entry.count++ == 0) {
      entry.bytes = buffer->size();
      entry.is_argument = is_argument;
      if (!is_argument) {
        live_ += entry.bytes;
        if (live_ > peak_) peak_ = live_;
      }
    }
  });
}

void ExecState::ReleaseAccounted(const Literal& value) {
  ForEachBuffer(value, [&](const AlignedBuffer* buffer) {
    auto it = buffers_.find(buffer);
    if (it == buffers_.end()) return;
    if (--it->second.count == 0) {
      if (!it->second.is_argument) live_ -= it->second.bytes;
      buffers_.erase(it);
    }
  });
}

absl::StatusOr<std::unique_ptr<CompiledComputation>> CompiledComputation::Build(
    const HloComputation& computation, KernelCompiler& compiler) {
  auto plan = std::unique_ptr<CompiledComputation>(new CompiledComputation());
  plan->hlo_ = &computation;
  const std::vector<const HloInstruction*> order = ExecutionOrder(computation);
  absl::flat_hash_map<const HloInstruction*, int64_t> slot;
  for (size_t i = 0; i < order.size(); ++i) slot[order[i]] = i;

  const KernelRegistry& registry = compiler.registry();
  // Fusion: group roots take their group's kernel and read the group's
  // leaves; absorbed instructions are validated but not run.
  std::vector<FusionGroup> groups = FindFusions(computation, compiler);
  absl::flat_hash_map<const HloInstruction*, FusionGroup*> group_of_root;
  absl::flat_hash_set<const HloInstruction*> absorbed;
  for (FusionGroup& group : groups) {
    group_of_root[group.root] = &group;
    for (const HloInstruction* i : group.absorbed) absorbed.insert(i);
  }
  std::vector<int64_t> last_step(order.size(), -1);
  plan->steps_.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const HloInstruction& instruction = *order[i];
    Step& step = plan->steps_[i];
    step.instruction = &instruction;
    auto group = group_of_root.find(&instruction);
    const bool skipped = absorbed.contains(&instruction);
    if (group != group_of_root.end()) {
      for (const HloInstruction* leaf : group->second->leaves) {
        step.operand_slots.push_back(slot[leaf]);
        last_step[slot[leaf]] = i;
      }
    } else if (!skipped) {
      for (const HloInstruction* operand : instruction.operands()) {
        step.operand_slots.push_back(slot[operand]);
        last_step[slot[operand]] = i;
      }
    }
    if (instruction.opcode() == "parameter") {
      step.parameter_number = instruction.proto().parameter_number();
      if (instruction.operand_count() != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "HLO ", instruction.Context(), ": parameter has operands"));
      }
      continue;
    }
    // Narrow element types run on their wide types (narrow_types.h).
    KernelFactory factory = NeedsWidening(instruction)
                                ? &CompileWidened
                                : registry.Find(instruction.opcode());
    if (factory == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("HLO ", instruction.Context(),
                       ": the interpreter does not support "
                       "opcode \"",
                       instruction.opcode(), "\" (result type ",
                       instruction.shape().ToString(), ")"));
    }
    absl::StatusOr<std::unique_ptr<Kernel>> kernel =
        factory(instruction, compiler);
    if (!kernel.ok()) return WithContext(kernel.status(), instruction);
    if (skipped) {
      step.skipped = true;
    } else if (group != group_of_root.end()) {
      step.kernel = std::move(group->second->kernel);
    } else {
      step.kernel = *std::move(kernel);
    }
  }
  plan->root_slot_ = slot[computation.root()];
  for (size_t s = 0; s < order.size(); ++s) {
    if (static_cast<int64_t>(s) == plan->root_slot_) continue;
    if (last_step[s] >= 0) {
      plan->steps_[last_step[s]].release_after.push_back(s);
    } else if (plan->steps_[s].parameter_number >= 0) {
      plan->unused_parameter_slots_.push_back(s);
    } else if (!plan->steps_[s].skipped) {
      // Computed but never used (dead code): free right away.
      plan->steps_[s].release_after.push_back(s);
    }
  }
  for (size_t i = 0; i < order.size(); ++i) {
    Step& step = plan->steps_[i];
    step.last_use.resize(step.operand_slots.size());
    for (size_t o = 0; o < step.operand_slots.size(); ++o) {
      step.last_use[o] =
          last_step[step.operand_slots[o]] == static_cast<int64_t>(i) &&
          step.operand_slots[o] != plan->root_slot_;
    }
  }
  return plan;
}

absl::StatusOr<Literal> CompiledComputation::Run(
    ExecState& state, std::vector<Literal> arguments) const {
  return RunFrame(state, absl::MakeSpan(arguments), {});
}

absl::StatusOr<Literal> CompiledComputation::RunTaking(
    ExecState& state, absl::Span<Literal> arguments) const {
  return RunFrame(state, arguments, {});
}

absl::StatusOr<Literal> CompiledComputation::RunBorrowing(
    ExecState& state, absl::Span<const Literal* const> arguments) const {
  return RunFrame(state, {}, arguments);
}

namespace {

// Lends a frame of `state` for one run and gives it back, emptied, however
// the run ends (an error, or std::bad_alloc unwinding).
class FrameLease {
 public:
  FrameLease(ExecState& state, size_t slots)
      : state_(state), frame_(state.TakeFrame(slots)) {}
  ~FrameLease() {
    if (!emptied_) {
      for (Literal& slot : frame_->slots) slot = Literal();
    }
    state_.PutFrame(std::move(frame_));
  }
  FrameLease(const FrameLease&) = delete;
  FrameLease& operator=(const FrameLease&) = delete;

  Frame& frame() { return *frame_; }
  // Every slot was released (the run finished): nothing to empty.
  void MarkEmptied() { emptied_ = true; }

 private:
  ExecState& state_;
  std::unique_ptr<Frame> frame_;
  bool emptied_ = false;
};

}  // namespace

absl::StatusOr<Literal> CompiledComputation::RunFrame(
    ExecState& state, absl::Span<Literal> taken,
    absl::Span<const Literal* const> borrowed) const {
  FrameLease lease(state, steps_.size());
  std::vector<Literal>& slots = lease.frame().slots;
  std::vector<Operand>& operands = lease.frame().operands;
  // A slot's value: its own, or a borrowed argument's (which stays the
  // caller's: never a last use, never moved out).
  auto value = [&](int64_t s) -> const Literal* {
    const Step& step = steps_[s];
    if (step.parameter_number >= 0 && !borrowed.empty()) {
      return borrowed[step.parameter_number];
    }
    return &slots[s];
  };
  auto release = [&](int64_t s) {
    state.Release(*value(s));
    slots[s] = Literal();
  };
  KernelContext context(&state);
  // Parameters first: their slots may be freed by the first steps.
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    if (step.parameter_number < 0) continue;
    if (borrowed.empty()) {
      slots[i] = std::move(taken[step.parameter_number]);
    }
    state.Acquire(*value(i), /*is_argument=*/true);
  }
  for (int64_t s : unused_parameter_slots_) release(s);

  InstructionObserver* const observer = std::exchange(state.observer, nullptr);
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    if (step.kernel != nullptr) {
      absl::Status cancelled = context.CheckCancelled();
      if (!cancelled.ok()) return cancelled;
      // Between instructions a core that ran for a time slice lets other
      // cores' fibers have its OS thread (a no-op off fibers).
      fiber::Fiber::MaybeYield();
      operands.clear();
      int64_t operand_bytes = 0;
      for (size_t o = 0; o < step.operand_slots.size(); ++o) {
        const int64_t s = step.operand_slots[o];
        const Literal* operand = value(s);
        operands.push_back({operand, step.last_use[o] && operand == &slots[s]});
        if (observer != nullptr) operand_bytes += TotalBytes(*operand);
      }
      if (observer != nullptr) observer->Started(step.instruction->name());
      absl::StatusOr<Literal> result = step.kernel->Run(context, operands);
      if (observer != nullptr) {
        observer->Finished(
            step.instruction->name(), step.instruction->opcode(),
            operand_bytes + (result.ok() ? TotalBytes(*result) : 0));
      }
      if (!result.ok()) {
        if (result.status().code() == absl::StatusCode::kCancelled) {
          return result.status();
        }
        return WithContext(result.status(), *step.instruction);
      }
      slots[i] = *std::move(result);
      state.Acquire(slots[i], /*is_argument=*/false);
      ++state.instructions_executed;
    }
    for (int64_t s : step.release_after) release(s);
  }
  const Literal* root = value(root_slot_);
  Literal result =
      root == &slots[root_slot_] ? std::move(slots[root_slot_]) : *root;
  state.Release(result);
  lease.MarkEmptied();
  return result;
}

absl::StatusOr<const CompiledComputation*> PlanningCompiler::Compile(
    const HloComputation* computation) {
  auto it = compiled_.find(computation);
  if (it != compiled_.end()) return it->second.get();
  absl::StatusOr<std::unique_ptr<CompiledComputation>> plan =
      CompiledComputation::Build(*computation, *this);
  if (!plan.ok()) return plan.status();
  const CompiledComputation* result = plan->get();
  compiled_[computation] = *std::move(plan);
  return result;
}

}  // namespace tpu::emulator::interpreter
