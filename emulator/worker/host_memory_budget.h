#ifndef SOFTWARE_TPU_EMULATOR_WORKER_HOST_MEMORY_BUDGET_H_
#define SOFTWARE_TPU_EMULATOR_WORKER_HOST_MEMORY_BUDGET_H_

// The worker's host memory budget as users give it: byte sizes with units
// (also what fault rules' hbm= takes), and a default that leaves the rest of
// the machine alone. The accountant
// itself is tpu::MemoryBudget (hlo/memory_budget.h), which every buffer
// charges.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tpu::emulator {

// "8GiB", "512 MiB", "1.5GiB", "4GB", "65536" (bytes), case-insensitive:
// binary units KiB MiB GiB TiB (also K M G T), decimal units kB MB GB TB.
// INVALID_ARGUMENT naming the text for anything else, zero or negative.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);

// Half of this machine's physical memory (MemTotal in /proc/meminfo, else
// sysconf), at least 1 GiB: leaves room for the rest of the host, the
// worker's own code and gRPC's buffers.
int64_t DefaultHostMemoryBudget();

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_WORKER_HOST_MEMORY_BUDGET_H_
