#ifndef SOFTWARE_TPU_TESTS_SOAK_SOAK_H_
#define SOFTWARE_TPU_TESTS_SOAK_SOAK_H_

// The soak test (issue 13, "Load and faults"): many clients run seeded,
// mixed operations against one real tpu_emulator process on loopback, and
// drop their connection at random points. Afterwards the worker must have
// answered every operation, hold no HBM, have its RSS back near its baseline,
// and no byte read back may differ from what was written (or computed).
//
// Thread safety: RunSoak is self-contained; run one at a time per process.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tpu::tests {

struct SoakOptions {
  std::string emulator_path;  // the tpu_emulator binary
  std::string scratch_dir;    // its port file and logs
  int clients = 16;
  int ops_per_client = 10000;
  uint64_t seed = 1;
  // Expected disconnects per client over its run (each at a random op).
  double disconnects_per_client = 2;
  int chips = 2;
  int cores_per_chip = 2;
  int64_t hbm_bytes_per_core = int64_t{1} << 30;
};

struct SoakReport {
  int64_t operations = 0;  // events issued (alloc, transfers, compile...)
  int64_t answered = 0;    // of those, completed within the bound
  int64_t ok = 0;          // answered with OK
  int64_t aborted_by_disconnect = 0;  // answered with an error after the
                                      // client dropped its connection
  int64_t unexpected_errors = 0;      // errors while connected
  int64_t bytes_checked = 0;          // bytes read back and compared
  int64_t mismatched_reads = 0;       // reads whose bytes differ
  int64_t disconnects = 0;
  int64_t hbm_in_use_after = -1;  // summed over cores, once all are gone
  int64_t rss_baseline_kb = 0;    // worker VmRSS after a warm-up
  int64_t rss_peak_kb = 0;        // worker VmHWM
  int64_t rss_after_kb = 0;       // worker VmRSS at the end
  double seconds = 0;
  bool worker_alive_after = false;
  std::vector<std::string> errors;  // the first few, for the failure message

  bool Passed() const;
  std::string ToString() const;
};

// Starts tpu_emulator, warms it up, measures the baseline, runs the clients,
// checks the worker. Errors only when the harness itself cannot run (the
// worker does not start); the soak's findings are in the report.
absl::StatusOr<SoakReport> RunSoak(const SoakOptions& options);

}  // namespace tpu::tests

#endif  // SOFTWARE_TPU_TESTS_SOAK_SOAK_H_
