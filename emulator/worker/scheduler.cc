#include "emulator/worker/scheduler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/event_id.h"

namespace tpu::emulator {

std::shared_ptr<Scheduler> Scheduler::Create(uint32_t client_id,
                                             std::shared_ptr<TimerQueue> timers,
                                             absl::Duration unknown_wait) {
  return std::shared_ptr<Scheduler>(
      new Scheduler(client_id, std::move(timers), unknown_wait));
}

Scheduler::Scheduler(uint32_t client_id, std::shared_ptr<TimerQueue> timers,
                     absl::Duration unknown_wait)
    : client_id_(client_id),
      timers_(std::move(timers)),
      unknown_wait_(unknown_wait) {}

std::string Scheduler::Name(uint64_t op) const {
  return EventId{client_id_, op}.ToString();
}

absl::Status Scheduler::DependencyFailed(uint64_t dep,
                                         const Failure& failure) const {
  if (failure.is_root) return failure.root;
  return absl::Status(
      failure.root.code(),
      absl::StrCat(Name(dep), " failed: ", failure.root.message()));
}

void Scheduler::Dispatch(Calls calls) {
  if (calls.empty()) return;
  // Start callbacks waiting to run on this thread; non-null while a thread
  // is inside Dispatch (of any scheduler), so nested dispatches queue
  // instead of recursing.
  static thread_local Calls* pending = nullptr;
  if (pending != nullptr) {
    for (Call& c : calls) pending->push_back(std::move(c));
    return;
  }
  pending = &calls;
  for (size_t next = 0; next < calls.size(); ++next) {
    // Moved out first: a nested Dispatch may grow the queue meanwhile.
    Call call = std::move(calls[next]);
    call.start(std::move(call.status));
  }
  pending = nullptr;
}

void Scheduler::FailCascade(uint64_t op, absl::Status reported,
                            absl::Status root, Calls* calls) {
  struct Item {
    uint64_t op;
    absl::Status status;  // what the operation reports
  };
  std::vector<Item> work;
  work.push_back({op, std::move(reported)});
  while (!work.empty()) {
    Item item = std::move(work.back());
    work.pop_back();
    auto it = nodes_.find(item.op);
    if (it == nodes_.end() || it->second.state != State::kWaiting) continue;
    Node node = std::move(it->second);
    nodes_.erase(it);
    // Every operation of a cascade keeps the root cause, so messages stay
    // two levels deep however long the chain.
    const Failure& record = failed_[item.op] = Failure{root, false};
    calls->push_back({std::move(node.start), std::move(item.status)});
    for (uint64_t d : node.dependents) {
      work.push_back({d, DependencyFailed(item.op, record)});
    }
  }
}

void Scheduler::Submit(uint64_t op, absl::Span<const uint64_t> deps,
                       Start start) {
  Calls calls;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) {
      calls.push_back({std::move(start), cancel_status_});
    } else if (op == 0 || op > EventId::kOperationMask) {
      calls.push_back(
          {std::move(start),
           absl::InvalidArgumentError(absl::StrCat(
               "Invalid operation id ", op, " for client ", client_id_,
               ": operation ids are in [1, 2^44); 0 is reserved."))});
    } else {
      auto existing = nodes_.find(op);
      const bool awaited = existing != nodes_.end() &&
                           existing->second.state == State::kNotArrived;
      if (!awaited && arrived_.Contains(op)) {
        calls.push_back(
            {std::move(start),
             absl::InvalidArgumentError(absl::StrCat(
                 Name(op),
                 " was already submitted, or operations naming it stopped "
                 "waiting for it after ",
                 absl::FormatDuration(unknown_wait_),
                 ": operation ids must be unique per client."))});
      } else {
        absl::Status invalid;
        for (uint64_t d : deps) {
          if (d >= op) {
            invalid = absl::InvalidArgumentError(absl::StrCat(
                Name(op), " names operation ", d,
                ", which is not earlier than itself: an operation can only "
                "wait for operations issued before it."));
            break;
          }
        }
        arrived_.Insert(op);
        Node& node = nodes_[op];
        node.state = State::kWaiting;
        node.start = std::move(start);
        if (!invalid.ok()) {
          Failure root{
              absl::Status(invalid.code(), absl::StrCat(Name(op), " failed: ",
                                                        invalid.ToString())),
              /*is_root=*/true};
          Node failed = std::move(nodes_[op]);
          nodes_.erase(op);
          failed_[op] = root;
          calls.push_back({std::move(failed.start), invalid});
          for (uint64_t d : failed.dependents) {
            FailCascade(d, DependencyFailed(op, root), root.root, &calls);
          }
        } else {
          int pending = 0;
          bool failed = false;
          for (uint64_t d : deps) {
            auto dit = nodes_.find(d);
            if (dit != nodes_.end()) {
              dit->second.dependents.push_back(op);
              ++pending;
              continue;
            }
            auto fit = failed_.find(d);
            if (fit != failed_.end()) {
              FailCascade(op, DependencyFailed(d, fit->second),
                          fit->second.root, &calls);
              failed = true;
              break;
            }
            if (arrived_.Contains(d)) continue;  // completed successfully
            if (d == 0) {
              const absl::Status never = absl::NotFoundError(
                  absl::StrCat("Operation id 0 of client ", client_id_,
                               " never exists (ids start at 1)."));
              FailCascade(op, never, never, &calls);
              failed = true;
              break;
            }
            Node& placeholder = nodes_[d];
            placeholder.state = State::kNotArrived;
            placeholder.dependents.push_back(op);
            ++pending;
            std::weak_ptr<Scheduler> weak = weak_from_this();
            timers_->Schedule(absl::Now() + unknown_wait_, [weak, d] {
              if (auto self = weak.lock()) self->ExpireUnarrived(d);
            });
          }
          if (!failed) {
            Node& me = nodes_[op];
            me.pending_deps += pending;
            if (me.pending_deps == 0) {
              me.state = State::kRunning;
              calls.push_back({std::move(me.start), absl::OkStatus()});
            }
          }
        }
      }
    }
  }
  Dispatch(std::move(calls));
}

void Scheduler::Reject(uint64_t op, absl::Status status, Start start) {
  Calls calls;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) {
      calls.push_back({std::move(start), cancel_status_});
    } else {
      auto existing = nodes_.find(op);
      const bool awaited = existing != nodes_.end() &&
                           existing->second.state == State::kNotArrived;
      // A duplicate id must not overwrite the original's record.
      if (op != 0 && (awaited || !arrived_.Contains(op))) {
        arrived_.Insert(op);
        Failure root{absl::Status(status.code(),
                                  absl::StrCat(Name(op),
                                               " failed: ", status.ToString())),
                     true};
        failed_[op] = root;
        if (awaited) {
          Node node = std::move(existing->second);
          nodes_.erase(existing);
          for (uint64_t d : node.dependents) {
            FailCascade(d, DependencyFailed(op, root), root.root, &calls);
          }
        }
      }
      calls.push_back({std::move(start), std::move(status)});
    }
  }
  Dispatch(std::move(calls));
}

void Scheduler::Complete(uint64_t op, absl::Status status) {
  Calls calls;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return;
    auto it = nodes_.find(op);
    if (it == nodes_.end() || it->second.state != State::kRunning) return;
    Node node = std::move(it->second);
    nodes_.erase(it);
    if (status.ok()) {
      for (uint64_t d : node.dependents) {
        auto dit = nodes_.find(d);
        if (dit == nodes_.end() || dit->second.state != State::kWaiting) {
          continue;
        }
        if (--dit->second.pending_deps == 0) {
          dit->second.state = State::kRunning;
          calls.push_back({std::move(dit->second.start), absl::OkStatus()});
        }
      }
    } else {
      Failure root{
          absl::Status(status.code(),
                       absl::StrCat(Name(op), " failed: ", status.ToString())),
          true};
      failed_[op] = root;
      for (uint64_t d : node.dependents) {
        FailCascade(d, DependencyFailed(op, root), root.root, &calls);
      }
    }
  }
  Dispatch(std::move(calls));
}

void Scheduler::ExpireUnarrived(uint64_t op) {
  Calls calls;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return;
    auto it = nodes_.find(op);
    if (it == nodes_.end() || it->second.state != State::kNotArrived) return;
    Node node = std::move(it->second);
    nodes_.erase(it);
    arrived_.Insert(op);
    Failure root{
        absl::NotFoundError(absl::StrCat(
            Name(op),
            " was never submitted: operations naming it (as a "
            "handle or a wait_for_id) waited ",
            absl::FormatDuration(unknown_wait_),
            " for it to arrive. Name only handles and events the client "
            "created.")),
        true};
    failed_[op] = root;
    for (uint64_t d : node.dependents) {
      FailCascade(d, DependencyFailed(op, root), root.root, &calls);
    }
  }
  Dispatch(std::move(calls));
}

void Scheduler::Cancel(absl::Status status) {
  Calls calls;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    cancel_status_ = status;
    for (auto& [id, node] : nodes_) {
      if (node.state == State::kWaiting) {
        calls.push_back({std::move(node.start), status});
      }
    }
    nodes_.clear();
    failed_.clear();
  }
  Dispatch(std::move(calls));
}

size_t Scheduler::live_nodes() const {
  absl::MutexLock lock(&mu_);
  return nodes_.size();
}

}  // namespace tpu::emulator
