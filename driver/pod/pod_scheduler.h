#ifndef SOFTWARE_TPU_DRIVER_POD_POD_SCHEDULER_H_
#define SOFTWARE_TPU_DRIVER_POD_POD_SCHEDULER_H_

// The pod driver's event layer: operations get pod-level ids, run once every
// dependency has completed, and complete when the work they issued does.
//
//  - A dependency that failed makes its dependents fail, without running,
//    with a status that keeps the failure's code and names the dependency
//    (and the operation where the failure began).
//  - Completing an operation costs O(its dependents): each operation keeps
//    the callbacks of those waiting for it; nothing scans what is in flight.
//  - Completions are processed on one dispatcher thread, so dependents start
//    there (never recursively on the completing thread) and user callbacks
//    run there.
//  - Shutdown cancels what has not started, waits a bounded time for what is
//    in flight and then fails whatever is left: nothing waits forever.
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "driver/pod/dispatcher.h"
#include "driver/pod/pod_op.h"
#include "driver/tpu_driver.h"

namespace tpu::driver {

class PodScheduler {
 public:
  // Reports how the issued work ended. Call it exactly once, from any thread
  // (also inline, from inside RunFn).
  using Done = std::function<void(absl::Status)>;
  // Issues the work of operation `op_id` once its dependencies succeeded.
  using RunFn = std::function<void(int64_t op_id, Done done)>;
  // Runs instead of RunFn when the operation will not run (a dependency
  // failed, or the scheduler is shutting down). Release operations use it to
  // still free what they own; may be null.
  using SkipFn = std::function<void()>;

  PodScheduler();
  // Calls Shutdown(absl::ZeroDuration()) if Shutdown has not run.
  ~PodScheduler();

  PodScheduler(const PodScheduler&) = delete;
  PodScheduler& operator=(const PodScheduler&) = delete;

  // Schedules an operation that runs `run` once every op in `deps` has
  // completed successfully (at once, on the calling thread, if they all
  // have). `kind` must be a string literal.
  std::shared_ptr<PodOp> Schedule(
      const char* kind, const std::vector<std::shared_ptr<PodOp>>& deps,
      RunFn run, SkipFn skip = nullptr);

  // An operation that failed up front, already completed with `status`.
  std::shared_ptr<PodOp> Failed(const char* kind, absl::Status status);

  // An operation that completes when `event`, which did not come from this
  // scheduler, does: it lets foreign events be used as dependencies.
  std::shared_ptr<PodOp> Wrap(Event* event);

  // Runs `fn` on the dispatcher thread.
  void Post(std::function<void()> fn) { dispatcher_.Post(std::move(fn)); }

  // From now on operations that have not started fail CANCELLED instead of
  // running. Waits up to `drain` for those in flight, then fails the rest
  // with CANCELLED. Later completions of their work are ignored.
  void Shutdown(absl::Duration drain);

  // Operations scheduled and not yet completed.
  int64_t live_ops();

 private:
  struct Pending;
  // Lets completions that arrive after destruction (a foreign event, a
  // worker driver's straggler) find out that the scheduler is gone.
  struct Gate {
    absl::Mutex mu;
    PodScheduler* scheduler ABSL_GUARDED_BY(mu);
  };
  // A Done that completes `op` through the gate.
  Done MakeDone(std::shared_ptr<PodOp> op);
  std::shared_ptr<PodOp> NewOp(const char* kind);
  void DependencyDone(const std::shared_ptr<Pending>& pending,
                      std::shared_ptr<PodOp> dep);
  void Start(const std::shared_ptr<Pending>& pending);
  // Completes `op` on the dispatcher thread.
  // `failed_dep`, if set, is the dependency whose failure this carries.
  void PostComplete(std::shared_ptr<PodOp> op, absl::Status status,
                    std::shared_ptr<PodOp> failed_dep = nullptr);
  void Finish(const std::shared_ptr<PodOp>& op);

  const std::shared_ptr<Gate> gate_;

  absl::Mutex mu_;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::atomic<bool> shutting_down_{false};
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  // Every operation scheduled and not completed, for Shutdown.
  absl::flat_hash_map<int64_t, std::shared_ptr<PodOp>> live_
      ABSL_GUARDED_BY(mu_);

  // Last: its thread is joined first, while the state above still exists.
  Dispatcher dispatcher_;
};

// The status of an operation that did not run because `dep` failed: it keeps
// the failure's code and names `dep` and the operation where it began.
absl::Status DependencyFailedStatus(int64_t op_id, const char* op_kind,
                                    const PodOp& dep);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_POD_POD_SCHEDULER_H_
