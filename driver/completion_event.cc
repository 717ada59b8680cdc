#include "driver/completion_event.h"

#include <atomic>
#include <utility>

namespace tpu::driver {

std::shared_ptr<CompletionEvent> CompletionEvent::Done(absl::Status status,
                                                       uint64_t owner) {
  auto event = std::make_shared<CompletionEvent>(EventId{}, owner);
  event->set_submitted();
  event->Complete(std::move(status));
  return event;
}

std::shared_ptr<EventDriver> CompletionEvent::PendingDriver() {
  absl::MutexLock lock(&mu_);
  return done_ ? nullptr : driver_;
}

void CompletionEvent::SetDriver(std::shared_ptr<EventDriver> driver) {
  {
    absl::MutexLock lock(&mu_);
    if (done_) return;
    driver_ = driver;
    if (callbacks_.empty()) return;
  }
  // Callbacks added before (an operation held on the client until its
  // dependencies completed) wait without driving.
  driver->NeedsCompletion(*this);
}

absl::Status CompletionEvent::Await() {
  std::shared_ptr<EventDriver> driver;
  {
    // One lock when it is complete already, as most awaited events of a
    // pipeline are.
    absl::MutexLock lock(&mu_);
    if (done_) return status_;
    driver = driver_;
  }
  if (driver != nullptr) driver->DriveUntilComplete(*this);
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&done_));
  return status_;
}

std::optional<absl::Status> CompletionEvent::AwaitWithTimeout(
    absl::Duration timeout) {
  if (std::shared_ptr<EventDriver> driver = PendingDriver()) {
    driver->NeedsCompletion(*this);
  }
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithTimeout(absl::Condition(&done_), timeout)) {
    return std::nullopt;
  }
  return status_;
}

void CompletionEvent::AddCallback(std::function<void(absl::Status)> callback) {
  absl::Status status;
  std::shared_ptr<EventDriver> driver;
  {
    absl::MutexLock lock(&mu_);
    if (!done_) {
      callbacks_.push_back(std::move(callback));
      driver = driver_;
      if (driver == nullptr) return;
    } else {
      status = status_;
    }
  }
  if (driver != nullptr) {
    // Nobody may wait for it on a thread that could drive it.
    driver->NeedsCompletion(*this);
    return;
  }
  callback(std::move(status));
}

bool CompletionEvent::Complete(absl::Status status) {
  std::vector<std::function<void(absl::Status)>> callbacks;
  std::shared_ptr<EventDriver> driver;  // released outside the lock
  {
    absl::MutexLock lock(&mu_);
    if (done_) return false;
    done_ = true;
    status_ = status;
    callbacks.swap(callbacks_);
    driver.swap(driver_);
  }
  for (auto& callback : callbacks) callback(status);
  return true;
}

bool CompletionEvent::CompleteDeferringCallbacks(absl::Status status,
                                                 const Deferrer& defer) {
  std::vector<std::function<void(absl::Status)>> callbacks;
  std::shared_ptr<EventDriver> driver;  // released outside the lock
  {
    absl::MutexLock lock(&mu_);
    if (done_) return false;
    done_ = true;
    status_ = status;
    callbacks.swap(callbacks_);
    driver.swap(driver_);
  }
  for (auto& callback : callbacks) {
    defer([callback = std::move(callback), status] { callback(status); });
  }
  return true;
}

std::optional<absl::Status> CompletionEvent::Peek() {
  absl::MutexLock lock(&mu_);
  if (!done_) return std::nullopt;
  return status_;
}

uint64_t NewDriverSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tpu::driver
