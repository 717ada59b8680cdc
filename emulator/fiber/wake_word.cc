#include "emulator/fiber/wake_word.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <ctime>
#include <thread>

#include "absl/time/clock.h"
#include "emulator/fiber/fiber.h"

namespace tpu::emulator::fiber {

void WakeWord::Wait(uint32_t seen, absl::Duration timeout) {
  Fiber* self = Fiber::Current();
  if (self == nullptr) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    // The kernel sleeps only if the word still equals `seen`, so a WakeAll
    // between the caller's check and this call is never lost.
    if (timeout == absl::InfiniteDuration()) {
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_),
              FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
    } else {
      const timespec relative = absl::ToTimespec(timeout);
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_),
              FUTEX_WAIT_PRIVATE, seen, &relative, nullptr, 0);
    }
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    return;
  }
  const absl::Time deadline = timeout == absl::InfiniteDuration()
                                  ? absl::InfiniteFuture()
                                  : absl::Now() + timeout;
  // Counted before the word is read (both seq_cst, as in WakeAll in the
  // other order): a WakeAll either sees this parker or changed the word
  // before the check below.
  parkers_.fetch_add(1, std::memory_order_seq_cst);
  uint64_t token = 0;
  {
    absl::MutexLock lock(&mu_);
    if (word_.load(std::memory_order_seq_cst) != seen) {
      parkers_.fetch_sub(1, std::memory_order_seq_cst);
      return;
    }
    token = self->PrepareToPark();
    parked_.emplace_back(self, token);
  }
  self->Park(token, deadline);
  if (self->timed_out()) {
    // Still on the list (WakeAll takes off only the fibers it claims). Under
    // mu_: a WakeAll may be looking at the entry right now.
    absl::MutexLock lock(&mu_);
    auto it =
        std::find(parked_.begin(), parked_.end(), std::make_pair(self, token));
    if (it != parked_.end()) parked_.erase(it);
  }
  parkers_.fetch_sub(1, std::memory_order_seq_cst);
}

void WakeWord::WakeAll() {
  word_.fetch_add(1, std::memory_order_seq_cst);
  std::vector<Fiber*> claimed;
  if (parkers_.load(std::memory_order_seq_cst) > 0) {
    // Claimed under mu_: a fiber whose park timed out takes mu_ before it
    // leaves Wait, so none can end (and be destroyed) while looked at here.
    // The claimed ones stay parked until ReadyAll, which runs without mu_ so
    // that they do not wake into a held lock (they leave Wait without it).
    absl::MutexLock lock(&mu_);
    claimed.reserve(parked_.size());
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (Fiber::Claim(it->first, it->second)) {
        claimed.push_back(it->first);
        it = parked_.erase(it);
      } else {
        ++it;  // timed out: it takes itself off the list
      }
    }
  }
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAKE_PRIVATE,
            INT_MAX, nullptr, nullptr, 0);
  }
  // Last: once ready, a waiter may leave and destroy this word.
  Fiber::ReadyAll(claimed);
}

void SleepFor(absl::Duration duration) {
  if (Fiber::Current() == nullptr) {
    absl::SleepFor(duration);
    return;
  }
  // Nobody wakes this word: the park ends at the deadline.
  WakeWord word;
  const absl::Time deadline = absl::Now() + duration;
  for (absl::Time now = absl::Now(); now < deadline; now = absl::Now()) {
    word.Wait(word.Load(), deadline - now);
  }
}

void RunBlocking(const std::function<void()>& fn) {
  if (Fiber::Current() == nullptr) {
    fn();
    return;
  }
  std::atomic<bool> done{false};
  WakeWord word;
  std::thread thread([&] {
    fn();
    done.store(true, std::memory_order_release);
    word.WakeAll();
  });
  while (true) {
    const uint32_t seen = word.Load();
    if (done.load(std::memory_order_acquire)) break;
    word.Wait(seen, absl::InfiniteDuration());
  }
  // The thread may still be inside WakeAll: `word` lives until it ends.
  thread.join();
}

void CondVar::Wait(absl::Mutex* mu) {
  // Read under `mu`: a SignalAll after the change the caller waits for
  // (made under `mu`) changes the word, so the wait below cannot miss it.
  const uint32_t seen = word_.Load();
  mu->Unlock();
  word_.Wait(seen, absl::InfiniteDuration());
  mu->Lock();
}

bool CondVar::WaitWithTimeout(absl::Mutex* mu, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  const uint32_t seen = word_.Load();
  mu->Unlock();
  word_.Wait(seen, timeout);
  mu->Lock();
  return absl::Now() >= deadline;
}

}  // namespace tpu::emulator::fiber
