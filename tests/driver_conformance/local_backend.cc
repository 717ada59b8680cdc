// The local:// backend: an emulator Worker in the test process, shared by the
// drivers a test opens (as clients of one emulator).

#include "driver/local/local_driver.h"
#include "driver/local/local_transport.h"
#include "driver/stream_driver.h"
#include "tests/driver_conformance/backend.h"

namespace tpu {
namespace conformance {
namespace {

driver::StreamDriverOptions TestOptions() {
  driver::StreamDriverOptions options;
  options.close_grace = absl::Seconds(2);
  return options;
}

class LocalInstance : public BackendInstance {
 public:
  explicit LocalInstance(std::shared_ptr<emulator::Worker> worker)
      : worker_(std::move(worker)) {}

  std::string address() override { return "local://"; }

  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> OpenDriver() override {
    absl::StatusOr<std::unique_ptr<driver::StreamDriver>> driver =
        driver::OpenLocalDriver(worker_, TestOptions());
    if (!driver.ok()) return driver.status();
    return std::unique_ptr<driver::TpuDriver>(*std::move(driver));
  }

  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> OpenFaultyDriver(
      std::shared_ptr<driver::FaultInjectionTransport::Faults> faults)
      override {
    auto transport = std::make_unique<driver::FaultInjectionTransport>(
        std::make_unique<driver::LocalTransport>(worker_, "local://"),
        std::move(faults));
    absl::StatusOr<std::unique_ptr<driver::StreamDriver>> driver =
        driver::StreamDriver::Create(std::move(transport), TestOptions());
    if (!driver.ok()) return driver.status();
    return std::unique_ptr<driver::TpuDriver>(*std::move(driver));
  }

 private:
  std::shared_ptr<emulator::Worker> worker_;
};

const int kRegistered = RegisterBackend(Backend{
    "local",
    {"local://"},
    []() -> absl::StatusOr<std::unique_ptr<BackendInstance>> {
      emulator::WorkerOptions options;
      options.chips = 2;
      options.cores_per_chip = 2;
      options.hbm_bytes_per_core = int64_t{1} << 30;
      options.compute_threads = 2;
      absl::StatusOr<std::unique_ptr<emulator::Worker>> worker =
          emulator::Worker::Create(options);
      if (!worker.ok()) return worker.status();
      return std::unique_ptr<BackendInstance>(new LocalInstance(
          std::shared_ptr<emulator::Worker>(*std::move(worker))));
    },
    {{"WorkerGoingAwayFailsPendingEvents",
      "an in-process worker cannot go away; BrokenStreamsFailEveryPendingEvent "
      "covers the same path through fault injection"}},
});

}  // namespace
}  // namespace conformance
}  // namespace tpu
