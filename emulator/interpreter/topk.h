#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_TOPK_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_TOPK_H_

// The top-k kernel, shared by the topk opcode and the TopK custom-call
// (kernels_topk.cc describes the semantics).

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "emulator/interpreter/kernel.h"

namespace tpu::emulator::interpreter {

// `instruction` has one array operand; its result must be (values, s32
// indices) with the last dimension k.
absl::StatusOr<std::unique_ptr<Kernel>> CompileTopK(
    const HloInstruction& instruction, int64_t k, bool largest);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_TOPK_H_
