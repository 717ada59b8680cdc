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

// Why gRPC could not connect: it says so only in its message.
enum class Cause { kRefused, kTlsRejected, kClosed, kOther };

Cause Classify(absl::string_view message) {
  const std::string lower = absl::AsciiStrToLower(message);
  // A Unix socket path nobody listens on is "No such file or directory".
  if (absl::StrContains(lower, "connection refused") ||
      absl::StrContains(lower, "no such file or directory")) {
    return Cause::kRefused;
  }
  if (absl::StrContains(lower, "handshake failed") ||
      absl::StrContains(lower, "peer name") ||
      absl::StrContains(lower, "certificate")) {
    return Cause::kTlsRejected;
  }
  if (absl::StrContains(lower, "socket closed") ||
      absl::StrContains(lower, "connection reset")) {
    return Cause::kClosed;
  }
  return Cause::kOther;
}

// "<reason>. <advice>" for an UNAVAILABLE Open.
std::string Explain(const OpenAttempt& attempt, Cause cause) {
  const bool waited = attempt.connect_timeout > absl::ZeroDuration();
  const std::string wait =
      waited ? "wait longer for a worker that is starting (--connect_timeout)"
             : "wait for a worker that is still starting with a connect "
               "timeout (--connect_timeout)";
  const std::string start = StartCommand(attempt.target);
  switch (cause) {
    case Cause::kRefused:
      return absl::StrCat(
          "the connection was refused",
          waited ? absl::StrCat(" for ",
                                absl::FormatDuration(attempt.connect_timeout))
                 : "",
          "; no TPU worker is serving there. Start one (", start,
          "), check the address (--target), or ", wait, ".");
    case Cause::kTlsRejected:
      return "the TLS handshake failed: the worker's certificate was not "
             "accepted. Check that ca= names the CA that signed it and that "
             "it names the host dialed (or set server_name= to a name it "
             "carries).";
    case Cause::kClosed:
      if (attempt.tls) {
        return "the worker closed the connection during the TLS handshake. "
               "If it requires client certificates (tpu_emulator "
               "--tls_client_ca), give cert= and key= signed by a CA it "
               "trusts; if it serves plaintext, dial grpc://.";
      }
      return "the worker closed the connection. If it serves TLS "
             "(tpu_emulator --tls_cert), dial grpcs://HOST:PORT?ca=CA.pem; "
             "otherwise check the address (--target).";
    case Cause::kOther:
      break;
  }
  return absl::StrCat(
      "unreachable. Check the address (--target) and that a TPU worker "
      "serves there (",
      start, "), or ", wait, ".");
}

}  // namespace

absl::Status DescribeOpenFailure(const OpenAttempt& attempt,
                                 absl::StatusCode code,
                                 absl::string_view message) {
  const std::string grpc_part = absl::StrCat(" Error from gRPC: ", message);
  if (code == absl::StatusCode::kUnavailable) {
    return absl::UnavailableError(
        absl::StrCat(kPrefix, attempt.address, ": ",
                     Explain(attempt, Classify(message)), grpc_part));
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
