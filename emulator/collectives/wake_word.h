#ifndef SOFTWARE_TPU_EMULATOR_COLLECTIVES_WAKE_WORD_H_
#define SOFTWARE_TPU_EMULATOR_COLLECTIVES_WAKE_WORD_H_

// A word that threads sleep on until it changes: the last participant of a
// meeting wakes every waiter with one system call (a Linux futex), and each
// waiter goes on without taking a lock. A mutex and condition variable would
// hand the waiters the mutex one after another, a chain of wake-ups that
// costs a context switch per waiter on a machine with fewer CPUs than cores.
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace tpu::emulator {

class WakeWord {
 public:
  WakeWord() = default;
  WakeWord(const WakeWord&) = delete;
  WakeWord& operator=(const WakeWord&) = delete;

  // The current value; pass it to Wait after checking what it guards.
  uint32_t Load() const { return word_.load(std::memory_order_acquire); }

  // Sleeps while the word still equals `seen`, for at most `timeout` (and
  // possibly less: callers re-check what they wait for and wait again).
  void Wait(uint32_t seen, absl::Duration timeout);

  // Changes the word and wakes every thread sleeping on it.
  void WakeAll();

 private:
  std::atomic<uint32_t> word_{0};
  // Threads in (or about to enter) Wait: WakeAll skips the system call when
  // nobody sleeps.
  std::atomic<int32_t> sleepers_{0};
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_COLLECTIVES_WAKE_WORD_H_
