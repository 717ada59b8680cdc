// grpc:// behaviour that needs no worker: addresses and connection timeouts.

#include "driver/grpc/grpc_driver.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "driver/driver_registry.h"
#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

// A loopback socket bound to a free port; listening or not.
class LoopbackSocket {
 public:
  explicit LoopbackSocket(bool listen) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    if (listen) ::listen(fd_, 16);
  }
  ~LoopbackSocket() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_;
};

tpu_driver::TpuDriverConfig Config(const std::string& worker) {
  tpu_driver::TpuDriverConfig config;
  config.set_worker(worker);
  config.mutable_grpc()->set_connection_timeout_secs(1);
  return config;
}

TEST(GrpcDriverTest, RegistersTheGrpcScheme) {
  std::vector<std::string> prefixes = DriverRegistry::Prefixes();
  EXPECT_NE(std::find(prefixes.begin(), prefixes.end(), "grpc://"),
            prefixes.end());
}

TEST(GrpcDriverTest, NothingListeningIsUnavailableNamingTheAddress) {
  int port;
  {
    LoopbackSocket socket(/*listen=*/false);  // Reserved, then released.
    port = socket.port();
  }
  const std::string address = absl::StrCat("grpc://127.0.0.1:", port);
  auto driver = DriverRegistry::Open(Config(address));
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StartsWith(
      driver.status().message(),
      absl::StrCat("Failed to connect to remote server at address: ", address,
                   ": the connection was refused; no TPU worker is serving "
                   "there.")))
      << driver.status();
}

TEST(GrpcDriverTest, LocalhostUsesLocalCredentialsAndIsRefusedToo) {
  int port;
  {
    LoopbackSocket socket(/*listen=*/false);
    port = socket.port();
  }
  const std::string address = absl::StrCat("grpc://localhost:", port);
  auto driver = DriverRegistry::Open(Config(address));
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(driver.status().message(),
                                absl::StrCat(address,
                                             ": the connection was "
                                             "refused;")))
      << driver.status();
}

TEST(GrpcDriverTest, APeerThatNeverAnswersTimesOutUnavailable) {
  // Accepts TCP connections (the kernel does) but never speaks HTTP/2.
  LoopbackSocket socket(/*listen=*/true);
  const std::string address = absl::StrCat("grpc://127.0.0.1:", socket.port());
  auto driver = OpenGrpcDriver(Config(address));
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(
      absl::StrContains(driver.status().message(),
                        absl::StrCat(address, " (no answer within 1s)")))
      << driver.status();
}

TEST(GrpcDriverTest, AddressWithoutHostIsInvalidArgument) {
  auto driver = OpenGrpcDriver(Config("grpc://"));
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpu::driver
