#ifndef SOFTWARE_TPU_EMULATOR_TRACE_ACTIVITY_H_
#define SOFTWARE_TPU_EMULATOR_TRACE_ACTIVITY_H_

// Programs run and busy time, per core and per client, for the control
// service's GetStats. Always counted: one short locked update per program
// run, nothing per instruction.
//
// Thread safety: safe for concurrent use.

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace tpu::emulator::trace {

struct Activity {
  int64_t programs_run = 0;
  int64_t busy_micros = 0;
};

class ActivityCounters {
 public:
  // A program ran on `core` for `client_id` (successfully or not).
  void ProgramRan(int core, uint32_t client_id, int64_t micros);
  Activity Core(int core) const;
  Activity Client(uint32_t client_id) const;
  // A closed client's counts go.
  void ForgetClient(uint32_t client_id);

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int, Activity> cores_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint32_t, Activity> clients_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tpu::emulator::trace

#endif  // SOFTWARE_TPU_EMULATOR_TRACE_ACTIVITY_H_
