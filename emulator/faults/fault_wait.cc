#include "emulator/faults/fault_wait.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "emulator/fiber/wake_word.h"

namespace tpu::emulator::faults {

bool SleepUnlessCancelled(absl::Duration duration,
                          const std::atomic<bool>* cancelled) {
  const absl::Time deadline = absl::Now() + duration;
  while (true) {
    if (cancelled != nullptr && cancelled->load()) return false;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return true;
    // A core's fiber parks instead of holding its OS thread.
    fiber::SleepFor(std::min(left, absl::Milliseconds(2)));
  }
}

void FaultThreads::Run(std::function<void()> closure) {
  absl::MutexLock lock(&mu_);
  threads_.emplace_back(std::move(closure));
}

void FaultThreads::JoinAll() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace tpu::emulator::faults
