// Registers "record://" with the DriverRegistry. Linked from an alwayslink
// library, so depending on //driver/record:recording_driver enables it.

#include "driver/driver_registry.h"
#include "driver/record/recording_driver.h"

namespace tpu::driver {
namespace {

const int kRegistered = DriverRegistry::Register(
    kRecordDriverPrefix,
    [](const tpu_driver::TpuDriverConfig& config)
        -> absl::StatusOr<std::unique_ptr<TpuDriver>> {
      absl::StatusOr<std::unique_ptr<RecordingDriver>> driver =
          RecordingDriver::Open(config);
      if (!driver.ok()) return driver.status();
      return std::unique_ptr<TpuDriver>(*std::move(driver));
    });

}  // namespace
}  // namespace tpu::driver
