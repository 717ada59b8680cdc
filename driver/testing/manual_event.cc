#include "driver/testing/manual_event.h"

#include <algorithm>
#include <utility>

namespace tpu::driver::testing {

std::shared_ptr<ManualEvent> ManualEvent::Done(absl::Status status) {
  auto event = std::make_shared<ManualEvent>();
  event->Complete(std::move(status));
  return event;
}

absl::Status ManualEvent::Await() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_; });
  return status_;
}

std::optional<absl::Status> ManualEvent::AwaitWithTimeout(
    absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  // wait_for overflows on absl::InfiniteDuration(); a year is forever here.
  const absl::Duration bounded =
      std::max(std::min(timeout, absl::Hours(24 * 365)), absl::ZeroDuration());
  if (!cv_.wait_for(lock, absl::ToChronoNanoseconds(bounded),
                    [this] { return done_; })) {
    return std::nullopt;
  }
  return status_;
}

void ManualEvent::AddCallback(std::function<void(absl::Status)> callback) {
  absl::Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
    status = status_;
  }
  callback(status);
}

bool ManualEvent::Complete(absl::Status status) {
  std::vector<std::function<void(absl::Status)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return false;
    done_ = true;
    status_ = status;
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  for (auto& callback : callbacks) callback(status);
  return true;
}

std::optional<absl::Status> ManualEvent::Peek() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!done_) return std::nullopt;
  return status_;
}

}  // namespace tpu::driver::testing
