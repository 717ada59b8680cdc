#include "driver/grpc/open_failure.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

constexpr char kRefused[] =
    "failed to connect to all addresses; last error: UNKNOWN: "
    "ipv4:127.0.0.1:1: Failed to connect to remote host: Connection refused";

TEST(OpenFailureTest, RefusedSaysWhatToDo) {
  absl::Status status =
      DescribeOpenFailure({"grpc://127.0.0.1:1", "127.0.0.1:1", false,
                           absl::ZeroDuration(), absl::Seconds(30)},
                          absl::StatusCode::kUnavailable, kRefused);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            absl::StrCat(
                "Failed to connect to remote server at address: "
                "grpc://127.0.0.1:1: the connection was refused; no TPU "
                "worker is serving there. Start one (tpu_emulator --port=1), "
                "check the address (--target), or wait for a worker that is "
                "still starting with a connect timeout (--connect_timeout). "
                "Error from gRPC: ",
                kRefused));
}

TEST(OpenFailureTest, RefusedAfterWaitingSaysHowLong) {
  absl::Status status = DescribeOpenFailure(
      {"grpc://unix:/tmp/w.sock", "unix:/tmp/w.sock", false, absl::Seconds(5),
       absl::Seconds(30)},
      absl::StatusCode::kUnavailable,
      "failed to connect to all addresses; last error: UNKNOWN: "
      "unix:/tmp/w.sock: No such file or directory");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StartsWith(
      status.message(),
      "Failed to connect to remote server at address: "
      "grpc://unix:/tmp/w.sock: the connection was refused for 5s; no TPU "
      "worker is serving there. Start one (tpu_emulator "
      "--unix_socket=/tmp/w.sock), check the address (--target), or wait "
      "longer for a worker that is starting (--connect_timeout). Error from "
      "gRPC: "))
      << status;
}

TEST(OpenFailureTest, SilencePastTheDeadlineIsUnavailable) {
  absl::Status status = DescribeOpenFailure(
      {"grpc://10.0.0.2:8470", "10.0.0.2:8470", false, absl::ZeroDuration(),
       absl::Seconds(2)},
      absl::StatusCode::kDeadlineExceeded, "Deadline Exceeded");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "Failed to connect to remote server at address: "
            "grpc://10.0.0.2:8470 (no answer within 2s). Something there "
            "accepts connections but did not answer as a TPU worker, or the "
            "network drops them: check the address (--target), or allow more "
            "time (--connection_timeout). Error from gRPC: Deadline Exceeded");
}

TEST(OpenFailureTest, TlsFailuresSayWhichSideToFix) {
  const OpenAttempt tls = {"grpcs://h:1?ca=ca.pem", "h:1", true,
                           absl::ZeroDuration(), absl::Seconds(30)};
  EXPECT_EQ(
      DescribeOpenFailure(tls, absl::StatusCode::kUnavailable,
                          "ipv4:1.2.3.4:1: Ssl handshake failed: "
                          "SSL_ERROR_SSL: certificate verify failed")
          .message(),
      "Failed to connect to remote server at address: grpcs://h:1?ca=ca.pem: "
      "the TLS handshake failed: the worker's certificate was not accepted. "
      "Check that ca= names the CA that signed it and that it names the host "
      "dialed (or set server_name= to a name it carries). Error from gRPC: "
      "ipv4:1.2.3.4:1: Ssl handshake failed: SSL_ERROR_SSL: certificate "
      "verify failed");
  EXPECT_EQ(
      DescribeOpenFailure(tls, absl::StatusCode::kUnavailable, "Socket closed")
          .message(),
      "Failed to connect to remote server at address: "
      "grpcs://h:1?ca=ca.pem: the worker closed the connection during "
      "the TLS handshake. If it requires client certificates "
      "(tpu_emulator --tls_client_ca), give cert= and key= signed by a "
      "CA it trusts; if it serves plaintext, dial grpc://. Error from "
      "gRPC: Socket closed");
  const OpenAttempt plain = {"grpc://h:1", "h:1", false, absl::ZeroDuration(),
                             absl::Seconds(30)};
  EXPECT_EQ(DescribeOpenFailure(plain, absl::StatusCode::kUnavailable,
                                "Socket closed")
                .message(),
            "Failed to connect to remote server at address: grpc://h:1: the "
            "worker closed the connection. If it serves TLS (tpu_emulator "
            "--tls_cert), dial grpcs://HOST:PORT?ca=CA.pem; otherwise check "
            "the address (--target). Error from gRPC: Socket closed");
}

TEST(OpenFailureTest, OtherCodesKeepTheirCode) {
  absl::Status status = DescribeOpenFailure(
      {"grpc://h:1", "h:1", false, absl::ZeroDuration(), absl::Seconds(2)},
      absl::StatusCode::kResourceExhausted,
      "All 1048575 client ids are in use");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "Failed to connect to remote server at address: grpc://h:1. Error "
            "from gRPC: All 1048575 client ids are in use");
}

}  // namespace
}  // namespace tpu::driver
