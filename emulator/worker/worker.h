#ifndef SOFTWARE_TPU_EMULATOR_WORKER_H_
#define SOFTWARE_TPU_EMULATOR_WORKER_H_

// The emulated TPU worker, independent of any transport. The gRPC service
// (emulator/service.h) is a thin adapter over it, and the local:// driver uses
// it in-process; both therefore have exactly the same semantics.
//
// Thread safety: Worker and WorkerStream are safe for concurrent use.
//
// Semantics in brief (emulator/operations.h has the details): every request
// entry gets exactly one response entry echoing its operation_id, with a
// status whose code is always set. Client ids are in [1, 2^20). A client is
// released by Close, by Reset, when one of its streams is aborted, or after
// max_idle_time_seconds without a stream or request; its waiting operations
// then fail and its running programs stop with CANCELLED. A stream acts for
// one client, the first open one its entries name; entries of other clients
// on it fail PERMISSION_DENIED without touching them.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "emulator/collectives/collective_hub.h"
#include "emulator/collectives/peer_link.h"
#include "emulator/faults/fault_plan.h"
#include "emulator/worker/client_limits.h"
#include "emulator/worker/transfer_data.h"
#include "proto/control.pb.h"
#include "proto/tpu_driver.pb.h"
#include "proto/tpu_service.pb.h"

namespace tpu::emulator {

struct WorkerOptions {
  // Topology this worker serves: chips x cores_per_chip cores.
  int chips = 4;
  int cores_per_chip = 2;
  // HBM capacity of each core. Accounting only: memory is committed when a
  // buffer is written, not when the worker starts.
  int64_t hbm_bytes_per_core = int64_t{16} << 30;
  // Pod-slice mode: this worker is host `host_id` of `pod_hosts` hosts that
  // each serve `chips` chips; SystemInfo then reports the whole slice's chips
  // while only this host's cores are served. pod_hosts = 1: a lone worker.
  int pod_hosts = 1;
  int host_id = 0;
  // Seconds a client may stay idle (no stream, no rpc) before the worker
  // releases everything it owns; reported in OpenResponse.
  int max_idle_time_seconds = 3600;
  // How long an operation naming a handle whose creating operation has not
  // arrived yet waits for it before failing NOT_FOUND.
  int64_t unknown_handle_wait_ms = 5000;
  // f32 dot/convolution with DEFAULT precision computed as a TPU does
  // (operands rounded to bf16, f32 accumulation).
  bool tpu_numerics = false;
  // Threads of the worker's shared Eigen pool; 0 = number of CPUs.
  int compute_threads = 0;
  // Log the wait report once a core has waited this long in a collective
  // (like the client's "TPU Execute is taking a long time" warning); zero
  // disables the log line. Waits themselves never time out, as on a TPU.
  absl::Duration report_waits_after = absl::Seconds(10);
  // Check at launch that every core of a multi-core device assignment starts
  // the same program for the same launch, failing all of them with
  // FAILED_PRECONDITION otherwise (TPU's enhanced launch barrier).
  bool launch_barrier = false;
  // Pod-slice mode: how to reach the other hosts of the slice, so that
  // collectives whose groups span workers meet (emulator/service builds it
  // from --pod_addresses). Null: groups stay within this worker.
  std::shared_ptr<PeerLink> peers;
  // Fault rules (emulator/faults/fault_plan.h) every operation consults as
  // it starts. Null: the worker starts with an empty plan of its own.
  std::shared_ptr<faults::FaultPlan> fault_plan;
  // Time every top-level instruction of every program run, per compiled
  // program (the control service's GetProfile).
  bool profile_programs = false;
  // Host memory every buffer of this process may commit in all (literals,
  // HBM contents, transfer payloads, program intermediates); an operation
  // that would pass it fails RESOURCE_EXHAUSTED. 0: no budget. When set, the
  // worker installs it as the process budget (hlo/memory_budget.h) for the
  // rest of the process's life, so set it for one worker per process.
  int64_t host_memory_budget = 0;
  // What each client may hold at once (emulator/worker/client_limits.h).
  ClientLimits client_limits;
};

// One StreamExecute call. Requests go in through Submit; responses come out
// through the callback given to Worker::OpenStream.
class WorkerStream {
 public:
  virtual ~WorkerStream() = default;

  // Schedules every entry of `request`, whose transfer_to payloads may come
  // beside it in `transfer_data` (emulator/transfer_data.h). Never blocks on
  // execution; malformed entries get an error response, they never end the
  // stream.
  virtual void Submit(const tpu_driver::StreamRequest& request,
                      const TransferData& transfer_data) = 0;
  void Submit(const tpu_driver::StreamRequest& request) {
    Submit(request, TransferData());
  }

  // The client finished writing. Blocks until every operation submitted on
  // this stream has completed and its response was delivered.
  virtual void Finish() = 0;

  // Non-blocking Finish: `done` runs (on a worker thread, or at once) after
  // every operation submitted on this stream has completed and its response
  // was delivered. Not run if the stream is aborted or destroyed first.
  virtual void FinishAsync(std::function<void()> done) = 0;

  // The transport broke: the client is gone. Its state is released.
  virtual void Abort() = 0;

  // How the transport ends this stream abruptly when a fault rule's
  // drop_stream says so (the worker has then released the stream's client).
  // Runs at most once, on a worker thread. Unset: the stream only stops
  // delivering.
  virtual void SetDropHandler(
      std::function<void(const absl::Status&)> handler) {}
};

class Worker {
 public:
  static absl::StatusOr<std::unique_ptr<Worker>> Create(
      const WorkerOptions& options);
  virtual ~Worker() = default;

  virtual absl::StatusOr<tpu_driver::OpenResponse> Open(
      const tpu_driver::OpenRequest& request) = 0;
  // Close of an unknown client id succeeds (the real client closes after
  // Reset with its forgotten id).
  virtual absl::Status Close(const tpu_driver::CloseRequest& request) = 0;
  virtual absl::Status Reset(const tpu_driver::ResetRequest& request) = 0;
  virtual absl::StatusOr<tpu_driver::QuerySystemInfoResponse> QuerySystemInfo(
      const tpu_driver::QuerySystemInfoRequest& request) = 0;

  // Receives responses, with transfer_from payloads beside them
  // (emulator/transfer_data.h; InlineTransferData makes plain messages).
  using ResponseCallback = std::function<void(const tpu_driver::StreamResponse&,
                                              const TransferData&)>;

  // Starts a stream. `on_response` runs on worker threads, never concurrently
  // with itself for one stream, and never after the stream was destroyed; it
  // must not block for long (it is the transport's write). Responses may
  // batch many entries. REQUIRES: the stream is destroyed before the worker.
  virtual std::unique_ptr<WorkerStream> OpenStream(
      ResponseCallback on_response) = 0;

  // Who runs and waits for whom, now, with up to `history` of each core's
  // most recent collectives (the control service's GetWaitReport); in a pod
  // slice with peers, the whole slice.
  virtual tpu_emulator::WaitReport WaitReport(int history) const = 0;

  // Where this worker's cores meet (the peer service joins it).
  virtual CollectiveHub& collective_hub() = 0;
  // The fault rules this worker applies; rules added or cleared take effect
  // for operations that start afterwards.
  virtual faults::FaultPlan& fault_plan() const = 0;
  // What the emulated TPU did (emulator/trace/). StartTrace: records a
  // timeline until StopTrace, which returns it as Chrome trace-event JSON;
  // FAILED_PRECONDITION when already recording / not recording.
  virtual absl::Status StartTrace(bool instructions) = 0;
  virtual absl::StatusOr<std::string> StopTrace() = 0;
  // Per core and per client usage and activity now.
  virtual tpu_emulator::WorkerStats Stats() const = 0;
  // Per-instruction profiles of programs named `program` (all if empty);
  // empty unless WorkerOptions::profile_programs.
  virtual tpu_emulator::GetProfileResponse Profile(
      const std::string& program) const = 0;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_WORKER_H_
