#ifndef SOFTWARE_TPU_DRIVER_TESTING_FAKE_WORKER_STATE_H_
#define SOFTWARE_TPU_DRIVER_TESTING_FAKE_WORKER_STATE_H_

// Internals of fake_driver.h shared by its two translation units: what a
// FakeWorker and the drivers opened on it share, and how an operation runs.
// Tests include fake_driver.h, never this.
//
// Thread safety: State is safe for concurrent use; its fields are guarded by
// mu unless constant after construction.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "driver/testing/fake_driver.h"
#include "driver/testing/manual_event.h"
#include "driver/tpu_driver.h"

namespace tpu::driver::testing {

// The default executor: output 0 byte i = input 0 byte i + 1.
absl::Status AddOneToEachByte(const std::vector<Literal>& inputs,
                              std::vector<Literal>* outputs);

struct FakeWorker::State : public std::enable_shared_from_this<State> {
  enum class Holding { kNothing, kExecutions, kEverything };
  // An operation ready to run, or held.
  struct Op {
    const void* driver = nullptr;
    std::string kind;
    std::function<absl::Status()> effect;
    std::shared_ptr<ManualEvent> event;
  };

  // Constant after construction.
  FakeWorkerOptions options;
  absl::flat_hash_set<int32_t> local_cores;
  tpu_driver::SystemInfo info;

  absl::Mutex mu;
  Holding holding ABSL_GUARDED_BY(mu) = Holding::kNothing;
  bool gone ABSL_GUARDED_BY(mu) = false;
  std::deque<Op> queue ABSL_GUARDED_BY(mu);
  std::map<std::string, std::deque<absl::Status>> fail_next ABSL_GUARDED_BY(mu);
  std::map<std::string, int64_t> issued ABSL_GUARDED_BY(mu);
  std::map<int32_t, xla::DeviceAssignmentProto> assignments ABSL_GUARDED_BY(mu);
  std::optional<xla::DeviceAssignmentProto> last_assignment ABSL_GUARDED_BY(mu);
  std::vector<int32_t> executed_cores ABSL_GUARDED_BY(mu);
  int32_t last_num_replicas ABSL_GUARDED_BY(mu) = 0;
  std::map<int32_t, int64_t> hbm_in_use ABSL_GUARDED_BY(mu);
  int64_t live_buffers ABSL_GUARDED_BY(mu) = 0;
  int64_t live_loaded ABSL_GUARDED_BY(mu) = 0;
  int64_t drivers_open ABSL_GUARDED_BY(mu) = 0;
  int64_t resets ABSL_GUARDED_BY(mu) = 0;
  Executor executor ABSL_GUARDED_BY(mu) = AddOneToEachByte;

  absl::Status Lost() const;

  // Operation `kind` of `driver`: counted now, run once `deps` completed
  // (FAILED_PRECONDITION "a dependency failed: ..." if one failed).
  std::shared_ptr<ManualEvent> Issue(const void* driver, std::string kind,
                                     const std::vector<Event*>& deps,
                                     std::function<absl::Status()> effect);
  // Runs a ready operation now, unless the worker is gone, a failure was
  // planted for it, or it is held.
  void Run(Op op);
  // Fails the held operations `driver` issued (all of them if null).
  void FailQueued(const void* driver, const absl::Status& status);
};

// A driver on the worker whose state is `state` (fake_driver.cc).
std::unique_ptr<TpuDriver> NewFakeDriver(
    std::shared_ptr<FakeWorker::State> state);

}  // namespace tpu::driver::testing

#endif  // SOFTWARE_TPU_DRIVER_TESTING_FAKE_WORKER_STATE_H_
