#include "client/execute_wait.h"

#include <algorithm>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace tpu::client {
namespace {

// Completion state shared with the events' callbacks, which may outlive the
// wait (after a deadline).
struct WaitState {
  absl::Mutex mu;
  int pending ABSL_GUARDED_BY(mu) = 0;
  std::vector<absl::Status> statuses ABSL_GUARDED_BY(mu);

  bool Done() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return pending == 0; }
};

}  // namespace

absl::Status ExecuteDeadlineExceeded(absl::Duration max_time) {
  return absl::DeadlineExceededError(
      absl::StrFormat("TPU program took more than %d seconds to complete.",
                      absl::ToInt64Seconds(max_time)));
}

absl::Status AwaitExecution(
    const std::vector<std::shared_ptr<driver::Event>>& events,
    absl::Duration warn_interval, absl::Duration max_time,
    const std::function<void(absl::string_view)>& warn,
    const std::function<absl::Status()>& interrupted,
    absl::Duration interrupt_interval) {
  auto state = std::make_shared<WaitState>();
  {
    absl::MutexLock lock(&state->mu);
    state->pending = static_cast<int>(events.size());
    state->statuses.assign(events.size(), absl::OkStatus());
  }
  for (size_t i = 0; i < events.size(); ++i) {
    // Runs inline when the event already completed, so no lock is held here.
    events[i]->AddCallback([state, i](absl::Status status) {
      absl::MutexLock lock(&state->mu);
      state->statuses[i] = std::move(status);
      --state->pending;
    });
  }

  const absl::Time start = absl::Now();
  const absl::Time deadline = start + max_time;
  // A non-positive interval would warn in a tight loop; treat it as "never".
  const bool warnings_enabled = warn_interval > absl::ZeroDuration();
  absl::Time next_warning = start + warn_interval;
  // A non-positive interval would poll in a tight loop.
  interrupt_interval = std::max(interrupt_interval, absl::Milliseconds(1));

  absl::MutexLock lock(&state->mu);
  const absl::Condition done(state.get(), &WaitState::Done);
  while (!state->Done()) {
    const absl::Time now = absl::Now();
    if (now >= deadline) return ExecuteDeadlineExceeded(max_time);
    absl::Time wake =
        warnings_enabled ? std::min(deadline, next_warning) : deadline;
    if (interrupted) wake = std::min(wake, now + interrupt_interval);
    if (state->mu.AwaitWithDeadline(done, wake)) break;
    if (interrupted) {
      // Outside the lock: the check may take a language runtime's lock.
      state->mu.Unlock();
      absl::Status status = interrupted();
      state->mu.Lock();
      if (!status.ok()) return status;
    }
    if (warnings_enabled && absl::Now() >= next_warning) {
      // Warn outside the lock: the handler may be slow (stderr).
      state->mu.Unlock();
      if (warn) warn(kExecuteSlowWarning);
      state->mu.Lock();
      next_warning += warn_interval;
    }
  }
  for (const absl::Status& status : state->statuses) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace tpu::client
