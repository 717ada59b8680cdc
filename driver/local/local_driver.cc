#include "driver/local/local_driver.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "driver/address_query.h"
#include "driver/driver_registry.h"
#include "driver/local/local_transport.h"

namespace tpu::driver {
namespace {

constexpr char kScheme[] = "local://";

absl::Status BadValue(absl::string_view name, absl::string_view value,
                      absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("local:// parameter ", name, "=\"", value,
                   "\" is invalid: expected ", expected));
}

absl::Status ParseInt(absl::string_view name, absl::string_view value,
                      int64_t min, int64_t* out) {
  int64_t parsed;
  if (!absl::SimpleAtoi(value, &parsed) || parsed < min) {
    return BadValue(name, value, absl::StrCat("an integer >= ", min));
  }
  *out = parsed;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<emulator::WorkerOptions> ParseLocalAddress(
    absl::string_view address) {
  const AddressQuery query = SplitAddressQuery(address);
  if (!absl::StartsWith(query.base, kScheme)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "address \"", address, "\" does not start with ", kScheme));
  }
  if (query.base != kScheme) {
    return absl::InvalidArgumentError(
        absl::StrCat("address \"", address,
                     "\": a local:// address has no host; write local:// or "
                     "local://?chips=N&cores_per_chip=M"));
  }
  emulator::WorkerOptions options;
  for (const auto& [name, value] : query.params) {
    int64_t number = 0;
    absl::Status status;
    if (name == "chips") {
      status = ParseInt(name, value, 1, &number);
      options.chips = static_cast<int>(number);
    } else if (name == "cores_per_chip") {
      status = ParseInt(name, value, 1, &number);
      options.cores_per_chip = static_cast<int>(number);
    } else if (name == "hbm_bytes_per_core") {
      status = ParseInt(name, value, 0, &number);
      options.hbm_bytes_per_core = number;
    } else if (name == "tpu_numerics") {
      if (value != "0" && value != "1") {
        status = BadValue(name, value, "0 or 1");
      }
      options.tpu_numerics = value == "1";
    } else if (name == "compute_threads") {
      status = ParseInt(name, value, 0, &number);
      options.compute_threads = static_cast<int>(number);
    } else if (name == "unknown_handle_wait_ms") {
      status = ParseInt(name, value, 0, &number);
      options.unknown_handle_wait_ms = number;
    } else {
      status = absl::InvalidArgumentError(absl::StrCat(
          "unknown local:// parameter \"", name, "\" in \"", address,
          "\"; known: chips, cores_per_chip, hbm_bytes_per_core, "
          "tpu_numerics, compute_threads, unknown_handle_wait_ms"));
    }
    if (!status.ok()) return status;
  }
  if (options.chips > 1024 || options.cores_per_chip > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("local:// topology of ", options.chips, " chips x ",
                     options.cores_per_chip,
                     " cores is larger than supported "
                     "(chips <= 1024, cores_per_chip <= 64)"));
  }
  return options;
}

absl::StatusOr<std::unique_ptr<StreamDriver>> OpenLocalDriver(
    const tpu_driver::TpuDriverConfig& config, StreamDriverOptions options) {
  absl::StatusOr<emulator::WorkerOptions> worker_options =
      ParseLocalAddress(config.worker());
  if (!worker_options.ok()) return worker_options.status();
  absl::StatusOr<std::unique_ptr<emulator::Worker>> worker =
      emulator::Worker::Create(*worker_options);
  if (!worker.ok()) return worker.status();
  return StreamDriver::Create(
      std::make_unique<LocalTransport>(
          std::shared_ptr<emulator::Worker>(*std::move(worker)),
          config.worker()),
      options);
}

absl::StatusOr<std::unique_ptr<StreamDriver>> OpenLocalDriver(
    std::shared_ptr<emulator::Worker> worker, StreamDriverOptions options) {
  return StreamDriver::Create(
      std::make_unique<LocalTransport>(std::move(worker), kScheme), options);
}

namespace {

const int kRegistered = DriverRegistry::Register(
    kScheme,
    [](const tpu_driver::TpuDriverConfig& config)
        -> absl::StatusOr<std::unique_ptr<TpuDriver>> {
      absl::StatusOr<std::unique_ptr<StreamDriver>> driver =
          OpenLocalDriver(config);
      if (!driver.ok()) return driver.status();
      return std::unique_ptr<TpuDriver>(*std::move(driver));
    });

}  // namespace
}  // namespace tpu::driver
