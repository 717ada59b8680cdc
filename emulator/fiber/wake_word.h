#ifndef SOFTWARE_TPU_EMULATOR_FIBER_WAKE_WORD_H_
#define SOFTWARE_TPU_EMULATOR_FIBER_WAKE_WORD_H_

// A word that waiters sleep on until it changes: the last participant of a
// meeting wakes every waiter at once, and each goes on without taking a
// lock. A fiber waiting here parks (its OS thread runs other fibers
// meanwhile); a plain thread sleeps on a Linux futex. A mutex and condition
// variable would hand the waiters the mutex one after another, a chain of
// wake-ups that costs a switch per waiter.
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tpu::emulator::fiber {

class Fiber;

class WakeWord {
 public:
  WakeWord() = default;
  WakeWord(const WakeWord&) = delete;
  WakeWord& operator=(const WakeWord&) = delete;

  // The current value; pass it to Wait after checking what it guards.
  uint32_t Load() const { return word_.load(std::memory_order_acquire); }

  // Sleeps while the word still equals `seen`, for at most `timeout` (and
  // possibly less: callers re-check what they wait for and wait again).
  // REQUIRES: on a fiber, no lock held.
  void Wait(uint32_t seen, absl::Duration timeout);

  // Changes the word and wakes every waiter.
  void WakeAll();

 private:
  std::atomic<uint32_t> word_{0};
  // Threads in (or about to enter) the futex: WakeAll skips the system call
  // when nobody sleeps there.
  std::atomic<int32_t> sleepers_{0};
  // Fibers in (or about to enter) the waiter list, likewise.
  std::atomic<int32_t> parkers_{0};
  absl::Mutex mu_;
  // Parked fibers and their park tokens.
  std::vector<std::pair<Fiber*, uint64_t>> parked_ ABSL_GUARDED_BY(mu_);
};

// Waits for `duration`: a fiber parks, a plain thread sleeps.
void SleepFor(absl::Duration duration);

// Runs `fn`, which may block for long on something outside the scheduler (a
// remote procedure call). On a fiber it runs on a thread of its own while the
// fiber parks, so the OS thread keeps serving the other fibers.
void RunBlocking(const std::function<void()>& fn);

// A condition variable for an absl::Mutex whose waiters may be fibers.
// Spurious wake-ups happen; callers wait in a loop, as with absl::CondVar.
class CondVar {
 public:
  // REQUIRES: `mu` held; on a fiber, no other lock held.
  void Wait(absl::Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // True if `timeout` passed.
  bool WaitWithTimeout(absl::Mutex* mu, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void SignalAll() { word_.WakeAll(); }

 private:
  WakeWord word_;
};

}  // namespace tpu::emulator::fiber

#endif  // SOFTWARE_TPU_EMULATOR_FIBER_WAKE_WORD_H_
