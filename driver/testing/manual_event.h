#ifndef SOFTWARE_TPU_DRIVER_TESTING_MANUAL_EVENT_H_
#define SOFTWARE_TPU_DRIVER_TESTING_MANUAL_EVENT_H_

// An Event completed by hand: by a test, to control when what waits on it
// may go on, or by a fake driver (fake_driver.h), as its operations' events.
//
// Thread safety: safe for concurrent use. Callbacks run outside the lock, on
// the thread that completes the event (or, once it is complete, on the
// thread that adds them).

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "driver/tpu_driver.h"

namespace tpu::driver::testing {

class ManualEvent : public Event {
 public:
  ManualEvent() = default;
  ManualEvent(const ManualEvent&) = delete;
  ManualEvent& operator=(const ManualEvent&) = delete;

  // An event already completed with `status`.
  static std::shared_ptr<ManualEvent> Done(absl::Status status);

  absl::Status Await() override;
  std::optional<absl::Status> AwaitWithTimeout(absl::Duration timeout) override;
  void AddCallback(std::function<void(absl::Status)> callback) override;

  // Completes the event and runs the callbacks added so far, on the calling
  // thread. Only the first call has an effect; returns whether it was it.
  bool Complete(absl::Status status);

  // The status if complete, nullopt otherwise. Never blocks.
  std::optional<absl::Status> Peek();

 private:
  // A std::mutex, not absl::Mutex: fakes make one per operation, and
  // absl::Mutex's deadlock detector (on in the system Abseil) costs
  // O(live mutexes) per lock, which made long chains quadratic.
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_; status_ is written once, before done_ is set.
  bool done_ = false;
  absl::Status status_;
  std::vector<std::function<void(absl::Status)>> callbacks_;
};

}  // namespace tpu::driver::testing

#endif  // SOFTWARE_TPU_DRIVER_TESTING_MANUAL_EVENT_H_
