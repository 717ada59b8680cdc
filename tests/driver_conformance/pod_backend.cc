// The grpc+pod:// backend: a pod driver over two in-process emulator workers
// of one core each, so that core(0) and core(1) of the suite sit on different
// workers (copies between them go through the pod's host bounce, programs
// run on both workers). Drivers opened on one instance share the workers.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "driver/fault_injection_transport.h"
#include "driver/local/local_driver.h"
#include "driver/local/local_transport.h"
#include "driver/pod/pod_driver.h"
#include "driver/stream_driver.h"
#include "tests/driver_conformance/backend.h"

namespace tpu {
namespace conformance {
namespace {

constexpr int kWorkers = 2;

driver::StreamDriverOptions TestOptions() {
  driver::StreamDriverOptions options;
  options.close_grace = absl::Seconds(2);
  return options;
}

class PodInstance : public BackendInstance {
 public:
  explicit PodInstance(std::vector<std::shared_ptr<emulator::Worker>> workers)
      : workers_(std::move(workers)) {}

  // Worker i is "local://pod-worker-<i>": only this backend's factory knows
  // those names.
  std::string address() override {
    std::string address = driver::kPodDriverPrefix;
    for (int i = 0; i < kWorkers; ++i) {
      absl::StrAppend(&address, i == 0 ? "" : ",", "local://pod-worker-", i);
    }
    return address;
  }

  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> OpenDriver() override {
    return Open(nullptr);
  }

  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> OpenFaultyDriver(
      std::shared_ptr<driver::FaultInjectionTransport::Faults> faults)
      override {
    return Open(std::move(faults));
  }

 private:
  // Every worker driver runs through `faults` when it is set.
  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> Open(
      std::shared_ptr<driver::FaultInjectionTransport::Faults> faults) {
    driver::PodDriverOptions options;
    options.shutdown_timeout = absl::Seconds(5);
    options.open_worker = [this,
                           faults](const tpu_driver::TpuDriverConfig& config)
        -> absl::StatusOr<std::unique_ptr<driver::TpuDriver>> {
      for (int i = 0; i < kWorkers; ++i) {
        const std::string name = absl::StrCat("local://pod-worker-", i);
        if (config.worker() != name) continue;
        absl::StatusOr<std::unique_ptr<driver::StreamDriver>> driver;
        if (faults == nullptr) {
          driver = driver::OpenLocalDriver(workers_[i], TestOptions());
        } else {
          driver = driver::StreamDriver::Create(
              std::make_unique<driver::FaultInjectionTransport>(
                  std::make_unique<driver::LocalTransport>(workers_[i], name),
                  faults),
              TestOptions());
        }
        if (!driver.ok()) return driver.status();
        return std::unique_ptr<driver::TpuDriver>(*std::move(driver));
      }
      return absl::NotFoundError(
          absl::StrCat("no pod test worker named ", config.worker()));
    };
    tpu_driver::TpuDriverConfig config;
    config.set_worker(address());
    absl::StatusOr<std::unique_ptr<driver::PodDriver>> pod =
        driver::PodDriver::Open(config, std::move(options));
    if (!pod.ok()) return pod.status();
    return std::unique_ptr<driver::TpuDriver>(*std::move(pod));
  }

  std::vector<std::shared_ptr<emulator::Worker>> workers_;
};

const int kRegistered = RegisterBackend(Backend{
    "pod",
    {"grpc+pod://", "local://"},
    []() -> absl::StatusOr<std::unique_ptr<BackendInstance>> {
      std::vector<std::shared_ptr<emulator::Worker>> workers;
      for (int i = 0; i < kWorkers; ++i) {
        emulator::WorkerOptions options;
        options.chips = 1;
        options.cores_per_chip = 1;
        options.hbm_bytes_per_core = int64_t{1} << 30;
        options.compute_threads = 1;
        absl::StatusOr<std::unique_ptr<emulator::Worker>> worker =
            emulator::Worker::Create(options);
        if (!worker.ok()) return worker.status();
        workers.push_back(
            std::shared_ptr<emulator::Worker>(*std::move(worker)));
      }
      return std::unique_ptr<BackendInstance>(
          new PodInstance(std::move(workers)));
    },
    {{"WorkerGoingAwayFailsPendingEvents",
      "in-process workers cannot go away; tests/pod kills real tpu_emulator "
      "workers (SIGKILL) under a grpc+pod:// driver instead"},
     {"FailedOperationFailsItsDependents",
      "it reads the wire event id by downcasting to the stream driver's "
      "CompletionEvent; pod events carry pod-level operation ids. "
      "driver/pod/pod_driver_test checks dependency failures by pod id"}},
});

}  // namespace
}  // namespace conformance
}  // namespace tpu
