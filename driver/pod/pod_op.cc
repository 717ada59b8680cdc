#include "driver/pod/pod_op.h"

#include <utility>

namespace tpu {

bool PodOp::Complete(absl::Status status, const PodOp* origin) {
  std::vector<std::function<void(absl::Status)>> callbacks;
  {
    absl::MutexLock lock(&mu_);
    if (completing_) return false;
    completing_ = true;
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
    // Notify under the lock: a callback added after this point sees done().
    done_.Notify();
  }
  for (auto& callback : callbacks) callback(status_);
  return true;
}

absl::Status PodOp::Await() {
  done_.WaitForNotification();
  return status_;
}

std::optional<absl::Status> PodOp::AwaitWithTimeout(absl::Duration timeout) {
  if (!done_.WaitForNotificationWithTimeout(timeout)) return std::nullopt;
  return status_;
}

void PodOp::AddCallback(std::function<void(absl::Status)> callback) {
  {
    absl::MutexLock lock(&mu_);
    if (!done_.HasBeenNotified()) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback(status_);
}

}  // namespace tpu
