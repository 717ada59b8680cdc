#ifndef SOFTWARE_TPU_DRIVER_COMPLETION_EVENT_H_
#define SOFTWARE_TPU_DRIVER_COMPLETION_EVENT_H_

// The Event implementation every driver shares: completed exactly once with a
// status, by whoever learns the outcome (a response reader, a failed stream,
// an up-front check).
//
// Thread safety: safe for concurrent use. Callbacks run outside the internal
// lock, so they may call back into the event (or the driver).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "driver/tpu_driver.h"
#include "proto/event_id.h"

namespace tpu::driver {

class CompletionEvent;

// What completes an event can also make progress on a waiter's behalf: the
// stream that carries its operation (driver/stream_channel.h). A thread that
// waits for the response itself, instead of waiting for another thread to
// read it and wake it, saves two thread hand-offs per round trip, which on
// a virtual machine cost more than the rest of the round trip.
class EventDriver {
 public:
  virtual ~EventDriver() = default;
  // Called by Await before it blocks, on the waiting thread: does the I/O
  // that completes `event` on this thread if it can (returning once it is
  // complete), else makes sure another thread will (returning at once).
  virtual void DriveUntilComplete(const CompletionEvent& event) = 0;
  // Someone waits for `event` without driving it (a callback, a timed
  // wait): it must complete without help from a waiting thread.
  virtual void NeedsCompletion(const CompletionEvent& event) = 0;
};

class CompletionEvent : public Event {
 public:
  // `owner` identifies the driver instance that issued the operation (see
  // NewDriverSerial); 0 for events that belong to no driver.
  CompletionEvent(EventId id, uint64_t owner) : id_(id), owner_(owner) {}

  // An event that has already failed with `status` (REQUIRES: !status.ok()),
  // or succeeded when `status` is OK. Its id is 0:0, as the reference client's
  // locally failed events.
  static std::shared_ptr<CompletionEvent> Done(absl::Status status,
                                               uint64_t owner = 0);

  CompletionEvent(const CompletionEvent&) = delete;
  CompletionEvent& operator=(const CompletionEvent&) = delete;

  absl::Status Await() override;
  std::optional<absl::Status> AwaitWithTimeout(absl::Duration timeout) override;
  void AddCallback(std::function<void(absl::Status)> callback) override;

  // Completes the event and runs its callbacks on the calling thread. Only the
  // first call has an effect; returns whether it was the first.
  bool Complete(absl::Status status);

  // Completes the event as Complete does, but hands each callback to `defer`
  // (which runs it later, elsewhere) instead of running it here: for a thread
  // that may hold its caller's locks. Without callbacks nothing is deferred.
  using Deferrer = std::function<void(std::function<void()>)>;
  bool CompleteDeferringCallbacks(absl::Status status, const Deferrer& defer);

  // The status if complete, nullopt otherwise. Never blocks.
  std::optional<absl::Status> Peek();

  // Until the event completes, waiting for it goes through `driver`.
  void SetDriver(std::shared_ptr<EventDriver> driver);

  EventId id() const { return id_; }
  uint64_t owner() const { return owner_; }

  // Whether the operation has been handed to its stream's writer (so the
  // worker will learn of it). An operation held back on the client is not.
  bool submitted() const { return submitted_.load(std::memory_order_acquire); }
  void set_submitted() { submitted_.store(true, std::memory_order_release); }

 private:
  const EventId id_;
  const uint64_t owner_;
  std::atomic<bool> submitted_{false};

  // Null once complete.
  std::shared_ptr<EventDriver> PendingDriver();

  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<EventDriver> driver_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<void(absl::Status)>> callbacks_
      ABSL_GUARDED_BY(mu_);
};

// A process-wide unique, never reused, non-zero serial number for a driver
// instance. Handles and events record it so that a handle from another driver
// (or from before a server restart) is recognised, even if the worker handed
// out the same client id again.
uint64_t NewDriverSerial();

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_COMPLETION_EVENT_H_
