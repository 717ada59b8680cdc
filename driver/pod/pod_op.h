#ifndef SOFTWARE_TPU_DRIVER_POD_POD_OP_H_
#define SOFTWARE_TPU_DRIVER_POD_POD_OP_H_

// One operation of the pod driver's event layer, seen as a completion: its
// status once it completes, who waits for it and what runs when it does.
// Scheduling (dependencies, running) lives in PodScheduler.
//
// A PodOp is self-contained: events and handles keep it alive through
// shared_ptr, and it stays usable (Await, AddCallback) after the driver that
// created it is gone.
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace tpu::driver {

class PodOp {
 public:
  // `kind` names the operation in messages ("Allocate", ...); it must be a
  // string literal (it is stored, not copied).
  PodOp(int64_t id, const char* kind) : id_(id), kind_(kind) {}

  PodOp(const PodOp&) = delete;
  PodOp& operator=(const PodOp&) = delete;

  int64_t id() const { return id_; }
  const char* kind() const { return kind_; }

  // Completes the operation with `status` and runs the callbacks registered
  // so far, on the calling thread, outside any lock. Returns false and does
  // nothing if it had already completed (the first completion wins).
  // `origin` is the operation whose own failure caused this one (null: this
  // operation itself).
  bool Complete(absl::Status status, const PodOp* origin = nullptr);

  bool done() const { return done_.load(std::memory_order_acquire); }

  // REQUIRES: done().
  const absl::Status& status() const { return status_; }
  // The operation whose own failure this one carries (itself unless it
  // failed because a dependency did). REQUIRES: done() and !status().ok().
  int64_t origin_id() const { return origin_id_; }
  const char* origin_kind() const { return origin_kind_; }
  // The origin's own status (its message names no dependency).
  const absl::Status& origin_status() const { return origin_status_; }

  absl::Status Await();
  std::optional<absl::Status> AwaitWithTimeout(absl::Duration timeout);

  // Runs `callback` right away on the calling thread if the operation has
  // completed, otherwise on the thread that completes it.
  void AddCallback(std::function<void(absl::Status)> callback);

 private:
  const int64_t id_;
  const char* const kind_;

  // A std::mutex, not absl::Mutex, on purpose: there is one per operation,
  // and absl::Mutex's deadlock detector (on in the system Abseil) costs
  // O(live mutexes) per lock, which made 100,000 operations quadratic.
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  std::vector<std::function<void(absl::Status)>> callbacks_;

  // Written once, under mu_, before done_ is set; read only after it is.
  absl::Status status_;
  int64_t origin_id_ = -1;
  const char* origin_kind_ = nullptr;
  absl::Status origin_status_;
  std::atomic<bool> done_{false};
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_POD_POD_OP_H_
