#ifndef SOFTWARE_TPU_DRIVER_GRPC_OPEN_FAILURE_H_
#define SOFTWARE_TPU_DRIVER_GRPC_OPEN_FAILURE_H_

// The status a user sees when the grpc:// driver cannot open a session: it
// names the address, says why in words (refused, no answer) and what to do
// (start a worker, check the address, wait longer), then quotes gRPC.
//
// Thread safety: pure functions.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace tpu::driver {

// What the failed Open attempt looked like.
struct OpenAttempt {
  // The address as the user wrote it ("grpc://127.0.0.1:8470").
  std::string address;
  // What gRPC dialed: "host:port" or "unix:PATH".
  std::string target;
  // Over TLS (grpcs://).
  bool tls = false;
  // How long refused connections were retried (0: not at all).
  absl::Duration connect_timeout;
  // The deadline of the Open call itself.
  absl::Duration open_timeout;
};

// `code` and `message` are gRPC's. UNAVAILABLE and DEADLINE_EXCEEDED (the
// worker is unreachable or silent) become UNAVAILABLE, other codes keep
// theirs. Messages start as the reference client's do ("Failed to connect to
// remote server at address: ...").
absl::Status DescribeOpenFailure(const OpenAttempt& attempt,
                                 absl::StatusCode code,
                                 absl::string_view message);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_GRPC_OPEN_FAILURE_H_
