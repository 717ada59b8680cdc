#include "emulator/worker/work_queue.h"

#include <utility>

namespace tpu::emulator {

WorkQueue::WorkQueue(std::string name, int num_threads)
    : name_(std::move(name)), serial_(num_threads <= 1) {
  if (num_threads < 1) num_threads = 1;
  threads_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

WorkQueue::WorkQueue(std::string name, fiber::Scheduler* fibers)
    : name_(std::move(name)), serial_(true) {
  fiber_ = fibers->Start([this] { FiberLoop(); });
}

WorkQueue::~WorkQueue() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  changed_.WakeAll();
  for (std::thread& t : threads_) t.join();
  if (fiber_ != nullptr) fiber_->Join();
}

void WorkQueue::Schedule(std::function<void()> fn) {
  {
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(fn));
  }
  if (fiber_ != nullptr) changed_.WakeAll();
}

bool WorkQueue::TryRunInline(const std::function<void()>& fn) {
  {
    absl::MutexLock lock(&mu_);
    if (!serial_ || stopping_ || running_ > 0 || !queue_.empty()) return false;
    ++running_;
  }
  fn();
  bool wake;
  {
    absl::MutexLock lock(&mu_);
    --running_;
    // The fiber waits while a closure runs inline; it has something to do
    // now only if a closure was scheduled meanwhile or the queue stops.
    // Waking it for nothing would wake a sleeping OS thread on every inline
    // run (the futex dominated a tiny program's round trip).
    wake = !queue_.empty() || stopping_;
  }
  if (fiber_ != nullptr && wake) changed_.WakeAll();
  return true;
}

int WorkQueue::pending() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size()) + running_;
}

void WorkQueue::Loop() {
  while (true) {
    std::function<void()> fn;
    {
      absl::MutexLock lock(&mu_);
      auto has_work_or_stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        // A serial queue waits while a closure runs inline elsewhere.
        return (!queue_.empty() && (!serial_ || running_ == 0)) ||
               (stopping_ && running_ == 0);
      };
      mu_.Await(absl::Condition(&has_work_or_stop));
      if (queue_.empty()) return;  // stopping, and nothing can add more
      fn = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    fn();
    fn = nullptr;  // destroy captures outside the lock, before counting down
    absl::MutexLock lock(&mu_);
    --running_;
  }
}

void WorkQueue::FiberLoop() {
  while (true) {
    std::function<void()> fn;
    while (fn == nullptr) {
      // Read before the check: a Schedule after it changes the word, so the
      // wait below returns at once.
      const uint32_t seen = changed_.Load();
      {
        absl::MutexLock lock(&mu_);
        if (!queue_.empty() && running_ == 0) {
          fn = std::move(queue_.front());
          queue_.pop_front();
          ++running_;
          break;
        }
        if (stopping_ && running_ == 0 && queue_.empty()) return;
      }
      changed_.Wait(seen, absl::InfiniteDuration());
    }
    fn();
    fn = nullptr;  // destroy captures before counting down
    absl::MutexLock lock(&mu_);
    --running_;
  }
}

}  // namespace tpu::emulator
