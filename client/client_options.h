#ifndef SOFTWARE_TPU_CLIENT_CLIENT_OPTIONS_H_
#define SOFTWARE_TPU_CLIENT_CLIENT_OPTIONS_H_

// How a TpuClient connects and how long it lets programs run.
//
// Thread safety: a plain struct; copy it freely.

#include <functional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace tpu::client {

struct ClientOptions {
  // While Execute waits for a program, it prints "TPU Execute is taking a long
  // time. ..." each time this much time passes without completion. The
  // reference client waits 10 s.
  absl::Duration execute_warn_interval = absl::Seconds(10);

  // Execute gives up with DEADLINE_EXCEEDED ("TPU program took more than N
  // seconds to complete.") once a program has run this long. The program is
  // not cancelled by giving up: it ends when the client closes.
  absl::Duration execute_max_time = absl::Seconds(120);

  // grpc:// (also each worker of grpc+pod://): how long to wait for a worker
  // that refuses connections, retrying, e.g. one still starting. Zero: a
  // refused connection fails Get at once with UNAVAILABLE, naming the
  // address. Whole milliseconds.
  absl::Duration connect_timeout = absl::ZeroDuration();

  // grpc:// only: how long opening the session may take once connecting
  // (a worker that accepts but does not answer) before Get fails with
  // UNAVAILABLE. Rounded up to whole seconds (the driver config's unit).
  absl::Duration connection_timeout = absl::Seconds(30);

  // Receives each warning line (without a trailing newline). Null: the line
  // goes to stderr. May run on any thread that waits for a program.
  std::function<void(absl::string_view)> warning_handler;

  // Polled about every wait_interrupt_interval by a thread waiting in
  // Execute or ExecutePerReplica, on that thread; its first non-OK status
  // ends the wait with that status, leaving the programs running as
  // execute_max_time does. Null: only the deadline ends a wait. Language
  // bindings use it so that Ctrl-C interrupts a hanging program.
  std::function<absl::Status()> wait_interrupt_check;
  absl::Duration wait_interrupt_interval = absl::Milliseconds(100);

  // Threads that launch replicas in ExecutePerReplica; 0 means one per local
  // device, so every replica is launched in parallel.
  int execute_threads = 0;
};

}  // namespace tpu::client

#endif  // SOFTWARE_TPU_CLIENT_CLIENT_OPTIONS_H_
