#ifndef SOFTWARE_TPU_TESTS_POD_LOOPBACK_SLICE_H_
#define SOFTWARE_TPU_TESTS_POD_LOOPBACK_SLICE_H_

// A pod slice of real tpu_emulator processes on loopback ports, for
// end-to-end tests: `hosts` workers of 2 chips x 2 cores, host h listening
// on the h-th address of everyone's --pod_addresses.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/lib/subprocess.h"

namespace tpu::tests {

// Logs go to ScratchDir() as `<name>_host<h>`.
absl::StatusOr<std::vector<std::unique_ptr<tools::ServerProcess>>>
StartLoopbackSlice(int hosts, const std::string& name);

}  // namespace tpu::tests

#endif  // SOFTWARE_TPU_TESTS_POD_LOOPBACK_SLICE_H_
