#include "emulator/timer_queue.h"

#include <utility>

namespace tpu {

TimerQueue::TimerQueue() : thread_([this] { Loop(); }) {}

TimerQueue::~TimerQueue() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void TimerQueue::Schedule(absl::Time deadline, std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  timers_.emplace(deadline, std::move(fn));
}

void TimerQueue::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (timers_.empty()) {
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !timers_.empty();
      };
      mu_.Await(absl::Condition(&wake));
      continue;
    }
    const absl::Time first = timers_.begin()->first;
    if (absl::Now() < first) {
      // Wakes early when an earlier timer is scheduled (the map's first
      // element changes) or on shutdown.
      auto changed = [this, first]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || timers_.empty() || timers_.begin()->first < first;
      };
      mu_.AwaitWithDeadline(absl::Condition(&changed), first);
      continue;
    }
    std::function<void()> fn = std::move(timers_.begin()->second);
    timers_.erase(timers_.begin());
    mu_.Unlock();
    fn();
    fn = nullptr;
    mu_.Lock();
  }
}

}  // namespace tpu
