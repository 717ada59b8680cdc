#ifndef SOFTWARE_TPU_EMULATOR_SCHEDULER_H_
#define SOFTWARE_TPU_EMULATOR_SCHEDULER_H_

// The event graph of one client: each operation waits for the operations it
// names (its wait_for_ids and the creators of the handles it uses), then runs.
//
// - Reverse edges (who waits on me) make completing an operation cost
//   O(its dependents), never a scan of everything in flight.
// - A failed dependency fails its dependents without running them, with a
//   status naming it (its code is passed on): "operation 5 (client 3) failed:
//   INVALID_ARGUMENT: ...". Cascades stay short: at most the failed
//   dependency and the root cause are named.
// - An operation may name one that has not arrived yet (it can be in flight on
//   another stream). Such a dependency is waited for `unknown_wait`, then it
//   counts as failed with NOT_FOUND: no wait is unbounded.
// - Dependencies must have smaller operation ids than their dependent (real
//   clients count ids up), which rules out cycles.
// - Completed operations are remembered compactly (an interval set of ids,
//   plus the statuses of failed ones), so a later operation can still name
//   them.
//
// Thread safety: safe for concurrent use. Start callbacks are invoked without
// the scheduler's lock held, through a per-thread trampoline: an operation
// that completes inline inside its Start never recurses into its dependents,
// so chains of any length use constant stack.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "emulator/worker/id_set.h"
#include "emulator/worker/timer_queue.h"

namespace tpu::emulator {

class Scheduler : public std::enable_shared_from_this<Scheduler> {
 public:
  // Called exactly once per operation. With OK: every dependency completed
  // successfully; the operation now runs and must call Complete() exactly
  // once, from any thread (also from inside Start). With an error: the
  // operation will not run (failed dependency, cancellation, invalid id); it
  // only reports the error and must not call Complete().
  using Start = std::function<void(absl::Status)>;

  // `timers` carries the bounded waits for operations not arrived yet.
  static std::shared_ptr<Scheduler> Create(uint32_t client_id,
                                           std::shared_ptr<TimerQueue> timers,
                                           absl::Duration unknown_wait);

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Registers operation `op` (the operation part of its event id, non-zero),
  // which waits for the operations `deps` (operation parts, same client).
  // INVALID_ARGUMENT through `start` if `op` was already used, is zero, or
  // names a dependency that is not smaller than itself.
  void Submit(uint64_t op, absl::Span<const uint64_t> deps, Start start);

  // Registers `op` as failed with `status` (e.g. a malformed request) so that
  // its dependents fail at once, and calls start(status).
  void Reject(uint64_t op, absl::Status status, Start start);

  // The running operation `op` finished. Unknown ops are ignored.
  void Complete(uint64_t op, absl::Status status);

  // Fails every waiting operation with `status`; operations submitted later
  // fail with it too. Running operations finish on their own.
  void Cancel(absl::Status status);

  // Operations registered and not finished, plus unarrived dependencies.
  size_t live_nodes() const;

 private:
  Scheduler(uint32_t client_id, std::shared_ptr<TimerQueue> timers,
            absl::Duration unknown_wait);

  enum class State { kNotArrived, kWaiting, kRunning };
  struct Node {
    State state = State::kNotArrived;
    int pending_deps = 0;
    Start start;
    absl::InlinedVector<uint64_t, 2> dependents;
  };
  // A finished operation that failed.
  struct Failure {
    // The root cause, with its operation named in the message.
    absl::Status root;
    // True if this operation is the root (dependents report `root` as is).
    bool is_root = false;
  };
  // A Start to invoke once the lock is released.
  struct Call {
    Start start;
    absl::Status status;
  };
  // Most operations start or fail one at a time: no allocation for those.
  using Calls = absl::InlinedVector<Call, 2>;

  std::string Name(uint64_t op) const;
  // The status a dependent of the failed `dep` reports.
  absl::Status DependencyFailed(uint64_t dep, const Failure& failure) const;
  // Fails waiting `op` (it reports `reported`; its failure's root cause is
  // `root`) and, iteratively, everything waiting on it.
  void FailCascade(uint64_t op, absl::Status reported, absl::Status root,
                   Calls* calls) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ExpireUnarrived(uint64_t op);
  static void Dispatch(Calls calls);

  // Constant after construction.
  const uint32_t client_id_;
  const std::shared_ptr<TimerQueue> timers_;
  const absl::Duration unknown_wait_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Node> nodes_ ABSL_GUARDED_BY(mu_);
  // Every op that arrived (or was given up on), finished or not.
  IdSet arrived_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Failure> failed_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status cancel_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SCHEDULER_H_
