#ifndef SOFTWARE_TPU_EMULATOR_TIMER_QUEUE_H_
#define SOFTWARE_TPU_EMULATOR_TIMER_QUEUE_H_

// Runs closures at (or soon after) a deadline on one background thread. Used
// for the bounded waits of the worker (a handle named before its operation
// arrived) and for idle-client sweeps.
//
// Thread safety: safe for concurrent use. Closures run on the timer thread,
// one at a time; they must be short and must not block.

#include <functional>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tpu {

class TimerQueue {
 public:
  TimerQueue();
  // Joins the thread; closures whose deadline has not come are dropped.
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  void Schedule(absl::Time deadline, std::function<void()> fn);

 private:
  void Loop();

  absl::Mutex mu_;
  std::multimap<absl::Time, std::function<void()>> timers_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tpu

#endif  // SOFTWARE_TPU_EMULATOR_TIMER_QUEUE_H_
