#include "driver/grpc/grpc_driver.h"

#include <utility>

#include "driver/driver_registry.h"

namespace tpu::driver {

absl::StatusOr<std::unique_ptr<StreamDriver>> OpenGrpcDriver(
    const tpu_driver::TpuDriverConfig& config, StreamDriverOptions options) {
  absl::StatusOr<std::unique_ptr<GrpcTransport>> transport =
      GrpcTransport::Create(config);
  if (!transport.ok()) return transport.status();
  options.open_timeout = absl::Seconds(config.grpc().connection_timeout_secs());
  return StreamDriver::Create(*std::move(transport), options);
}

namespace {

absl::StatusOr<std::unique_ptr<TpuDriver>> OpenAsTpuDriver(
    const tpu_driver::TpuDriverConfig& config) {
  absl::StatusOr<std::unique_ptr<StreamDriver>> driver = OpenGrpcDriver(config);
  if (!driver.ok()) return driver.status();
  return std::unique_ptr<TpuDriver>(*std::move(driver));
}

const int kRegistered = DriverRegistry::Register("grpc://", OpenAsTpuDriver);
const int kRegisteredTls =
    DriverRegistry::Register("grpcs://", OpenAsTpuDriver);

}  // namespace
}  // namespace tpu::driver
