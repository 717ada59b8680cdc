#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_QR_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_QR_H_

// The Qr and ProductOfElementaryHouseholderReflectors custom-calls
// (kernels_qr.cc describes the semantics).

#include <memory>

#include "absl/status/statusor.h"
#include "emulator/interpreter/kernel.h"

namespace tpu::emulator::interpreter {

absl::StatusOr<std::unique_ptr<Kernel>> CompileQr(
    const HloInstruction& instruction);
absl::StatusOr<std::unique_ptr<Kernel>> CompileHouseholderProduct(
    const HloInstruction& instruction);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_QR_H_
