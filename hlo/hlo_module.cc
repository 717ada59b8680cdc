#include "hlo/hlo_module.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tpu {
namespace {

absl::Status Invalid(const std::string& computation,
                     const std::string& instruction, absl::string_view what) {
  if (instruction.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("HLO computation ", computation, ": ", what));
  }
  return absl::InvalidArgumentError(absl::StrCat("HLO computation ",
                                                 computation, ", instruction ",
                                                 instruction, ": ", what));
}

}  // namespace

std::string HloInstruction::Context() const {
  return absl::StrCat("computation ", parent_ ? parent_->name() : "?",
                      ", instruction ", name(), " (", opcode(), ")");
}

std::vector<Shape> HloComputation::ParameterShapes() const {
  std::vector<Shape> shapes;
  for (const HloInstruction* p : parameters_) shapes.push_back(p->shape());
  return shapes;
}

xla::ProgramShapeProto HloComputation::ComputeProgramShape() const {
  xla::ProgramShapeProto shape;
  for (const HloInstruction* p : parameters_) {
    *shape.add_parameters() = p->shape().ToProto();
    shape.add_parameter_names(p->name());
  }
  *shape.mutable_result() = root_->shape().ToProto();
  return shape;
}

const HloComputation* HloModule::computation_by_id(int64_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

absl::StatusOr<std::unique_ptr<HloModule>> HloModule::FromProto(
    const xla::HloModuleProto& proto) {
  std::unique_ptr<HloModule> module(new HloModule());
  module->name_ = proto.name();
  if (proto.computations_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("HLO module ", proto.name(), " has no computations"));
  }

  // Pass 1: computations and instructions with their shapes.
  std::vector<std::unique_ptr<HloComputation>> computations;
  for (const xla::HloComputationProto& cproto : proto.computations()) {
    auto computation = std::unique_ptr<HloComputation>(new HloComputation());
    computation->name_ = cproto.name();
    computation->id_ = cproto.id();
    computation->is_fusion_ = cproto.is_fusion_computation();
    if (module->by_id_.contains(cproto.id())) {
      return Invalid(cproto.name(), "",
                     absl::StrCat("duplicate computation id ", cproto.id()));
    }
    module->by_id_[cproto.id()] = computation.get();
    if (cproto.instructions_size() == 0) {
      return Invalid(cproto.name(), "", "has no instructions");
    }
    for (const xla::HloInstructionProto& iproto : cproto.instructions()) {
      auto instruction = std::unique_ptr<HloInstruction>(new HloInstruction());
      instruction->proto_ = iproto;
      instruction->parent_ = computation.get();
      absl::StatusOr<Shape> shape = Shape::FromProto(iproto.shape());
      if (!shape.ok()) {
        return Invalid(cproto.name(), iproto.name(),
                       absl::StrCat("bad shape: ", shape.status().message()));
      }
      instruction->shape_ = *std::move(shape);
      if (iproto.opcode().empty()) {
        return Invalid(cproto.name(), iproto.name(), "missing opcode");
      }
      computation->instructions_.push_back(std::move(instruction));
    }
    computations.push_back(std::move(computation));
  }

  // Pass 2: resolve references, parameters and the root.
  for (size_t c = 0; c < computations.size(); ++c) {
    HloComputation& computation = *computations[c];
    const xla::HloComputationProto& cproto = proto.computations(c);
    absl::flat_hash_map<int64_t, HloInstruction*> by_id;
    for (auto& instruction : computation.instructions_) {
      if (!by_id.emplace(instruction->id(), instruction.get()).second) {
        return Invalid(
            computation.name_, instruction->name(),
            absl::StrCat("duplicate instruction id ", instruction->id()));
      }
    }
    std::vector<const HloInstruction*> parameters;
    for (auto& instruction : computation.instructions_) {
      const xla::HloInstructionProto& iproto = instruction->proto_;
      for (int64_t id : iproto.operand_ids()) {
        auto it = by_id.find(id);
        if (it == by_id.end()) {
          return Invalid(computation.name_, iproto.name(),
                         absl::StrCat("operand id ", id,
                                      " is not an instruction of this "
                                      "computation"));
        }
        instruction->operands_.push_back(it->second);
      }
      for (int64_t id : iproto.control_predecessor_ids()) {
        auto it = by_id.find(id);
        if (it == by_id.end()) {
          return Invalid(computation.name_, iproto.name(),
                         absl::StrCat("control predecessor id ", id,
                                      " is not an instruction of this "
                                      "computation"));
        }
        instruction->control_predecessors_.push_back(it->second);
      }
      for (int64_t id : iproto.called_computation_ids()) {
        const HloComputation* callee = module->computation_by_id(id);
        if (callee == nullptr) {
          return Invalid(computation.name_, iproto.name(),
                         absl::StrCat("called computation id ", id,
                                      " does not exist in the module"));
        }
        instruction->called_computations_.push_back(callee);
      }
      if (iproto.opcode() == "parameter") {
        int64_t number = iproto.parameter_number();
        if (number < 0 || number >= cproto.instructions_size()) {
          return Invalid(
              computation.name_, iproto.name(),
              absl::StrCat("parameter number ", number, " out of range"));
        }
        if (static_cast<int64_t>(parameters.size()) <= number) {
          parameters.resize(number + 1, nullptr);
        }
        if (parameters[number] != nullptr) {
          return Invalid(
              computation.name_, iproto.name(),
              absl::StrCat("parameter number ", number, " is also used by ",
                           parameters[number]->name()));
        }
        parameters[number] = instruction.get();
      }
    }
    for (size_t i = 0; i < parameters.size(); ++i) {
      if (parameters[i] == nullptr) {
        return Invalid(
            computation.name_, "",
            absl::StrCat("parameter numbers are not dense: ", i,
                         " is missing but ", parameters.size() - 1, " exists"));
      }
    }
    computation.parameters_ = std::move(parameters);
    auto root = by_id.find(cproto.root_id());
    if (root == by_id.end()) {
      // Older producers leave root_id unset: XLA then takes the last
      // instruction.
      if (cproto.root_id() != 0) {
        return Invalid(computation.name_, "",
                       absl::StrCat("root id ", cproto.root_id(),
                                    " is not an instruction of this "
                                    "computation"));
      }
      computation.root_ = computation.instructions_.back().get();
    } else {
      computation.root_ = root->second;
    }

    // Topological order (iterative DFS; a back edge is a cycle).
    enum Mark : uint8_t { kNew, kActive, kDone };
    absl::flat_hash_map<const HloInstruction*, Mark> marks;
    for (auto& start : computation.instructions_) {
      if (marks[start.get()] == kDone) continue;
      std::vector<std::pair<const HloInstruction*, size_t>> stack;
      stack.push_back({start.get(), 0});
      marks[start.get()] = kActive;
      while (!stack.empty()) {
        auto& [node, next] = stack.back();
        const size_t n_ops = node->operands_.size();
        const size_t n_all = n_ops + node->control_predecessors_.size();
        if (next < n_all) {
          const HloInstruction* dep =
              next < n_ops ? node->operands_[next]
                           : node->control_predecessors_[next - n_ops];
          ++next;
          Mark& mark = marks[dep];
          if (mark == kActive) {
            return Invalid(computation.name_, dep->name(),
                           "instruction graph has a cycle through this "
                           "instruction");
          }
          if (mark == kNew) {
            mark = kActive;
            stack.push_back({dep, 0});
          }
          continue;
        }
        marks[node] = kDone;
        computation.order_.push_back(node);
        stack.pop_back();
      }
    }
  }

  // Call graph: order callees before callers, reject recursion.
  {
    enum Mark : uint8_t { kNew, kActive, kDone };
    absl::flat_hash_map<const HloComputation*, Mark> marks;
    std::vector<const HloComputation*> order;
    std::function<absl::Status(const HloComputation*, int)> visit =
        [&](const HloComputation* c, int depth) -> absl::Status {
      Mark& mark = marks[c];
      if (mark == kDone) return absl::OkStatus();
      if (mark == kActive) {
        return Invalid(c->name(), "", "computation calls itself (recursion)");
      }
      // Everything that walks the call graph (this, planning, execution)
      // recurses once per level.
      if (depth > HloModule::kMaxCallDepth) {
        return Invalid(c->name(), "",
                       absl::StrCat("computations call each other more than ",
                                    HloModule::kMaxCallDepth, " levels deep"));
      }
      mark = kActive;
      for (const auto& instruction : c->instructions_) {
        for (const HloComputation* callee : instruction->called_computations_) {
          absl::Status status = visit(callee, depth + 1);
          if (!status.ok()) return status;
        }
      }
      marks[c] = kDone;
      order.push_back(c);
      return absl::OkStatus();
    };
    for (const auto& c : computations) {
      absl::Status status = visit(c.get(), 1);
      if (!status.ok()) return status;
    }
    // The longest call chain, callees first: planning and execution recurse
    // once per level of it, whatever order the computations came in.
    absl::flat_hash_map<const HloComputation*, int> levels;
    for (const HloComputation* c : order) {
      int level = 1;
      for (const auto& instruction : c->instructions_) {
        for (const HloComputation* callee : instruction->called_computations_) {
          level = std::max(level, levels[callee] + 1);
        }
      }
      if (level > HloModule::kMaxCallDepth) {
        return Invalid(c->name(), "",
                       absl::StrCat("computations call each other more than ",
                                    HloModule::kMaxCallDepth, " levels deep"));
      }
      levels[c] = level;
    }
    absl::flat_hash_map<const HloComputation*, size_t> position;
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
    std::vector<std::unique_ptr<HloComputation>> sorted(computations.size());
    for (auto& c : computations) {
      size_t i = position[c.get()];
      sorted[i] = std::move(c);
    }
    module->computations_ = std::move(sorted);
  }

  // Entry: by name, else by id, else the last computation (XLA's rule).
  for (const auto& c : module->computations_) {
    if (!proto.entry_computation_name().empty() &&
        c->name() == proto.entry_computation_name()) {
      module->entry_ = c.get();
    }
  }
  if (module->entry_ == nullptr && !proto.entry_computation_name().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("HLO module ", proto.name(), ": entry computation ",
                     proto.entry_computation_name(), " does not exist"));
  }
  if (module->entry_ == nullptr) {
    module->entry_ = module->computation_by_id(proto.entry_computation_id());
  }
  if (module->entry_ == nullptr) {
    module->entry_ =
        module->by_id_[proto.computations(proto.computations_size() - 1).id()];
  }
  return module;
}

}  // namespace tpu
