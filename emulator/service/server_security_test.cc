#include "emulator/service/server_security.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

TEST(ServerSecurityTest, LoopbackHosts) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "[::1]",
                           "::ffff:127.0.0.1", "localhost", "LocalHost"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "[::]", "10.0.0.2", "128.0.0.1",
                           "::ffff:10.0.0.1", "tpu-worker-0", ""}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

TEST(ServerSecurityTest, PlaintextOnlyOnLoopbackUnlessAllowed) {
  EXPECT_TRUE(TcpPortCredentials("127.0.0.1", {}, false).ok());
  EXPECT_TRUE(TcpPortCredentials("0.0.0.0", {}, true).ok());
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> refused =
      TcpPortCredentials("[::]", {}, false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(refused.status().message(),
                               "Refusing to serve plaintext on [::], "))
      << refused.status();
}

TEST(ServerSecurityTest, IncompleteTlsOptionsAreInvalid) {
  TlsOptions ca_only;
  ca_only.client_ca_path = "/ca.pem";
  EXPECT_EQ(TcpPortCredentials("127.0.0.1", ca_only, false).status().message(),
            "Client CAs (--tls_client_ca) verify clients over TLS, which needs "
            "the worker's own certificate and key (--tls_cert, --tls_key).");
  TlsOptions key_only;
  key_only.key_path = "/key.pem";
  EXPECT_EQ(TcpPortCredentials("127.0.0.1", key_only, false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpu::emulator
