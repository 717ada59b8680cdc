#ifndef SOFTWARE_TPU_DRIVER_POD_TESTING_FAKE_DRIVER_H_
#define SOFTWARE_TPU_DRIVER_POD_TESTING_FAKE_DRIVER_H_

// An in-memory TpuDriver for testing the pod driver without any emulator,
// with deterministic fault injection.
//
// A FakeWorker is the "machine"; FakeWorker::NewDriver() opens a TpuDriver on
// it. The test keeps the FakeWorker (shared_ptr) to inject faults and to
// look at what the driver left behind after the pod is gone.
//
// Semantics, kept small on purpose:
//  - Operations run and complete inline, on the calling thread, unless the
//    worker is held: then they queue until Release() (FIFO) or Disappear().
//  - wait_for must be empty or already complete (the pod never passes any).
//  - A "program" is identified by its HLO module name. Executing it writes
//    output 0 byte i = input 0 byte i + 1 (as many bytes as both have) and
//    records the device assignment it got. Module "fail_compile" fails to
//    compile (INVALID_ARGUMENT), "fail_execute" fails to run (INTERNAL).
//  - Handles of another fake driver are rejected with INVALID_ARGUMENT
//    ("fake <name>: ... another driver"), so misrouting shows.
//
// Thread safety: safe for concurrent use.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "driver/pod/pod_driver.h"
#include "driver/tpu_driver.h"

namespace tpu::driver {
namespace testing {

struct FakeWorkerOptions {
  std::string name = "fake";
  int chips = 2;
  int cores_per_chip = 1;
  int64_t hbm_bytes_per_core = 1 << 20;
  // Pod-slice mode: host `host_id` of `pod_hosts` hosts with `chips` chips
  // each; SystemInfo then reports the whole slice.
  int pod_hosts = 1;
  int host_id = 0;
};

class FakeWorker : public std::enable_shared_from_this<FakeWorker> {
 public:
  struct State;

  static std::shared_ptr<FakeWorker> Create(FakeWorkerOptions options);
  ~FakeWorker();

  // A driver on this worker. Several may be open at once.
  std::unique_ptr<TpuDriver> NewDriver();

  // Faults.
  // Operations issued from now on wait until Release().
  void Hold();
  // Runs every held operation in order and stops holding.
  void Release();
  // The worker is gone: held and future operations fail UNAVAILABLE
  // ("fake <name>: connection lost"), QuerySystemInfo too.
  void Disappear();
  // The next operation of `kind` ("Allocate", "TransferToDevice", ...)
  // fails with `status` without taking effect.
  void FailNext(const std::string& kind, absl::Status status);

  // Observations.
  int held();
  // Waits up to `timeout` until at least `count` operations are held: the
  // pod driver may issue from its dispatcher thread, after the call that
  // scheduled the operation returned.
  bool AwaitHeld(int count, absl::Duration timeout);
  int64_t live_buffers();
  int64_t live_loaded_programs();
  int64_t drivers_open();
  int64_t resets();
  // Operations issued, by kind.
  int64_t issued(const std::string& kind);
  // The device assignment of the last execution on worker core `core`.
  std::optional<xla::DeviceAssignmentProto> last_assignment(int32_t core);
  const std::string& name() const;
  tpu_driver::SystemInfo system_info() const;

  State* state() { return state_.get(); }

 private:
  explicit FakeWorker(FakeWorkerOptions options);
  std::unique_ptr<State> state_;
};

// Several fake workers and a PodDriverOptions that opens them by name:
// worker i answers the address "grpc://fake<i>" (the pod adds "grpc://").
class FakeCluster {
 public:
  std::shared_ptr<FakeWorker> Add(FakeWorkerOptions options);
  // "grpc+pod://fake0,fake1,..."
  std::string address() const;
  PodDriverOptions pod_options() const;
  const std::vector<std::shared_ptr<FakeWorker>>& workers() const {
    return workers_;
  }

 private:
  std::vector<std::shared_ptr<FakeWorker>> workers_;
};

// An HloProto whose module is `name` and whose program shape is
// (u8[bytes]) -> u8[bytes], for the fake's programs.
xla::HloProto FakeProgram(const std::string& name, int64_t bytes);

}  // namespace testing
}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_POD_TESTING_FAKE_DRIVER_H_
