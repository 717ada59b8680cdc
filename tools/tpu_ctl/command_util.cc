// What tpu_ctl's commands share (tools/tpu_ctl/commands.h).

#include <stdio.h>

#include <chrono>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/time/time.h"
#include "tools/tpu_ctl/commands.h"

ABSL_DECLARE_FLAG(absl::Duration, timeout);

namespace tpu::tools {

void SetDeadline(grpc::ClientContext& context) {
  context.set_deadline(
      std::chrono::system_clock::now() +
      absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_timeout)));
}

int UsageError(const std::string& message) {
  fprintf(stderr, "tpu_ctl: %s (see tpu_ctl --help)\n", message.c_str());
  return 2;
}

int CallFailed(const std::string& target, const std::string& call,
               const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
      status.error_code() == grpc::StatusCode::NOT_FOUND) {
    // The worker answered: its message says what to do.
    fprintf(stderr, "tpu_ctl: %s: %s\n", call.c_str(),
            status.error_message().c_str());
    return 1;
  }
  fprintf(stderr,
          "tpu_ctl: %s did not answer %s: %s (is tpu_emulator running there? "
          "check --target)\n",
          target.c_str(), call.c_str(), status.error_message().c_str());
  return 1;
}

}  // namespace tpu::tools
