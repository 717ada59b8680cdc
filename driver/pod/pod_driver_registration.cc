// Registers "grpc+pod://" with the DriverRegistry. Linked from an alwayslink
// library, so depending on //driver/pod:pod_driver is enough to enable it.

#include "driver/driver_registry.h"
#include "driver/pod/pod_driver.h"

namespace tpu::driver {
namespace {

const int kRegistered = DriverRegistry::Register(
    kPodDriverPrefix,
    [](const tpu_driver::TpuDriverConfig& config)
        -> absl::StatusOr<std::unique_ptr<TpuDriver>> {
      absl::StatusOr<std::unique_ptr<PodDriver>> driver =
          PodDriver::Open(config);
      if (!driver.ok()) return driver.status();
      return std::unique_ptr<TpuDriver>(*std::move(driver));
    });

}  // namespace
}  // namespace tpu::driver
