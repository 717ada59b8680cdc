#ifndef SOFTWARE_TPU_EMULATOR_TIMER_QUEUE_H_
#define SOFTWARE_TPU_EMULATOR_TIMER_QUEUE_H_

// Runs closures at (or soon after) a deadline on one background thread. Used
// for the bounded waits of the worker (a handle named before its operation
// arrived) and for idle-client sweeps.
//
// Thread safety: safe for concurrent use. Closures run on the timer thread,
// one at a time; they must be short and must not block. A closure may drop
// the last reference to the queue itself (the thread then winds down on its
// own instead of being joined).

#include <functional>
#include <memory>
#include <thread>

#include "absl/time/time.h"

namespace tpu::emulator {

class TimerQueue {
 public:
  TimerQueue();
  // Stops the thread; closures whose deadline has not come are dropped.
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  void Schedule(absl::Time deadline, std::function<void()> fn);

 private:
  struct State;
  static void Loop(std::shared_ptr<State> state);

  // Shared with the thread, so the thread may outlive this object.
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_TIMER_QUEUE_H_
