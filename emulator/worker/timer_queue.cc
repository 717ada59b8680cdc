#include "emulator/worker/timer_queue.h"

#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tpu::emulator {

struct TimerQueue::State {
  absl::Mutex mu;
  std::multimap<absl::Time, std::function<void()>> timers ABSL_GUARDED_BY(mu);
  bool stopping ABSL_GUARDED_BY(mu) = false;
};

TimerQueue::TimerQueue()
    : state_(std::make_shared<State>()), thread_([s = state_] { Loop(s); }) {}

TimerQueue::~TimerQueue() {
  std::multimap<absl::Time, std::function<void()>> dropped;
  {
    absl::MutexLock lock(&state_->mu);
    state_->stopping = true;
    dropped.swap(state_->timers);
  }
  dropped.clear();  // outside the lock: closures may own arbitrary objects
  if (std::this_thread::get_id() == thread_.get_id()) {
    thread_.detach();  // destroyed by one of our own closures
  } else {
    thread_.join();
  }
}

void TimerQueue::Schedule(absl::Time deadline, std::function<void()> fn) {
  absl::MutexLock lock(&state_->mu);
  if (state_->stopping) return;
  state_->timers.emplace(deadline, std::move(fn));
}

void TimerQueue::Loop(std::shared_ptr<State> state) {
  State& s = *state;
  s.mu.Lock();
  while (!s.stopping) {
    if (s.timers.empty()) {
      auto wake = [&s]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
        return s.stopping || !s.timers.empty();
      };
      s.mu.Await(absl::Condition(&wake));
      continue;
    }
    const absl::Time first = s.timers.begin()->first;
    if (absl::Now() < first) {
      // Wakes early when an earlier timer is scheduled or on shutdown.
      auto changed = [&s, first]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
        return s.stopping || s.timers.empty() ||
               s.timers.begin()->first < first;
      };
      s.mu.AwaitWithDeadline(absl::Condition(&changed), first);
      continue;
    }
    std::function<void()> fn = std::move(s.timers.begin()->second);
    s.timers.erase(s.timers.begin());
    s.mu.Unlock();
    fn();
    fn = nullptr;
    s.mu.Lock();
  }
  s.mu.Unlock();
}

}  // namespace tpu::emulator
