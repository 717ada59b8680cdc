#include "driver/pod/pod_scheduler.h"

#include <atomic>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tpu::driver {

// An operation waiting for its dependencies. Shared by the callbacks it left
// on each dependency; the last one to complete starts it.
struct PodScheduler::Pending {
  std::shared_ptr<PodOp> op;
  RunFn run;
  SkipFn skip;
  // Dependencies not yet completed, plus one held by Schedule itself so the
  // operation cannot start while its edges are still being added.
  std::atomic<int64_t> remaining{1};

  // std::mutex: one per operation (see pod_op.h).
  std::mutex mu;
  // The first dependency seen to fail. Guarded by mu.
  std::shared_ptr<PodOp> failed_dep;
};

absl::Status DependencyFailedStatus(int64_t op_id, const char* op_kind,
                                    const PodOp& dep) {
  std::string message = absl::StrCat("Operation ", op_id, " (", op_kind,
                                     ") did not run: it depends on operation ",
                                     dep.id(), " (", dep.kind(), "), which ");
  if (dep.origin_id() == dep.id()) {
    absl::StrAppend(&message, "failed: ", dep.status().message());
  } else {
    // Name where the failure began rather than nesting every message of the
    // chain: a chain of n failures would otherwise cost O(n^2).
    absl::StrAppend(&message, "did not run because operation ", dep.origin_id(),
                    " (", dep.origin_kind(),
                    ") failed: ", dep.origin_status().message());
  }
  return absl::Status(dep.status().code(), message);
}

PodScheduler::PodScheduler() : gate_(std::make_shared<Gate>()) {
  absl::MutexLock lock(&gate_->mu);
  gate_->scheduler = this;
}

PodScheduler::~PodScheduler() {
  {
    absl::MutexLock lock(&gate_->mu);
    gate_->scheduler = nullptr;
  }
  bool shut_down;
  {
    absl::MutexLock lock(&mu_);
    shut_down = shut_down_;
  }
  if (!shut_down) Shutdown(absl::ZeroDuration());
}

std::shared_ptr<PodOp> PodScheduler::NewOp(const char* kind) {
  absl::MutexLock lock(&mu_);
  auto op = std::make_shared<PodOp>(next_id_++, kind);
  live_.emplace(op->id(), op);
  return op;
}

std::shared_ptr<PodOp> PodScheduler::Schedule(
    const char* kind, const std::vector<std::shared_ptr<PodOp>>& deps,
    RunFn run, SkipFn skip) {
  auto pending = std::make_shared<Pending>();
  pending->op = NewOp(kind);
  pending->run = std::move(run);
  pending->skip = std::move(skip);
  pending->remaining.fetch_add(static_cast<int64_t>(deps.size()));
  for (const auto& dep : deps) {
    // Weak: the callback sits in dep's own list. Whoever completes dep holds
    // a reference while the callbacks run, so the lock always succeeds.
    std::weak_ptr<PodOp> weak_dep = dep;
    dep->AddCallback([this, pending, weak_dep](const absl::Status&) {
      DependencyDone(pending, weak_dep.lock());
    });
  }
  std::shared_ptr<PodOp> op = pending->op;
  DependencyDone(pending, nullptr);  // Drops Schedule's own count.
  return op;
}

std::shared_ptr<PodOp> PodScheduler::Failed(const char* kind,
                                            absl::Status status) {
  std::shared_ptr<PodOp> op;
  {
    absl::MutexLock lock(&mu_);
    op = std::make_shared<PodOp>(next_id_++, kind);
  }
  op->Complete(std::move(status));
  return op;
}

std::shared_ptr<PodOp> PodScheduler::Wrap(Event* event) {
  std::shared_ptr<PodOp> op = NewOp("external event");
  event->AddCallback(MakeDone(op));
  return op;
}

void PodScheduler::DependencyDone(const std::shared_ptr<Pending>& pending,
                                  std::shared_ptr<PodOp> dep) {
  if (dep != nullptr && !dep->status().ok()) {
    std::lock_guard<std::mutex> lock(pending->mu);
    if (pending->failed_dep == nullptr) pending->failed_dep = std::move(dep);
  }
  if (pending->remaining.fetch_sub(1) != 1) return;
  // Operations are issued to the workers in the order they became ready,
  // which keeps the order the caller scheduled them in whenever they wait
  // for the same things: a worker starts the operations of one stream in the
  // order they arrive, and callers rely on that (a transfer to a buffer and
  // a read of it, both waiting only for its allocation). Dependents of
  // an operation start on the dispatcher while it completes; an operation
  // whose last dependency was seen done on another thread must not overtake
  // them, so it starts inline only if the dispatcher has nothing left to do.
  if (dispatcher_.OnDispatcherThread() || dispatcher_.Idle()) {
    Start(pending);
  } else {
    dispatcher_.Post([this, pending] { Start(pending); });
  }
}

void PodScheduler::Start(const std::shared_ptr<Pending>& pending) {
  const std::shared_ptr<PodOp>& op = pending->op;
  std::shared_ptr<PodOp> failed_dep;
  {
    std::lock_guard<std::mutex> lock(pending->mu);
    failed_dep = pending->failed_dep;
  }
  const bool cancelled = shutting_down_.load();
  if (failed_dep != nullptr || cancelled) {
    if (pending->skip) pending->skip();
    pending->run = nullptr;
    pending->skip = nullptr;
    // Completed through the dispatcher: completing inline would start this
    // operation's dependents recursively.
    if (failed_dep != nullptr) {
      PostComplete(op,
                   DependencyFailedStatus(op->id(), op->kind(), *failed_dep),
                   failed_dep);
    } else {
      PostComplete(op, absl::CancelledError(absl::StrCat(
                           "Operation ", op->id(), " (", op->kind(),
                           ") was cancelled: the pod driver was destroyed "
                           "before it could run.")));
    }
    return;
  }
  RunFn run = std::move(pending->run);
  pending->run = nullptr;
  pending->skip = nullptr;
  run(op->id(), MakeDone(op));
}

PodScheduler::Done PodScheduler::MakeDone(std::shared_ptr<PodOp> op) {
  return [gate = gate_, op = std::move(op)](absl::Status status) {
    absl::MutexLock lock(&gate->mu);
    if (gate->scheduler != nullptr) {
      gate->scheduler->PostComplete(op, std::move(status));
    }
  };
}

void PodScheduler::PostComplete(std::shared_ptr<PodOp> op, absl::Status status,
                                std::shared_ptr<PodOp> failed_dep) {
  dispatcher_.Post([this, op = std::move(op), status = std::move(status),
                    failed_dep = std::move(failed_dep)]() mutable {
    // Forgotten first, so that whoever sees the completion also sees the
    // operation gone from live_ops().
    Finish(op);
    op->Complete(std::move(status), failed_dep.get());
  });
}

void PodScheduler::Finish(const std::shared_ptr<PodOp>& op) {
  absl::MutexLock lock(&mu_);
  live_.erase(op->id());
}

void PodScheduler::Shutdown(absl::Duration drain) {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shutting_down_.store(true);
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return live_.empty();
    };
    mu_.AwaitWithTimeout(absl::Condition(&drained), drain);
  }
  // Whatever is still in flight has outlived the drain: fail it. Each
  // completion may start (and so cancel) dependents; repeat until quiet.
  while (true) {
    std::vector<std::shared_ptr<PodOp>> left;
    {
      absl::MutexLock lock(&mu_);
      for (auto& [id, op] : live_) left.push_back(op);
      live_.clear();
    }
    if (left.empty()) break;
    for (auto& op : left) {
      op->Complete(absl::CancelledError(absl::StrCat(
          "Operation ", op->id(), " (", op->kind(),
          ") was cancelled: the pod driver was destroyed while it was still "
          "in flight.")));
    }
  }
  absl::MutexLock lock(&mu_);
  shut_down_ = true;
}

int64_t PodScheduler::live_ops() {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(live_.size());
}

}  // namespace tpu::driver
