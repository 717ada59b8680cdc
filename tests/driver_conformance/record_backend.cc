// The record:// backend: the recording driver over local:// (an emulator
// Worker in the test process), so the whole suite checks that recording
// changes nothing a client sees. Each driver records to its own file.

#include <atomic>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "driver/local/local_driver.h"
#include "driver/record/recording_driver.h"
#include "driver/stream_driver.h"
#include "tests/driver_conformance/backend.h"

namespace tpu {
namespace conformance {
namespace {

std::string RecordingPath() {
  static std::atomic<int> next{0};
  const char* dir = getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/conformance_",
                      next.fetch_add(1), ".log");
}

class RecordInstance : public BackendInstance {
 public:
  explicit RecordInstance(std::shared_ptr<emulator::Worker> worker)
      : worker_(std::move(worker)) {}

  std::string address() override {
    return "record://|file=/tmp/conformance.log|worker=local://";
  }

  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> OpenDriver() override {
    driver::StreamDriverOptions options;
    options.close_grace = absl::Seconds(2);
    absl::StatusOr<std::unique_ptr<driver::StreamDriver>> local =
        driver::OpenLocalDriver(worker_, options);
    if (!local.ok()) return local.status();
    absl::StatusOr<std::unique_ptr<driver::RecordingDriver>> recording =
        driver::RecordingDriver::Create(*std::move(local), RecordingPath());
    if (!recording.ok()) return recording.status();
    return std::unique_ptr<driver::TpuDriver>(*std::move(recording));
  }

 private:
  std::shared_ptr<emulator::Worker> worker_;
};

const int kRegistered = RegisterBackend(Backend{
    "record",
    {"record://", "local://"},
    []() -> absl::StatusOr<std::unique_ptr<BackendInstance>> {
      emulator::WorkerOptions options;
      options.chips = 2;
      options.cores_per_chip = 2;
      options.hbm_bytes_per_core = int64_t{1} << 30;
      options.compute_threads = 2;
      absl::StatusOr<std::unique_ptr<emulator::Worker>> worker =
          emulator::Worker::Create(options);
      if (!worker.ok()) return worker.status();
      return std::unique_ptr<BackendInstance>(new RecordInstance(
          std::shared_ptr<emulator::Worker>(*std::move(worker))));
    },
    {{"WorkerGoingAwayFailsPendingEvents",
      "an in-process worker cannot go away; the local backend's fault "
      "injection covers the path below the recording driver"}},
});

}  // namespace
}  // namespace conformance
}  // namespace tpu
