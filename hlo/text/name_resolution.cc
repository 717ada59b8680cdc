// Name resolution: once the whole text is read, names become indices, the
// computations are ordered callees first and the instructions operands
// first, ids are assigned in that order (one counter for the module), and
// the pending protos move into the HloModuleProto with their program
// shapes, the entry computation, the host program shape and the schedule.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hlo/text/hlo_text_util.h"
#include "hlo/text/parser_internal.h"
#include "hlo/text/shape_inference.h"

namespace tpu::hlo::text_internal {

struct Parser::Resolution {
  absl::flat_hash_map<absl::string_view, int> computation_index;
  int entry = -1;
  std::vector<bool> is_fusion;  // Called by a fusion instruction.
  std::vector<int> order;       // Computations, callees first.
  // Per computation: instruction indices, operands first; and the ids.
  std::vector<std::vector<int>> instruction_order;
  std::vector<int64_t> computation_id;
  std::vector<std::vector<int64_t>> instruction_id;
  int64_t next_id = 1;  // One counter for computations and instructions.
};

absl::Status Parser::Resolve(xla::HloModuleProto* module) {
  Resolution r;
  HLO_RETURN_IF_ERROR(IndexComputations(&r));
  HLO_RETURN_IF_ERROR(ResolveNames(&r));
  HLO_RETURN_IF_ERROR(OrderComputations(&r));
  const int num_computations = static_cast<int>(computations_.size());
  r.instruction_order.resize(num_computations);
  r.computation_id.resize(num_computations);
  r.instruction_id.resize(num_computations);
  for (int c : r.order) HLO_RETURN_IF_ERROR(OrderInstructions(c, &r));
  // Callees first, operands first: what an instruction's shape depends on is
  // known when it is reached.
  for (int c : r.order) HLO_RETURN_IF_ERROR(InferShapes(c, r));
  // Needs the operands' element types: before the protos move out.
  SetDefaultComparisonTypes();
  for (int c : r.order) {
    HLO_RETURN_IF_ERROR(EmitComputation(c, r, module->add_computations()));
  }
  module->set_entry_computation_name(std::string(computations_[r.entry].name));
  module->set_entry_computation_id(r.computation_id[r.entry]);
  HLO_RETURN_IF_ERROR(SetHostProgramShape(r, module));
  if (is_scheduled_) SetSchedule(r, module);
  return absl::OkStatus();
}

// Computation names are unique; at most one ENTRY (else the last one).
// Computations the parser made get names no text computation has.
absl::Status Parser::IndexComputations(Resolution* r) {
  const int num_computations = static_cast<int>(computations_.size());
  for (int c = 0; c < num_computations; ++c) {
    const PendingComputation& computation = computations_[c];
    if (computation.synthesized) continue;
    if (!r->computation_index.emplace(computation.name, c).second) {
      return ErrorAt(
          computation.pos,
          absl::StrCat("duplicate computation name '", computation.name, "'"));
    }
    if (computation.is_entry) {
      if (r->entry >= 0) {
        return ErrorAt(computation.pos, "more than one ENTRY computation");
      }
      r->entry = c;
    }
  }
  if (r->entry < 0) r->entry = num_computations - 1;
  for (int c = 0; c < num_computations; ++c) {
    PendingComputation& computation = computations_[c];
    if (!computation.synthesized) continue;
    std::string name(computation.name);
    for (int i = 1; r->computation_index.contains(name); ++i) {
      name = absl::StrCat(computation.name, ".", i);
    }
    owned_names_.push_back(std::move(name));
    computation.name = owned_names_.back();
    r->computation_index.emplace(computation.name, c);
  }
  return absl::OkStatus();
}

absl::Status Parser::ResolveNames(Resolution* r) {
  r->is_fusion.assign(computations_.size(), false);
  for (PendingComputation& computation : computations_) {
    HLO_RETURN_IF_ERROR(
        ResolveInstructionNames(r->computation_index, &computation, r));
  }
  return absl::OkStatus();
}

// Operands and control predecessors name instructions of the same
// computation; called computations name computations.
absl::Status Parser::ResolveInstructionNames(
    const absl::flat_hash_map<absl::string_view, int>& computation_index,
    PendingComputation* computation, Resolution* r) {
  auto lookup = [&](const NameRef& ref, absl::string_view what,
                    std::vector<int>* out) -> absl::Status {
    auto it = computation->by_name.find(ref.name);
    if (it == computation->by_name.end()) {
      return ErrorAt(ref.pos,
                     absl::StrCat("unknown ", what, " '", ref.name, "'"));
    }
    out->push_back(it->second);
    return absl::OkStatus();
  };
  for (PendingInstruction& instruction : computation->instructions) {
    instruction.operand_index.reserve(instruction.operands.size());
    for (const NameRef& ref : instruction.operands) {
      HLO_RETURN_IF_ERROR(lookup(ref, "operand", &instruction.operand_index));
    }
    for (const NameRef& ref : instruction.control_predecessors) {
      HLO_RETURN_IF_ERROR(
          lookup(ref, "control predecessor", &instruction.control_index));
    }
    for (const NameRef& ref : instruction.called) {
      if (ref.index >= 0) {  // A computation the parser made.
        instruction.called_index.push_back(ref.index);
        continue;
      }
      if (ref.name.empty()) {
        return ErrorAt(instruction.pos,
                       absl::StrCat("instruction '", instruction.proto.name(),
                                    "' is missing a called computation "
                                    "(e.g. condition or body)"));
      }
      auto it = computation_index.find(ref.name);
      if (it == computation_index.end()) {
        return ErrorAt(ref.pos,
                       absl::StrCat("unknown computation '", ref.name, "'"));
      }
      instruction.called_index.push_back(it->second);
      if (instruction.proto.opcode() == "fusion") {
        r->is_fusion[it->second] = true;
      }
    }
  }
  return absl::OkStatus();
}

// Post order over the call graph (callees first), starting from text order;
// an explicit stack, since call chains may be deep.
absl::Status Parser::OrderComputations(Resolution* r) {
  const int num_computations = static_cast<int>(computations_.size());
  r->order.reserve(num_computations);
  std::vector<int> state(num_computations, 0);  // 0 new, 1 open, 2 done.
  struct Frame {
    int computation;
    size_t instruction;
    size_t call;
  };
  for (int root = 0; root < num_computations; ++root) {
    if (state[root] != 0) continue;
    std::vector<Frame> stack = {{root, 0, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      Frame& frame = stack.back();
      PendingComputation& computation = computations_[frame.computation];
      if (frame.instruction >= computation.instructions.size()) {
        state[frame.computation] = 2;
        r->order.push_back(frame.computation);
        stack.pop_back();
        continue;
      }
      PendingInstruction& instruction =
          computation.instructions[frame.instruction];
      if (frame.call >= instruction.called_index.size()) {
        ++frame.instruction;
        frame.call = 0;
        continue;
      }
      const int callee = instruction.called_index[frame.call];
      const size_t ref_pos = instruction.called[frame.call].pos;
      ++frame.call;
      if (state[callee] == 1) {
        return ErrorAt(ref_pos,
                       absl::StrCat("computation '", computations_[callee].name,
                                    "' calls itself (cycle)"));
      }
      if (state[callee] == 0) {
        state[callee] = 1;
        stack.push_back({callee, 0, 0});
      }
    }
  }
  return absl::OkStatus();
}

// Instructions of computation `c` in dependency order (operands, then
// control predecessors, first), then the ids of the computation and its
// instructions. REQUIRES: called in r->order.
absl::Status Parser::OrderInstructions(int c, Resolution* r) {
  PendingComputation& computation = computations_[c];
  const int n = static_cast<int>(computation.instructions.size());
  std::vector<int>& topo = r->instruction_order[c];
  topo.reserve(n);
  std::vector<uint8_t> state(n, 0);  // 0 new, 1 open, 2 done.
  std::vector<std::pair<int, size_t>> stack;
  for (int start = 0; start < n; ++start) {
    if (state[start] != 0) continue;
    stack.push_back({start, 0});
    state[start] = 1;
    while (!stack.empty()) {
      auto& [index, next] = stack.back();
      const PendingInstruction& instruction = computation.instructions[index];
      const size_t num_operands = instruction.operand_index.size();
      const size_t total = num_operands + instruction.control_index.size();
      if (next >= total) {
        state[index] = 2;
        topo.push_back(index);
        stack.pop_back();
        continue;
      }
      const bool is_operand = next < num_operands;
      const int dep = is_operand
                          ? instruction.operand_index[next]
                          : instruction.control_index[next - num_operands];
      const size_t dep_pos =
          is_operand
              ? instruction.operands[next].pos
              : instruction.control_predecessors[next - num_operands].pos;
      ++next;
      if (state[dep] == 1) {
        return ErrorAt(
            dep_pos,
            absl::StrCat("cycle through instruction '",
                         computation.instructions[dep].proto.name(), "'"));
      }
      if (state[dep] == 0) {
        state[dep] = 1;
        stack.push_back({dep, 0});
      }
    }
  }
  r->computation_id[c] = r->next_id++;
  r->instruction_id[c].resize(n);
  for (int index : topo) r->instruction_id[c][index] = r->next_id++;
  return absl::OkStatus();
}

// Result shapes the text left out, and the parameter shapes of the
// computations wrapping async shorthands (the async-start's operand shapes).
absl::Status Parser::InferShapes(int c, const Resolution& r) {
  PendingComputation& computation = computations_[c];
  for (int index : r.instruction_order[c]) {
    PendingInstruction& instruction = computation.instructions[index];
    std::vector<const xla::ShapeProto*> operands;
    for (int op : instruction.operand_index) {
      operands.push_back(&computation.instructions[op].proto.shape());
    }
    if (instruction.async_opcode == "async-start") {
      PendingComputation& wrapped =
          computations_[instruction.called_index.at(0)];
      for (size_t i = 0; i < operands.size(); ++i) {
        *wrapped.instructions[i].proto.mutable_shape() = *operands[i];
      }
    }
    if (!instruction.infer_shape) continue;
    std::vector<const xla::ShapeProto*> called;
    for (int callee : instruction.called_index) {
      const PendingComputation& k = computations_[callee];
      called.push_back(&k.instructions[k.root].proto.shape());
    }
    absl::StatusOr<xla::ShapeProto> shape =
        InferShape(instruction.proto, operands, called);
    if (!shape.ok()) {
      return ErrorAt(
          instruction.pos,
          absl::StrCat("cannot infer the shape of '", instruction.proto.name(),
                       "': ", shape.status().message()));
    }
    *instruction.proto.mutable_shape() = *std::move(shape);
  }
  return absl::OkStatus();
}

// compare without type= gets the default for its operands' element type.
void Parser::SetDefaultComparisonTypes() {
  for (PendingComputation& computation : computations_) {
    for (PendingInstruction& instruction : computation.instructions) {
      if (!instruction.default_comparison_type ||
          instruction.operand_index.empty()) {
        continue;
      }
      const xla::PrimitiveType t =
          computation.instructions[instruction.operand_index[0]]
              .proto.shape()
              .element_type();
      instruction.proto.set_comparison_type(
          std::string(DefaultComparisonType(t)));
    }
  }
}

absl::Status Parser::EmitComputation(int c, const Resolution& r,
                                     xla::HloComputationProto* out) {
  PendingComputation& computation = computations_[c];
  const std::vector<int64_t>& ids = r.instruction_id[c];
  out->set_name(std::string(computation.name));
  out->set_id(r.computation_id[c]);
  out->set_root_id(ids[computation.root]);
  out->set_is_fusion_computation(r.is_fusion[c]);
  out->set_execution_thread(computation.execution_thread);
  HLO_RETURN_IF_ERROR(
      SetProgramShape(computation, out->mutable_program_shape()));
  out->mutable_instructions()->Reserve(
      static_cast<int>(computation.instructions.size()));
  for (int index : r.instruction_order[c]) {
    PendingInstruction& instruction = computation.instructions[index];
    xla::HloInstructionProto& proto = instruction.proto;
    proto.set_id(ids[index]);
    proto.mutable_operand_ids()->Reserve(
        static_cast<int>(instruction.operand_index.size()));
    for (int op : instruction.operand_index) proto.add_operand_ids(ids[op]);
    for (int pred : instruction.control_index) {
      proto.add_control_predecessor_ids(ids[pred]);
    }
    for (int callee : instruction.called_index) {
      proto.add_called_computation_ids(r.computation_id[callee]);
    }
    out->mutable_instructions()->AddAllocated(instruction.owned.release());
  }
  return absl::OkStatus();
}

// Parameters by number (each number once, none missing), then the root's
// shape.
absl::Status Parser::SetProgramShape(const PendingComputation& computation,
                                     xla::ProgramShapeProto* program_shape) {
  std::vector<const PendingInstruction*> parameters;
  for (const PendingInstruction& instruction : computation.instructions) {
    if (instruction.proto.opcode() != "parameter") continue;
    const int64_t number = instruction.proto.parameter_number();
    if (number >= static_cast<int64_t>(computation.instructions.size())) {
      return ErrorAt(instruction.pos, "parameter number out of range");
    }
    if (parameters.size() <= static_cast<size_t>(number)) {
      parameters.resize(number + 1, nullptr);
    }
    if (parameters[number] != nullptr) {
      return ErrorAt(instruction.pos,
                     absl::StrCat("duplicate parameter number ", number));
    }
    parameters[number] = &instruction;
  }
  for (size_t p = 0; p < parameters.size(); ++p) {
    if (parameters[p] == nullptr) {
      return ErrorAt(computation.pos,
                     absl::StrCat("computation '", computation.name,
                                  "' has no parameter number ", p));
    }
    *program_shape->add_parameters() = parameters[p]->proto.shape();
    program_shape->add_parameter_names(parameters[p]->proto.name());
  }
  *program_shape->mutable_result() =
      computation.instructions[computation.root].proto.shape();
  return absl::OkStatus();
}

// entry_computation_layout when given (it must match the entry's parameter
// count), else the entry computation's own program shape.
absl::Status Parser::SetHostProgramShape(const Resolution& r,
                                         xla::HloModuleProto* module) {
  const xla::HloComputationProto* entry_proto = nullptr;
  for (const auto& c : module->computations()) {
    if (c.id() == r.computation_id[r.entry]) entry_proto = &c;
  }
  xla::ProgramShapeProto* host = module->mutable_host_program_shape();
  if (!has_entry_layout_) {
    *host->mutable_parameters() = entry_proto->program_shape().parameters();
    *host->mutable_result() = entry_proto->program_shape().result();
    return absl::OkStatus();
  }
  if (entry_layout_.parameters_size() !=
      entry_proto->program_shape().parameters_size()) {
    return ErrorAt(
        entry_layout_pos_,
        absl::StrCat("entry_computation_layout has ",
                     entry_layout_.parameters_size(),
                     " parameters but the entry computation has ",
                     entry_proto->program_shape().parameters_size()));
  }
  *host = entry_layout_;
  return absl::OkStatus();
}

// The text order of every non-fusion computation.
void Parser::SetSchedule(const Resolution& r, xla::HloModuleProto* module) {
  auto* sequences = module->mutable_schedule()->mutable_sequences();
  for (int c : r.order) {
    if (r.is_fusion[c]) continue;
    auto& sequence = (*sequences)[r.computation_id[c]];
    for (size_t i = 0; i < computations_[c].instructions.size(); ++i) {
      sequence.add_instruction_ids(r.instruction_id[c][i]);
    }
  }
}

}  // namespace tpu::hlo::text_internal
