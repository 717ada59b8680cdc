#include "driver/grpc/open_failure.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tpu::driver {
namespace {

constexpr char kPrefix[] = "Failed to connect to remote server at address: ";

// How to start a worker that serves `target`, for the hint.
std::string StartCommand(absl::string_view target) {
  absl::string_view path = target;
  if (absl::ConsumePrefix(&path, "unix:")) {
    return absl::StrCat("tpu_emulator --unix_socket=", path);
  }
  const size_t colon = target.rfind(':');
  int port = 0;
  if (colon != absl::string_view::npos &&
      absl::SimpleAtoi(target.substr(colon + 1), &port)) {
    return absl::StrCat("tpu_emulator --port=", port);
  }
  return "tpu_emulator";
}

// gRPC reports a refused TCP connection, and a Unix socket path nobody
// listens on, in its message only.
bool Refused(absl::string_view message) {
  const std::string lower = absl::AsciiStrToLower(message);
  return absl::StrContains(lower, "connection refused") ||
         absl::StrContains(lower, "no such file or directory");
}

}  // namespace

absl::Status DescribeOpenFailure(const OpenAttempt& attempt,
                                 absl::StatusCode code,
                                 absl::string_view message) {
  const std::string grpc_part = absl::StrCat(" Error from gRPC: ", message);
  const std::string wait_hint =
      attempt.connect_timeout > absl::ZeroDuration()
          ? "wait longer for a worker that is starting (--connect_timeout)"
          : "wait for a worker that is still starting with a connect timeout "
            "(--connect_timeout)";
  if (code == absl::StatusCode::kUnavailable && Refused(message)) {
    return absl::UnavailableError(absl::StrCat(
        kPrefix, attempt.address, ": the connection was refused",
        attempt.connect_timeout > absl::ZeroDuration()
            ? absl::StrCat(" for ",
                           absl::FormatDuration(attempt.connect_timeout))
            : "",
        "; no TPU worker is serving there. Start one (",
        StartCommand(attempt.target), "), check the address (--target), or ",
        wait_hint, ".", grpc_part));
  }
  if (code == absl::StatusCode::kUnavailable) {
    return absl::UnavailableError(absl::StrCat(
        kPrefix, attempt.address,
        ": unreachable. Check the address (--target) and that a TPU worker "
        "serves there (",
        StartCommand(attempt.target), "), or ", wait_hint, ".", grpc_part));
  }
  if (code == absl::StatusCode::kDeadlineExceeded) {
    return absl::UnavailableError(absl::StrCat(
        kPrefix, attempt.address, " (no answer within ",
        absl::FormatDuration(attempt.open_timeout),
        "). Something there accepts connections but did not answer as a TPU "
        "worker, or the network drops them: check the address (--target), or "
        "allow more time (--connection_timeout).",
        grpc_part));
  }
  return absl::Status(code,
                      absl::StrCat(kPrefix, attempt.address, ".", grpc_part));
}

}  // namespace tpu::driver
