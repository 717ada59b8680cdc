#include "client/tpu_client.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "driver/driver_registry.h"

namespace tpu::client {
namespace {

// One device per core, in the order the system lists chips and cores.
absl::StatusOr<std::vector<std::shared_ptr<TpuDevice>>> DevicesFromSystemInfo(
    const tpu_driver::SystemInfo& info) {
  std::vector<std::shared_ptr<TpuDevice>> devices;
  for (const tpu_driver::TpuChipInfo& chip : info.tpu_chip()) {
    const std::array<int, 3> coords = {
        chip.chip_coord().x(), chip.chip_coord().y(), chip.chip_coord().z()};
    for (const tpu_driver::TpuCoreInfo& core : chip.core()) {
      devices.push_back(std::make_shared<TpuDevice>(
          core.id(), chip.host_id(), coords, core.core_on_chip_index()));
    }
  }
  return devices;
}

}  // namespace

absl::StatusOr<std::shared_ptr<TpuClient>> TpuClient::Get(
    absl::string_view address, const ClientOptions& options) {
  if (options.connect_timeout < absl::ZeroDuration() ||
      options.connection_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Negative connection timeout (connect_timeout ",
        absl::FormatDuration(options.connect_timeout), ", connection_timeout ",
        absl::FormatDuration(options.connection_timeout), ")."));
  }
  tpu_driver::TpuDriverConfig config;
  config.set_worker(std::string(address));
  const int64_t timeout_secs = absl::ToInt64Seconds(
      absl::Ceil(options.connection_timeout, absl::Seconds(1)));
  config.mutable_grpc()->set_connection_timeout_secs(
      timeout_secs < 1 ? 1 : timeout_secs);
  config.mutable_grpc()->set_connect_timeout_ms(
      absl::ToInt64Milliseconds(options.connect_timeout));
  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> driver =
      driver::DriverRegistry::Open(config);
  if (!driver.ok()) return driver.status();
  return Create(*std::move(driver), options);
}

absl::StatusOr<std::shared_ptr<TpuClient>> TpuClient::Create(
    std::unique_ptr<driver::TpuDriver> driver, const ClientOptions& options) {
  absl::StatusOr<tpu_driver::SystemInfo> info = driver->QuerySystemInfo();
  if (!info.ok()) return info.status();
  absl::StatusOr<std::vector<std::shared_ptr<TpuDevice>>> devices =
      DevicesFromSystemInfo(*info);
  if (!devices.ok()) return devices.status();

  std::map<int, int> seen;
  int local = 0;
  for (const auto& device : *devices) {
    if (!seen.emplace(device->id(), 0).second) {
      return absl::InternalError(absl::StrFormat(
          "the TPU system reports core id %d twice; its SystemInfo is "
          "inconsistent",
          device->id()));
    }
    if (device->host_id() == info->host_id()) ++local;
  }
  if (local == 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the TPU system reports %d cores but none on this host (host id %d); "
        "connect to a worker that serves TPU cores",
        devices->size(), info->host_id()));
  }
  return std::make_shared<TpuClient>(options, std::move(driver),
                                     *std::move(devices), info->host_id());
}

TpuClient::TpuClient(const ClientOptions& options,
                     std::unique_ptr<driver::TpuDriver> driver,
                     std::vector<std::shared_ptr<TpuDevice>> devices,
                     int host_id)
    : options_(options),
      driver_(std::move(driver)),
      devices_(std::move(devices)),
      host_id_(host_id) {
  for (const auto& device : devices_) {
    id_to_device_.emplace(device->id(), device);
    if (device->host_id() == host_id_) local_devices_.push_back(device);
  }
  const int threads = options_.execute_threads > 0
                          ? options_.execute_threads
                          : static_cast<int>(local_devices_.size());
  thread_pool_ = std::make_unique<ThreadPool>(threads < 1 ? 1 : threads);
}

TpuClient::~TpuClient() {
  // The pool may be running replica launches that use the driver.
  thread_pool_.reset();
}

absl::Status TpuClient::CheckDeviceId(int device_id,
                                      absl::string_view caller_name) const {
  if (id_to_device_.find(device_id) == id_to_device_.end()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s got bad device_id: %d (num_devices=%d).",
                        caller_name, device_id, device_count()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<TpuDevice>> TpuClient::LookupDevice(
    int device_id, absl::string_view caller_name) const {
  auto it = id_to_device_.find(device_id);
  if (it == id_to_device_.end()) return CheckDeviceId(device_id, caller_name);
  return it->second;
}

absl::StatusOr<DeviceAssignment> TpuClient::GetDefaultDeviceAssignment(
    int num_replicas, int num_partitions) const {
  if (num_partitions > 1) {
    return absl::InvalidArgumentError(
        "Num partitions greater than 1, is not supported.");
  }
  if (num_replicas < 1 || num_partitions < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a device assignment needs at least one replica and one partition; "
        "got %d replicas and %d partitions",
        num_replicas, num_partitions));
  }
  const bool fits_locally = num_replicas <= local_device_count();
  DeviceAssignment assignment(num_replicas, num_partitions);
  for (int replica = 0; replica < num_replicas; ++replica) {
    // Without enough local devices, fall back to XLA's computation placer
    // (replica r on device r); the executable then runs only the replicas
    // placed on this host's devices.
    assignment(replica, 0) =
        fits_locally ? local_devices_[replica]->id() : replica;
  }
  return assignment;
}

void TpuClient::Warn(absl::string_view message) const {
  if (options_.warning_handler) {
    options_.warning_handler(message);
    return;
  }
  std::string line = absl::StrCat("W tpu_client: ", message, "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace tpu::client
