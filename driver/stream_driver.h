#ifndef SOFTWARE_TPU_DRIVER_STREAM_DRIVER_H_
#define SOFTWARE_TPU_DRIVER_STREAM_DRIVER_H_

// The tpu_driver protocol client, written once over a Transport: grpc:// and
// local:// are this class over different transports.
//
// Behaviour (that of the reference client, grpc_tpu_driver.cc):
//  - Open assigns a client id; operation ids count up from 1 and go on the
//    wire as `client_id << 44 | operation_id`.
//  - One stream per core plus a host stream. An operation goes on the stream
//    of the core it concerns; compilation goes on the first core's stream.
//  - Named handles are dependencies: their creating operation's id is sent in
//    wait_for_id (the worker enforces the same). Dependencies already known to
//    have succeeded are left out; one known to have failed fails the new
//    operation up front, with a status naming it.
//  - Events of other drivers (or of this driver's operations still held back)
//    are waited for on the client: the operation is sent once they succeed.
//  - Handles of another driver instance, including one from before a server
//    restart that handed out the same client id, are INVALID_ARGUMENT.
//  - Destruction closes: streams drain (for at most `close_grace`), what is
//    still pending fails ABORTED, then the session is Closed.
//
// Thread safety: safe for concurrent use. Event callbacks run on transport
// threads (a stream's reader) or, for up-front failures, on the calling
// thread; they may issue new operations but must not destroy the driver.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "driver/completion_event.h"
#include "driver/stream_channel.h"
#include "driver/stream_handles.h"
#include "driver/tpu_driver.h"
#include "driver/transport.h"

namespace tpu::driver {

struct StreamDriverOptions {
  // How long Open waits for the worker to answer.
  absl::Duration open_timeout = absl::Seconds(30);
  // How long destruction lets streams finish what is in flight before it
  // cancels them (pending operations then fail ABORTED).
  absl::Duration close_grace = absl::Seconds(5);
};

class StreamDriver : public TpuDriver {
 public:
  // Opens a session on the worker behind `transport`, learns its cores and
  // starts the streams. Errors: those of Open (UNAVAILABLE naming the address
  // when the worker does not answer within options.open_timeout), of
  // QuerySystemInfo, or FAILED_PRECONDITION for a worker without cores.
  static absl::StatusOr<std::unique_ptr<StreamDriver>> Create(
      std::unique_ptr<Transport> transport, const StreamDriverOptions& options);

  ~StreamDriver() override;

  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override;
  absl::StatusOr<std::string> DescribeWaits() override;
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

  uint32_t client_id() const { return client_id_; }
  const std::string& address() const { return address_; }
  // The core ids this driver has streams for, ascending.
  const std::vector<int32_t>& core_ids() const { return core_ids_; }

 private:
  struct HeldOp;

  StreamDriver(std::unique_ptr<Transport> transport,
               const StreamDriverOptions& options, uint32_t client_id);
  absl::Status StartStreams();

  // The stream of `core_id`; null with *error set if there is none.
  StreamChannel* ChannelFor(int32_t core_id, absl::Status* error);
  // The stream of `core_id`, or any stream if there is none: for an
  // operation on a handle whose creation failed up front, which fails on
  // that dependency wherever it is sent.
  StreamChannel* ChannelOrAny(int32_t core_id);

  // Handle checks: INVALID_ARGUMENT for null, foreign or stale handles.
  // `what` names the handle in the messages ("source buffer").
  template <typename Ours, typename Handle>
  absl::StatusOr<const Ours*> CheckHandle(const Handle* handle,
                                          absl::string_view what);
  absl::StatusOr<const StreamBufferHandle*> CheckBuffer(
      const BufferHandle* handle, absl::string_view what);
  absl::StatusOr<const StreamLoadedProgramHandle*> CheckLoaded(
      const LoadedProgramHandle* handle);
  absl::StatusOr<const StreamCompiledProgramHandle*> CheckCompiled(
      const CompiledProgramHandle* handle);
  absl::Status CheckInfo(const StreamHandleInfo& info, absl::string_view what);
  // A transfer's buffer (the destination if `to_device`, else the source),
  // checked, and its host memory: INVALID_ARGUMENT if `host` is null and the
  // buffer holds any bytes.
  absl::StatusOr<const StreamBufferHandle*> CheckTransfer(
      const BufferHandle* handle, const void* host, bool to_device);

  // A new operation's event (and id).
  std::shared_ptr<CompletionEvent> NewEvent();

  // Sends `entry` on `channel` once its dependencies allow: `wait_for` and
  // `named` (the creating events of the handles it names). `op.event` is the
  // operation's event. Fails the event up front on a closed driver or a
  // failed dependency. Returns op.event.
  std::shared_ptr<CompletionEvent> Issue(
      StreamChannel* channel, OutgoingEntry&& entry, PendingOp op,
      absl::Span<Event* const> wait_for,
      absl::Span<const std::shared_ptr<CompletionEvent>> named);
  void Release(const std::shared_ptr<HeldOp>& held);

  std::unique_ptr<BufferHandle> FailedBuffer(absl::Status status);
  // Allocates `bytes` on `core_id`, of `shape` if given (else by size).
  std::unique_ptr<BufferHandle> IssueAllocation(
      int32_t core_id, tpu_driver::MemoryRegion region, int64_t bytes,
      std::optional<xla::ShapeProto> shape, absl::Span<Event* const> wait_for);

  // Stops every stream; pending operations fail with `code` and `reason`.
  void ShutdownChannels(bool graceful, absl::StatusCode code,
                        const std::string& reason);

  // Constant after construction.
  const std::unique_ptr<Transport> transport_;
  const StreamDriverOptions options_;
  const std::string address_;
  const uint32_t client_id_;
  const uint64_t serial_;
  std::vector<int32_t> core_ids_;
  absl::flat_hash_map<int32_t, std::unique_ptr<StreamChannel>> core_channels_;
  std::unique_ptr<StreamChannel> host_channel_;
  StreamChannel* compile_channel_ = nullptr;

  std::atomic<uint64_t> next_operation_id_{0};
  // closed_, readable without the lock: every operation checks it as it is
  // issued. An operation racing with Reset that misses it is refused by its
  // stream instead.
  std::atomic<bool> issuing_closed_{false};

  absl::Mutex mu_;
  // Reset or destroyed: every new operation fails up front.
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Operations waiting on the client for their dependencies.
  absl::flat_hash_set<std::shared_ptr<HeldOp>> held_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_STREAM_DRIVER_H_
