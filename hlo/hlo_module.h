#ifndef SOFTWARE_TPU_HLO_HLO_MODULE_H_
#define SOFTWARE_TPU_HLO_HLO_MODULE_H_

// The in-memory HLO IR: a module of computations of instructions, loaded from
// an xla::HloModuleProto with structural validation.
//
// Loading checks what every consumer relies on: every operand id, control
// predecessor and called computation resolves; every shape is well formed;
// parameter numbers of each computation are dense (0..n-1, each once); the
// instruction graph and the call graph are acyclic; the root exists.
// Operation-specific shape checks (does `add` of f32[2] and f32[3] make
// sense?) belong to whoever executes the module (the interpreter verifies
// them when it chooses kernels).
//
// Errors are INVALID_ARGUMENT naming the computation and the instruction.
//
// Thread safety: immutable after FromProto; safe for concurrent reads.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "hlo/shape.h"
#include "proto/hlo.pb.h"

namespace tpu {

class HloComputation;

class HloInstruction {
 public:
  HloInstruction(const HloInstruction&) = delete;
  HloInstruction& operator=(const HloInstruction&) = delete;

  // The instruction as it was loaded (all opcode-specific attributes).
  const xla::HloInstructionProto& proto() const { return proto_; }
  const std::string& name() const { return proto_.name(); }
  const std::string& opcode() const { return proto_.opcode(); }
  int64_t id() const { return proto_.id(); }
  const Shape& shape() const { return shape_; }

  int64_t operand_count() const {
    return static_cast<int64_t>(operands_.size());
  }
  const HloInstruction* operand(int64_t i) const { return operands_[i]; }
  const std::vector<const HloInstruction*>& operands() const {
    return operands_;
  }
  const std::vector<const HloComputation*>& called_computations() const {
    return called_computations_;
  }
  const HloComputation* parent() const { return parent_; }

  // "computation C, instruction I (opcode)": for error messages.
  std::string Context() const;

 private:
  friend class HloModule;
  HloInstruction() = default;

  xla::HloInstructionProto proto_;
  Shape shape_;
  std::vector<const HloInstruction*> operands_;
  std::vector<const HloInstruction*> control_predecessors_;
  std::vector<const HloComputation*> called_computations_;
  const HloComputation* parent_ = nullptr;
};

class HloComputation {
 public:
  HloComputation(const HloComputation&) = delete;
  HloComputation& operator=(const HloComputation&) = delete;

  const std::string& name() const { return name_; }
  int64_t id() const { return id_; }
  bool is_fusion_computation() const { return is_fusion_; }

  // Every instruction, operands (and control predecessors) before users.
  const std::vector<const HloInstruction*>& instructions_in_order() const {
    return order_;
  }
  const HloInstruction* root() const { return root_; }
  // parameters()[i] has parameter_number i.
  const std::vector<const HloInstruction*>& parameters() const {
    return parameters_;
  }
  int64_t num_parameters() const {
    return static_cast<int64_t>(parameters_.size());
  }
  std::vector<Shape> ParameterShapes() const;
  xla::ProgramShapeProto ComputeProgramShape() const;

 private:
  friend class HloModule;
  HloComputation() = default;

  std::string name_;
  int64_t id_ = 0;
  bool is_fusion_ = false;
  std::vector<std::unique_ptr<HloInstruction>> instructions_;
  std::vector<const HloInstruction*> order_;
  std::vector<const HloInstruction*> parameters_;
  const HloInstruction* root_ = nullptr;
};

class HloModule {
 public:
  // Longest chain of computations calling computations (while bodies, calls,
  // reducers, ...) that FromProto accepts; INVALID_ARGUMENT beyond it.
  static constexpr int kMaxCallDepth = 256;

  // Loads and validates `proto` (see the file comment).
  static absl::StatusOr<std::unique_ptr<HloModule>> FromProto(
      const xla::HloModuleProto& proto);

  HloModule(const HloModule&) = delete;
  HloModule& operator=(const HloModule&) = delete;

  const std::string& name() const { return name_; }
  const HloComputation* entry() const { return entry_; }
  // Callees before callers.
  const std::vector<std::unique_ptr<HloComputation>>& computations() const {
    return computations_;
  }
  // nullptr if no computation has that id.
  const HloComputation* computation_by_id(int64_t id) const;

 private:
  HloModule() = default;

  std::string name_;
  std::vector<std::unique_ptr<HloComputation>> computations_;
  absl::flat_hash_map<int64_t, const HloComputation*> by_id_;
  const HloComputation* entry_ = nullptr;
};

}  // namespace tpu

#endif  // SOFTWARE_TPU_HLO_HLO_MODULE_H_
