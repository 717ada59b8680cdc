#ifndef SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_WAIT_H_
#define SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_WAIT_H_

// How delayed and held operations wait: on the client's cancellation flag,
// so that Close, Reset or worker shutdown cut every fault wait short.
//
// Thread safety: the functions are reentrant; FaultThreads is safe for
// concurrent use.

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tpu::emulator::faults {

// Sleeps for `duration`, or until `*cancelled` (null: never). Returns false
// if cancelled. The flag is polled every millisecond or two: faults are
// rare, and this keeps the wait independent of how the flag is set. On a
// fiber (a core's programs) the fiber parks: the OS thread runs other cores.
bool SleepUnlessCancelled(absl::Duration duration,
                          const std::atomic<bool>* cancelled);

// Runs closures that wait because of a fault (a delayed or held transfer,
// say) on threads of their own, so that they never occupy a thread the
// worker's other clients need. The destructor joins them: the closures must
// end once their client is cancelled.
class FaultThreads {
 public:
  FaultThreads() = default;
  ~FaultThreads() { JoinAll(); }
  FaultThreads(const FaultThreads&) = delete;
  FaultThreads& operator=(const FaultThreads&) = delete;

  void Run(std::function<void()> closure);
  void JoinAll();

 private:
  absl::Mutex mu_;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tpu::emulator::faults

#endif  // SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_WAIT_H_
