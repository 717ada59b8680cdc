#include "driver/pod/pod_op.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace tpu::driver {

bool PodOp::Complete(absl::Status status, const PodOp* origin) {
  std::vector<std::function<void(absl::Status)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_.load(std::memory_order_relaxed)) return false;
    status_ = std::move(status);
    if (origin != nullptr) {
      // Absl statuses share their payload: copying is cheap.
      origin_id_ = origin->origin_id();
      origin_kind_ = origin->origin_kind();
      origin_status_ = origin->origin_status();
    } else {
      origin_id_ = id_;
      origin_kind_ = kind_;
      origin_status_ = status_;
    }
    callbacks.swap(callbacks_);
    // Set under the lock: a callback added after this point sees done().
    done_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
  for (auto& callback : callbacks) callback(status_);
  return true;
}

absl::Status PodOp::Await() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_.load(std::memory_order_relaxed); });
  return status_;
}

std::optional<absl::Status> PodOp::AwaitWithTimeout(absl::Duration timeout) {
  if (timeout == absl::InfiniteDuration()) return Await();
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline =
      std::chrono::steady_clock::now() +
      absl::ToChronoNanoseconds(std::max(timeout, absl::ZeroDuration()));
  if (!cv_.wait_until(lock, deadline, [this] {
        return done_.load(std::memory_order_relaxed);
      })) {
    return std::nullopt;
  }
  return status_;
}

void PodOp::AddCallback(std::function<void(absl::Status)> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_.load(std::memory_order_relaxed)) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback(status_);
}

}  // namespace tpu::driver
