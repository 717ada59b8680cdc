#ifndef SOFTWARE_TPU_DRIVER_TESTING_FAKE_DRIVER_H_
#define SOFTWARE_TPU_DRIVER_TESTING_FAKE_DRIVER_H_

// An in-memory TpuDriver for tests of everything above the driver API (the
// client, the pod driver): no emulator, and deterministic fault injection.
//
// A FakeWorker is the "machine"; FakeWorker::NewDriver() opens a TpuDriver on
// it (several may be open at once). The test keeps the FakeWorker to program
// it, to inject faults and to look at what its drivers did, also after they
// are gone.
//
// Semantics, kept small on purpose:
//  - An operation runs once `wait_for` and the operations that created the
//    handles it names have completed: at once, on the calling thread, if they
//    have, else on the thread that completes the last of them. If one of them
//    failed, it fails FAILED_PRECONDITION ("a dependency failed: ...")
//    without taking effect.
//  - While the worker holds (Hold: every operation; HoldExecutions: only
//    ExecuteProgram), operations that are ready queue until Release() runs
//    them in order, or Disappear() fails them. Closing a driver cancels what
//    it still has queued (CANCELLED), as a real driver does.
//  - Buffers hold bytes, on cores of `hbm_bytes_per_core` each (else
//    RESOURCE_EXHAUSTED naming requested, in use and capacity). Allocate with
//    a byte count makes a u8[n] array.
//  - A program is its HLO module: the entry computation's program shape
//    (else host_program_shape) is its shape; a module with neither fails to
//    compile (INVALID_ARGUMENT "the module has no entry computation"), and so
//    does one named "fail_compile". One named "fail_execute" fails every
//    execution (INTERNAL). Otherwise an execution hands the array leaves of
//    its inputs and outputs (tuples flattened, in order) to the worker's
//    Executor; the default one writes output 0 byte i = input 0 byte i + 1,
//    for as many bytes as both have.
//  - Handles of another fake driver are rejected with INVALID_ARGUMENT
//    ("fake <name>: ... another driver"), so misrouting shows.
//
// Thread safety: safe for concurrent use.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "driver/tpu_driver.h"
#include "hlo/literal.h"
#include "hlo/shape.h"
#include "proto/tpu_driver.pb.h"
#include "proto/xla_data.pb.h"

namespace tpu::driver::testing {

struct FakeWorkerOptions {
  // Appears in the worker's error messages ("fake <name>: ...").
  std::string name = "fake";
  // Chips of this host, each with `cores_per_chip` cores. Core ids are
  // chip * cores_per_chip + index; chip i has coordinates (i, 0, 0).
  int chips = 2;
  int cores_per_chip = 1;
  int64_t hbm_bytes_per_core = 1 << 20;
  // Pod-slice mode: host `host_id` of `pod_hosts` hosts with `chips` chips
  // each; SystemInfo then reports the whole slice, and only this host's
  // cores serve operations.
  int pod_hosts = 1;
  int host_id = 0;
};

class FakeWorker {
 public:
  // Computes an execution's output leaves from its input leaves. `outputs`
  // arrive holding the output buffers' current contents.
  using Executor = std::function<absl::Status(
      const std::vector<Literal>& inputs, std::vector<Literal>* outputs)>;

  static std::shared_ptr<FakeWorker> Create(FakeWorkerOptions options = {});
  ~FakeWorker();

  FakeWorker(const FakeWorker&) = delete;
  FakeWorker& operator=(const FakeWorker&) = delete;

  // A driver on this worker; it keeps the worker's state alive.
  std::unique_ptr<TpuDriver> NewDriver();

  // Replaces the default executor for the executions that start from now on.
  void set_executor(Executor executor);

  // Faults.
  // Operations that become ready from now on wait until Release().
  void Hold();
  // Only executions do.
  void HoldExecutions();
  // Runs every held operation in order and stops holding.
  void Release();
  // The worker is gone: held and future operations fail UNAVAILABLE
  // ("fake <name>: connection lost"), QuerySystemInfo and Reset too.
  void Disappear();
  // The next operation of `kind` ("Allocate", "TransferToDevice", ...) to
  // run fails with `status` without taking effect.
  void FailNext(const std::string& kind, absl::Status status);

  // Observations.
  // Operations held now.
  int held();
  // Waits up to `timeout` until at least `count` operations are held: a
  // caller may issue from another thread, after the call that scheduled the
  // operation returned (as the pod driver's dispatcher does).
  bool AwaitHeld(int count, absl::Duration timeout);
  // Buffers (arrays and tuples) and loaded programs that exist now.
  int64_t live_buffers();
  int64_t live_loaded_programs();
  int64_t drivers_open();
  int64_t resets();
  // Operations issued so far, by kind: calls that passed the up-front checks,
  // whether or not they ran since.
  int64_t issued(const std::string& kind);
  // The device assignment of the last execution issued on core `core`, and
  // of the last one on any core.
  std::optional<xla::DeviceAssignmentProto> last_assignment(int32_t core);
  std::optional<xla::DeviceAssignmentProto> last_assignment();
  // The cores of the executions issued so far, in the order they were.
  std::vector<int32_t> executed_cores();
  // num_replicas of the last CompileProgram.
  int32_t last_num_replicas();

  const std::string& name() const;
  tpu_driver::SystemInfo system_info() const;

  // What the worker and its drivers share; defined in fake_driver.cc.
  struct State;

 private:
  explicit FakeWorker(FakeWorkerOptions options);
  const std::shared_ptr<State> state_;
};

// Several fake workers answering the addresses "grpc://fake<i>", for drivers
// that open their workers by address (the pod driver: give it
// OpenWorker() and pod_address()).
class FakeCluster {
 public:
  // Adds worker i, named "fake<i>".
  std::shared_ptr<FakeWorker> Add(FakeWorkerOptions options = {});
  // "grpc+pod://fake0,fake1,..."
  std::string pod_address() const;
  // Opens a driver on the worker whose address is config.worker();
  // UNAVAILABLE for any other address.
  std::function<absl::StatusOr<std::unique_ptr<TpuDriver>>(
      const tpu_driver::TpuDriverConfig& config)>
  OpenWorker() const;
  const std::vector<std::shared_ptr<FakeWorker>>& workers() const {
    return workers_;
  }

 private:
  std::vector<std::shared_ptr<FakeWorker>> workers_;
};

// A module whose entry computation has this signature: all the fake
// "compiler" looks at.
xla::HloModuleProto ModuleWithSignature(const std::vector<Shape>& parameters,
                                        const Shape& result);

// A program named `name` (see the semantics above) of signature
// (u8[bytes]) -> u8[bytes].
xla::HloProto FakeProgram(const std::string& name, int64_t bytes);

}  // namespace tpu::driver::testing

#endif  // SOFTWARE_TPU_DRIVER_TESTING_FAKE_DRIVER_H_
