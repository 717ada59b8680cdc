#include "driver/pod/dispatcher.h"

#include <utility>

namespace tpu::driver {

Dispatcher::Dispatcher() : thread_([this] { Loop(); }) {}

Dispatcher::~Dispatcher() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void Dispatcher::Post(std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  if (stopping_ && !OnDispatcherThread()) return;
  unfinished_.fetch_add(1);
  queue_.push_back(std::move(fn));
}

bool Dispatcher::OnDispatcherThread() const {
  return std::this_thread::get_id() == thread_.get_id();
}

void Dispatcher::Loop() {
  std::deque<std::function<void()>> batch;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping_ and drained.
      batch.swap(queue_);
    }
    // Run outside the lock: closures post more work.
    for (auto& fn : batch) {
      fn();
      fn = nullptr;  // Its captures go before it counts as finished.
      unfinished_.fetch_sub(1);
    }
    batch.clear();
  }
}

}  // namespace tpu::driver
