#include "driver/grpc/grpc_driver.h"

#include <utility>

#include "absl/strings/match.h"
#include "driver/driver_registry.h"

namespace tpu::driver {

absl::StatusOr<std::unique_ptr<StreamDriver>> OpenGrpcDriver(
    const tpu_driver::TpuDriverConfig& config, GrpcCredentialsKind credentials,
    StreamDriverOptions options) {
  absl::StatusOr<std::unique_ptr<GrpcTransport>> transport =
      GrpcTransport::Create(config, credentials);
  if (!transport.ok()) return transport.status();
  options.open_timeout = absl::Seconds(config.grpc().connection_timeout_secs());
  return StreamDriver::Create(*std::move(transport), options);
}

namespace {

const int kRegistered = DriverRegistry::Register(
    "grpc://",
    [](const tpu_driver::TpuDriverConfig& config)
        -> absl::StatusOr<std::unique_ptr<TpuDriver>> {
      // As the reference client: local credentials for localhost. They
      // interoperate with insecure servers (and insecure clients with local
      // servers); both are plaintext HTTP/2.
      absl::StatusOr<std::unique_ptr<StreamDriver>> driver = OpenGrpcDriver(
          config, absl::StartsWith(config.worker(), "grpc://localhost")
                      ? GrpcCredentialsKind::kLocalTcp
                      : GrpcCredentialsKind::kInsecure);
      if (!driver.ok()) return driver.status();
      return std::unique_ptr<TpuDriver>(*std::move(driver));
    });

}  // namespace
}  // namespace tpu::driver
