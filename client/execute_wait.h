#ifndef SOFTWARE_TPU_CLIENT_EXECUTE_WAIT_H_
#define SOFTWARE_TPU_CLIENT_EXECUTE_WAIT_H_

// The bounded wait for launched programs, with the reference client's
// warning and deadline:
//   every `warn_interval` without completion, `warn` receives
//     "TPU Execute is taking a long time. This might be due to a deadlock
//      between multiple TPU cores or a very slow program."
//   after `max_time`, the wait gives up with DEADLINE_EXCEEDED
//     "TPU program took more than N seconds to complete."
//   (N is max_time in whole seconds, truncated, as the reference prints it).
// A caller may also end the wait early: `interrupted`, when set, is polled on
// the waiting thread every `interrupt_interval`, and its first non-OK status
// ends the wait (a language binding turns Ctrl-C into one).
//
// Thread safety: the function is reentrant. Events may complete on any thread
// at any time, also after the wait gave up.

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "driver/tpu_driver.h"

namespace tpu::client {

inline constexpr absl::string_view kExecuteSlowWarning =
    "TPU Execute is taking a long time. This might be due to a deadlock "
    "between multiple TPU cores or a very slow program.";

// The DEADLINE_EXCEEDED status the wait returns after `max_time`.
absl::Status ExecuteDeadlineExceeded(absl::Duration max_time);

// Waits for every event in `events` (one per launched replica) under one
// deadline. Returns OK if all succeeded, else the failure of the lowest-index
// failed event (the reference reports the first failing replica), or
// DEADLINE_EXCEEDED if they are not all done after `max_time`, or the first
// non-OK status `interrupted` returns. As after a deadline, an interrupted
// wait leaves the programs running.
// REQUIRES: every element of `events` is non-null.
absl::Status AwaitExecution(
    const std::vector<std::shared_ptr<driver::Event>>& events,
    absl::Duration warn_interval, absl::Duration max_time,
    const std::function<void(absl::string_view)>& warn,
    const std::function<absl::Status()>& interrupted = nullptr,
    absl::Duration interrupt_interval = absl::Milliseconds(100));

}  // namespace tpu::client

#endif  // SOFTWARE_TPU_CLIENT_EXECUTE_WAIT_H_
