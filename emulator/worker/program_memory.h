#ifndef SOFTWARE_TPU_EMULATOR_WORKER_PROGRAM_MEMORY_H_
#define SOFTWARE_TPU_EMULATOR_WORKER_PROGRAM_MEMORY_H_

// Compile-time check of a program against the host memory budget: a value
// larger than the whole budget can never be held, so the compile fails at
// once with the instruction named, rather than every execute failing later.
// Values that fit alone but not together still fail at execute, when the
// budget refuses an allocation.

#include "absl/status/status.h"
#include "hlo/memory_budget.h"
#include "proto/hlo.pb.h"

namespace tpu::emulator {

// RESOURCE_EXHAUSTED naming the first instruction whose array result (or
// tuple element) takes more than budget.limit() bytes. Shapes that do not
// parse are left to the compiler to report.
absl::Status CheckValuesFitBudget(const xla::HloModuleProto& module,
                                  const MemoryBudget& budget);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_WORKER_PROGRAM_MEMORY_H_
