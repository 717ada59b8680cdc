// The grpc:// backends: an emulator server on a loopback port in the test
// process, reached through the registry exactly as TpuClient reaches it, over
// TCP (grpc://127.0.0.1:PORT) and over its Unix socket (grpc://unix:PATH,
// the local fast path, where waiting threads read their own responses just
// the same).

#include <unistd.h>

#include <atomic>

#include "absl/strings/str_cat.h"
#include "driver/driver_registry.h"
#include "driver/grpc/grpc_driver.h"
#include "driver/grpc/grpc_transport.h"
#include "driver/stream_driver.h"
#include "emulator/service/server.h"
#include "tests/driver_conformance/backend.h"

namespace tpu {
namespace conformance {
namespace {

class GrpcInstance : public BackendInstance {
 public:
  GrpcInstance(std::unique_ptr<emulator::Server> server, bool unix_socket)
      : server_(std::move(server)),
        address_(unix_socket
                     ? absl::StrCat("grpc://unix:", server_->unix_socket())
                     : absl::StrCat("grpc://", server_->address())) {}

  ~GrpcInstance() override {
    const std::string socket = server_->unix_socket();
    server_.reset();
    if (!socket.empty()) unlink(socket.c_str());  // the worker leaves it
  }

  std::string address() override { return address_; }

  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> OpenDriver() override {
    return driver::DriverRegistry::Open(Config());
  }

  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> OpenFaultyDriver(
      std::shared_ptr<driver::FaultInjectionTransport::Faults> faults)
      override {
    absl::StatusOr<std::unique_ptr<driver::GrpcTransport>> base =
        driver::GrpcTransport::Create(Config());
    if (!base.ok()) return base.status();
    auto transport = std::make_unique<driver::FaultInjectionTransport>(
        *std::move(base), std::move(faults));
    driver::StreamDriverOptions options;
    options.open_timeout = absl::Seconds(5);
    options.close_grace = absl::Seconds(2);
    absl::StatusOr<std::unique_ptr<driver::StreamDriver>> driver =
        driver::StreamDriver::Create(std::move(transport), options);
    if (!driver.ok()) return driver.status();
    return std::unique_ptr<driver::TpuDriver>(*std::move(driver));
  }

  bool StopWorker() override {
    server_->Shutdown(absl::ZeroDuration());
    return true;
  }

 private:
  tpu_driver::TpuDriverConfig Config() const {
    tpu_driver::TpuDriverConfig config;
    config.set_worker(address_);
    config.mutable_grpc()->set_connection_timeout_secs(5);
    return config;
  }

  std::unique_ptr<emulator::Server> server_;
  const std::string address_;
};

// A server of 2 chips x 2 cores on loopback, also on a Unix socket when
// `unix_socket`; the instance dials that socket.
absl::StatusOr<std::unique_ptr<BackendInstance>> StartInstance(
    bool unix_socket) {
  emulator::ServerOptions options;
  options.bind = "127.0.0.1";
  options.port = 0;
  options.worker.chips = 2;
  options.worker.cores_per_chip = 2;
  options.worker.hbm_bytes_per_core = int64_t{1} << 30;
  options.worker.compute_threads = 2;
  if (unix_socket) {
    // Short (a socket path has at most 107 bytes) and unique per instance.
    static std::atomic<int> next{0};
    options.unix_socket = absl::StrCat("/tmp/tpu_conformance_", getpid(), "_",
                                       next.fetch_add(1), ".sock");
  }
  absl::StatusOr<std::unique_ptr<emulator::Server>> server =
      emulator::Server::Start(options);
  if (!server.ok()) return server.status();
  return std::unique_ptr<BackendInstance>(
      new GrpcInstance(*std::move(server), unix_socket));
}

const int kRegistered = RegisterBackend(Backend{
    "grpc",
    {"grpc://", "network"},
    [] { return StartInstance(/*unix_socket=*/false); },
    {},
});
const int kRegisteredUnix = RegisterBackend(Backend{
    "grpc_unix",
    {"grpc://", "network"},
    [] { return StartInstance(/*unix_socket=*/true); },
    {},
});

}  // namespace
}  // namespace conformance
}  // namespace tpu
