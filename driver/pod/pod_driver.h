#ifndef SOFTWARE_TPU_DRIVER_POD_POD_DRIVER_H_
#define SOFTWARE_TPU_DRIVER_POD_POD_DRIVER_H_

// The grpc+pod:// driver: several workers presented as one host holding all
// their cores ("grpc+pod://host1:port1,host2:port2,...").
//
// It opens one driver per worker (an entry without a scheme gets "grpc://";
// an entry with one, such as "local://?chips=2", is opened as it is) and
// routes every operation to the worker serving its core, in that worker's
// core numbering (see pod_topology.h for the merged SystemInfo).
//
// Behaviour beyond the TpuDriver contract:
//  - Its own event layer (pod_scheduler.h): an operation is issued to its
//    worker once all its dependencies completed; one whose dependency failed
//    fails, without running, with a status that names the dependency.
//  - A copy between workers goes through host memory (one transfer out, one
//    in), freed once both finished, on every path.
//  - CompileProgram compiles on every worker; the handle is ready when all
//    are. Its status is the first worker error other than a lost worker: a
//    worker that is gone only makes loads on its own cores fail.
//  - A worker whose operation failed UNAVAILABLE is taken as gone: what is
//    routed to it afterwards fails at once with UNAVAILABLE naming it, while
//    the other workers keep working. Worker errors carry the worker's name.
//  - Deallocate and UnloadProgram consume their handle, so even when a
//    dependency failed (and the operation reports that failure) the worker
//    resource is still released once every dependency has completed.
//  - Destruction cancels operations that have not started, waits (bounded by
//    PodDriverOptions::shutdown_timeout) for those in flight, releases every
//    worker resource still held (buffers, loaded and compiled programs) and
//    closes the workers. Events given out stay valid and complete.
//
// Thread safety: safe for concurrent use (the destructor excepted).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "driver/pod/pod_handles.h"
#include "driver/pod/pod_scheduler.h"
#include "driver/pod/pod_topology.h"
#include "driver/tpu_driver.h"
#include "proto/tpu_driver.pb.h"

namespace tpu::driver {

inline constexpr char kPodDriverPrefix[] = "grpc+pod://";

using WorkerDriverFactory =
    std::function<absl::StatusOr<std::unique_ptr<TpuDriver>>(
        const tpu_driver::TpuDriverConfig& config)>;

struct PodDriverOptions {
  // Opens one worker's driver; config.worker() is the worker address with
  // its scheme. Null: DriverRegistry::Open. Tests pass fake drivers here.
  WorkerDriverFactory open_worker;
  // Destruction waits at most this long for operations in flight, and as
  // long again for the release of worker resources.
  absl::Duration shutdown_timeout = absl::Seconds(10);
};

// "grpc+pod://a:1,local://?chips=2" -> {"grpc://a:1", "local://?chips=2"}.
// INVALID_ARGUMENT for a wrong prefix, no workers or an empty entry.
absl::StatusOr<std::vector<std::string>> ParsePodAddress(
    absl::string_view address);

class PodDriver : public TpuDriver {
 public:
  // Opens every worker of config.worker() (a grpc+pod:// address) with the
  // rest of `config`, queries their SystemInfo and merges it. Fails (naming
  // the worker) if any worker cannot be opened or queried, or if their
  // topologies cannot be merged.
  static absl::StatusOr<std::unique_ptr<PodDriver>> Open(
      const tpu_driver::TpuDriverConfig& config, PodDriverOptions options = {});

  ~PodDriver() override;

  // The merged topology with live HBM and CPU figures (queried from every
  // worker; a worker that is gone keeps its last known figures).
  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override;
  // Each worker's report in turn (a worker of a slice started with
  // --pod_addresses reports the whole slice).
  absl::StatusOr<std::string> DescribeWaits() override;
  // Resets every worker (all of them, even if one fails) and returns the
  // first error. The driver is unusable afterwards.
  absl::Status Reset() override;

  std::unique_ptr<BufferHandle> Allocate(
      int32_t core_id, tpu_driver::MemoryRegion region, int64_t num_bytes,
      absl::Span<Event* const> wait_for) override;
  std::unique_ptr<BufferHandle> Allocate(
      int32_t core_id, tpu_driver::MemoryRegion region,
      const xla::ShapeProto& shape, absl::Span<Event* const> wait_for) override;
  std::unique_ptr<BufferHandle> AllocateTuple(
      int32_t core_id, tpu_driver::MemoryRegion region,
      absl::Span<BufferHandle* const> children,
      absl::Span<Event* const> wait_for) override;
  std::shared_ptr<Event> Deallocate(std::unique_ptr<BufferHandle> handle,
                                    absl::Span<Event* const> wait_for) override;
  std::shared_ptr<Event> TransferToDevice(
      const void* src, BufferHandle* dst,
      absl::Span<Event* const> wait_for) override;
  std::shared_ptr<Event> TransferFromDevice(
      const BufferHandle* src, void* dst,
      absl::Span<Event* const> wait_for) override;
  std::shared_ptr<Event> TransferFromDeviceToDevice(
      const BufferHandle* src, BufferHandle* dst,
      absl::Span<Event* const> wait_for) override;
  std::unique_ptr<CompiledProgramHandle> CompileProgram(
      const xla::HloProto& source, int32_t num_replicas,
      absl::Span<Event* const> wait_for) override;
  std::unique_ptr<LoadedProgramHandle> LoadProgram(
      int32_t core_id, const CompiledProgramHandle* handle,
      absl::Span<Event* const> wait_for) override;
  std::shared_ptr<Event> UnloadProgram(
      std::unique_ptr<LoadedProgramHandle> handle,
      absl::Span<Event* const> wait_for) override;
  std::shared_ptr<Event> ExecuteProgram(
      LoadedProgramHandle* program, absl::Span<BufferHandle* const> inputs,
      absl::Span<BufferHandle* const> outputs,
      const xla::DeviceAssignmentProto& device_assignment,
      absl::Span<Event* const> wait_for) override;

  const PodTopology& topology() const { return topology_; }

  // Test-only views of internal state.
  int64_t LiveOpsForTesting() { return scheduler_.live_ops(); }
  // Host bytes held by copies between workers still in flight.
  int64_t BounceBytesForTesting() const { return bounce_bytes_->load(); }
  // Worker buffers and loaded programs the driver still holds.
  int64_t WorkerResourcesForTesting();

 private:
  struct Buffer {
    int worker;
    bool is_tuple;
    std::unique_ptr<BufferHandle> handle;
  };
  struct Loaded {
    int worker;
    std::unique_ptr<LoadedProgramHandle> handle;
  };

  PodDriver(PodDriverOptions options, std::vector<std::string> names,
            std::vector<std::unique_ptr<TpuDriver>> workers,
            PodTopology topology);

  // Up-front checks; each returns INVALID_ARGUMENT describing the misuse.
  absl::Status CheckCore(int32_t core_id) const;
  absl::StatusOr<const PodBufferHandle*> AsPodBuffer(const BufferHandle* handle,
                                                     const char* what) const;
  // `verb` says what the caller wanted to do ("unload", "execute").
  absl::StatusOr<PodLoadedProgramHandle*> AsPodLoaded(
      LoadedProgramHandle* handle, const char* verb) const;
  // The pod operations for `wait_for` (foreign events are wrapped).
  absl::StatusOr<std::vector<std::shared_ptr<PodOp>>> Dependencies(
      absl::Span<Event* const> wait_for);

  std::unique_ptr<BufferHandle> FailedBuffer(const char* kind,
                                             absl::Status status);
  std::shared_ptr<Event> FailedEvent(const char* kind, absl::Status status);
  std::shared_ptr<Event> MakeEvent(std::shared_ptr<PodOp> op);

  // The worker serving pod core `core_id`; -1 for a buffer or program whose
  // operation failed up front (it has no core).
  int WorkerOf(int32_t core_id) const;
  // Checks that every one of `buffers` is a buffer of this driver on
  // `worker`, and adds their operations to `deps` and their ids to `ids`.
  // `what` names the list ("Input", "Tuple child": the message says "Input
  // 2 (buffer 7) is on core ..."); `elsewhere` ends the message for one on
  // another worker.
  absl::Status CollectBuffers(absl::Span<BufferHandle* const> buffers,
                              const char* what, int worker,
                              absl::string_view elsewhere,
                              std::vector<std::shared_ptr<PodOp>>* deps,
                              std::vector<int64_t>* ids);

  // What a forwarded operation names on its worker, as pod ids; they are
  // resolved to the worker's handles just before it is issued.
  struct WorkerCall {
    int worker = 0;
    int64_t program = -1;  // A loaded program, or -1 for none.
    std::vector<int64_t> buffers;
  };
  // Issues the worker call, with mu_ held, given the op's id and the
  // resolved handles (program null if the call names none). Returns the
  // worker's event, or an error the operation fails with as it is.
  using IssueFn = std::function<absl::StatusOr<std::shared_ptr<Event>>(
      int64_t op_id, TpuDriver* worker, LoadedProgramHandle* program,
      absl::Span<BufferHandle* const> buffers)>;
  // The one way an operation reaches a worker: schedules `kind` after
  // `deps`; once they all succeeded it fails with WorkerUnusable if the
  // worker is gone, with "Handle N does not exist." if a handle was released
  // meanwhile, else issues and completes with the worker event's status
  // (through FromWorker).
  std::shared_ptr<PodOp> Forward(const char* kind,
                                 std::vector<std::shared_ptr<PodOp>> deps,
                                 WorkerCall call, IssueFn issue);
  // Forward's lookup and call, with mu_ held.
  absl::StatusOr<std::shared_ptr<Event>> ResolveAndIssue(int64_t op_id,
                                                         const WorkerCall& call,
                                                         const IssueFn& issue)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forwards `kind` on the worker of `buffer` (checked by the caller) after
  // `wait_for` and the buffer's own operation; `issue` gets the worker's
  // handle for it.
  std::shared_ptr<Event> ForwardOnBuffer(
      const char* kind, const PodBufferHandle& buffer,
      absl::Span<Event* const> wait_for,
      std::function<std::shared_ptr<Event>(TpuDriver*, BufferHandle*)> issue);

  // Schedules an allocation on `core_id` whose worker call names the
  // buffers `children` (pod ids; none but for tuples): `allocate` runs on
  // the core's worker with mu_ held and returns the worker's handle.
  using AllocateFn = std::function<std::unique_ptr<BufferHandle>(
      TpuDriver* worker, int32_t worker_core,
      absl::Span<BufferHandle* const> children)>;
  std::unique_ptr<BufferHandle> ScheduleAllocation(
      const char* kind, int32_t core_id, int64_t bytes,
      std::optional<xla::ShapeProto> shape, bool is_tuple,
      std::vector<std::shared_ptr<PodOp>> deps, std::vector<int64_t> children,
      AllocateFn allocate);

  // Schedules, after `wait_for` and `handle_op`, the release of the worker
  // resource that `(this->*table)[handle_op->id()]` holds (a Buffer or a
  // Loaded): `release` hands it back to its worker. Deallocate and
  // UnloadProgram consume their handle, so the resource is released even
  // when a dependency failed (the operation still reports that failure).
  template <typename Entry, typename Handle>
  std::shared_ptr<Event> ScheduleRelease(
      const char* kind, absl::Span<Event* const> wait_for,
      const std::shared_ptr<PodOp>& handle_op,
      absl::flat_hash_map<int64_t, Entry> PodDriver::*table,
      std::shared_ptr<Event> (TpuDriver::*release)(std::unique_ptr<Handle>,
                                                   absl::Span<Event* const>));

  // If worker `w` is gone or the driver was reset, why (else OK).
  absl::Status WorkerUnusable(int w);
  // A worker's status as the pod reports it: prefixed with the worker's
  // name; an UNAVAILABLE one marks the worker as gone.
  absl::Status FromWorker(int w, const absl::Status& status);
  // Completes `done` with the worker event's status, through FromWorker.
  void CompleteWith(int w, const std::shared_ptr<Event>& event,
                    PodScheduler::Done done);

  // Releases every worker resource still held; waits until `deadline`.
  void ReleaseWorkerResources(absl::Time deadline);

  // Constant after construction.
  const PodDriverOptions options_;
  const std::vector<std::string> names_;  // "worker 1 (grpc://...)"
  // Emptied by the destructor, after the releases.
  std::vector<std::unique_ptr<TpuDriver>> workers_;
  const PodTopology topology_;

  // Shared with the host buffers' deleters, which may run on any thread.
  const std::shared_ptr<std::atomic<int64_t>> bounce_bytes_;

  absl::Mutex lost_mu_;
  // Why worker i is unusable (OK while it is fine).
  std::vector<absl::Status> lost_ ABSL_GUARDED_BY(lost_mu_);
  bool reset_ ABSL_GUARDED_BY(lost_mu_) = false;

  // Held while looking up worker handles and issuing worker calls with
  // them, so that a concurrent release cannot free a handle in use. Never
  // taken by anything a worker call can run inline (completions only post
  // to the dispatcher and take lost_mu_).
  absl::Mutex mu_;
  absl::flat_hash_map<int64_t, Buffer> buffers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, Loaded> loaded_ ABSL_GUARDED_BY(mu_);
  std::vector<std::weak_ptr<PodCompiledProgram>> compiled_ ABSL_GUARDED_BY(mu_);

  // Last: destroyed first, after the destructor drained it.
  PodScheduler scheduler_;
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_POD_POD_DRIVER_H_
