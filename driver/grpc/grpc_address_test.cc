#include "driver/grpc/grpc_address.h"

#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

TEST(GrpcAddressTest, PlainTcpAndUnixSockets) {
  absl::StatusOr<GrpcAddress> tcp = ParseGrpcAddress("grpc://10.0.0.2:8470");
  ASSERT_TRUE(tcp.ok()) << tcp.status();
  EXPECT_EQ(tcp->target, "10.0.0.2:8470");
  EXPECT_FALSE(tcp->tls);
  absl::StatusOr<GrpcAddress> unix_socket =
      ParseGrpcAddress("grpc://unix:/tmp/tpu.sock");
  ASSERT_TRUE(unix_socket.ok()) << unix_socket.status();
  EXPECT_EQ(unix_socket->target, "unix:/tmp/tpu.sock");
}

TEST(GrpcAddressTest, TlsParameters) {
  absl::StatusOr<GrpcAddress> address = ParseGrpcAddress(
      "grpcs://127.0.0.1:8470?ca=/c/ca.pem&cert=/c/me.pem&key=/c/me.key&"
      "server_name=tpu.example");
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_TRUE(address->tls);
  EXPECT_EQ(address->target, "127.0.0.1:8470");
  EXPECT_EQ(address->ca_path, "/c/ca.pem");
  EXPECT_EQ(address->cert_path, "/c/me.pem");
  EXPECT_EQ(address->key_path, "/c/me.key");
  EXPECT_EQ(address->server_name, "tpu.example");
  absl::StatusOr<GrpcAddress> bare = ParseGrpcAddress("grpcs://tpu:8470");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_TRUE(bare->ca_path.empty());
}

TEST(GrpcAddressTest, MistakesAreInvalidArgumentNamingTheAddress) {
  const struct {
    const char* address;
    const char* message;
  } cases[] = {
      {"http://h:1",
       "TPU worker address \"http://h:1\": expected grpc://host:port, "
       "grpc://unix:PATH or grpcs://host:port"},
      {"grpc://", "TPU worker address \"grpc://\": no host:port after grpc://"},
      {"grpc://h:1?ca=/ca.pem",
       "TPU worker address \"grpc://h:1?ca=/ca.pem\": grpc:// takes no "
       "parameters; TLS options (ca=, cert=, key=, server_name=) go with "
       "grpcs://"},
      {"grpcs://h:1?cafile=x",
       "TPU worker address \"grpcs://h:1?cafile=x\": unknown parameter "
       "\"cafile\"; known: ca, cert, key, server_name"},
      {"grpcs://h:1?ca=a&ca=b",
       "TPU worker address \"grpcs://h:1?ca=a&ca=b\": parameter ca must be "
       "given once, with a value"},
      {"grpcs://h:1?cert=c.pem",
       "TPU worker address \"grpcs://h:1?cert=c.pem\": a client certificate "
       "(cert=) needs its private key (key=) and the reverse"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<GrpcAddress> address = ParseGrpcAddress(c.address);
    EXPECT_EQ(address.status().code(), absl::StatusCode::kInvalidArgument)
        << c.address;
    EXPECT_EQ(address.status().message(), c.message);
  }
}

}  // namespace
}  // namespace tpu::driver
