#include "driver/grpc/grpc_driver.h"

#include <utility>

#include "driver/driver_registry.h"

namespace tpu {

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
    "grpc://", [](const tpu_driver::TpuDriverConfig& config)
                   -> absl::StatusOr<std::unique_ptr<TpuDriver>> {
      absl::StatusOr<std::unique_ptr<StreamDriver>> driver =
          OpenGrpcDriver(config);
      if (!driver.ok()) return driver.status();
      return std::unique_ptr<TpuDriver>(*std::move(driver));
    });

}  // namespace
}  // namespace tpu
