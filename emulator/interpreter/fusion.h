#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_FUSION_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_FUSION_H_

// Elementwise loop fusion, chosen at compile time: a tree of f32 elementwise
// instructions (and broadcasts feeding them) whose inner values have no other
// user runs as one kernel that streams tiles of the output through the whole
// tree, so only the leaves are read and only the root is written. This is
// what makes `a * broadcast(b) + c` run near memory bandwidth.
//
// Semantics are unchanged: each node computes exactly what its own kernel
// would (same f32 operations in the same order per element).
//
// Thread safety: the returned kernels follow kernel.h.

#include <memory>
#include <vector>

#include "emulator/interpreter/kernel.h"
#include "hlo/hlo_module.h"

namespace tpu::emulator::interpreter {

struct FusionGroup {
  const HloInstruction* root = nullptr;
  // Instructions computed inside the group other than the root; the plan
  // does not run them on their own.
  std::vector<const HloInstruction*> absorbed;
  // Values the kernel reads, in the order of its operands.
  std::vector<const HloInstruction*> leaves;
  std::unique_ptr<Kernel> kernel;
};

// Groups of at least two instructions; every instruction is in at most one.
std::vector<FusionGroup> FindElementwiseFusions(
    const HloComputation& computation);

// The groups the plan runs: convolutions fused with their bias add,
// activation and max pool (conv_epilogue.h) where the registry has the
// fused factory, then elementwise groups among the other instructions.
std::vector<FusionGroup> FindFusions(const HloComputation& computation,
                                     KernelCompiler& compiler);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_FUSION_H_
