#ifndef SOFTWARE_TPU_DRIVER_TPU_DRIVER_H_
#define SOFTWARE_TPU_DRIVER_TPU_DRIVER_H_

// The TpuDriver API: the asynchronous, event-based interface every backend
// (grpc://, grpc+pod://, local://) implements and TpuClient is written against.
//
// Ordering. Two operations may run in any order unless ordered by
//   1. an explicit `wait_for` event, or
//   2. a handle they name: an operation that takes a buffer or program handle
//      implicitly waits for that handle's creating operation.
//
// Ownership. Handles come back as unique_ptr and are consumed by their release
// call (Deallocate, UnloadProgram). Events are shared_ptr and need no release.
// Once a call taking raw pointers returns, the caller may drop those objects;
// the scheduled operation keeps what it needs.
//
// Errors. A failure found up front (bad argument, closed driver) is returned
// as an already-failed event, never by blocking or crashing. An operation whose
// dependency failed fails with a status naming that dependency.
//
// Thread safety: every class here is safe for concurrent use.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "proto/hlo.pb.h"
#include "proto/tpu_driver.pb.h"
#include "proto/xla_data.pb.h"

namespace tpu::driver {

// The deferred completion of a scheduled operation.
class Event {
 public:
  virtual ~Event() = default;

  // Blocks until the operation completes; returns its status.
  virtual absl::Status Await() = 0;

  // Returns nullopt if the operation has not completed within `timeout`.
  virtual std::optional<absl::Status> AwaitWithTimeout(
      absl::Duration timeout) = 0;

  // Runs `callback` with the status once the operation completes; runs it
  // right away, on the calling thread, if it already has. Otherwise it runs on
  // the driver's completion thread: keep it short and never block in it.
  virtual void AddCallback(std::function<void(absl::Status)> callback) = 0;
};

// A device memory allocation (an array buffer or a tuple of buffers).
class BufferHandle {
 public:
  virtual ~BufferHandle() = default;

  // Completes once the memory is allocated. Operations naming this handle
  // wait for it implicitly.
  virtual std::shared_ptr<Event> OnReady() = 0;

  // Bytes of the allocation (dense row-major for shaped buffers; for a tuple,
  // 8 bytes per child, as XLA sizes a tuple's pointer table).
  virtual int64_t size_in_bytes() = 0;

  // The shape the buffer was allocated with, if it was allocated by shape
  // (tuples report the tuple of their children's shapes).
  virtual std::optional<xla::ShapeProto> shape() = 0;
};

// A program compiled on the host.
class CompiledProgramHandle {
 public:
  virtual ~CompiledProgramHandle() = default;

  // Completes once compilation finished; LoadProgram waits for it implicitly.
  virtual std::shared_ptr<Event> OnReady() = 0;

  // The program's shape. Blocks until compilation completes; returns the
  // compile error if it failed.
  virtual absl::StatusOr<xla::ProgramShapeProto> program_shape() = 0;
};

// A compiled program loaded on one core.
class LoadedProgramHandle {
 public:
  virtual ~LoadedProgramHandle() = default;

  // Completes once the program is loaded; ExecuteProgram and UnloadProgram
  // wait for it implicitly.
  virtual std::shared_ptr<Event> OnReady() = 0;
};

// A set of TPU cores and the operations scheduled on them.
class TpuDriver {
 public:
  virtual ~TpuDriver() = default;

  // Topology, per-core HBM and host facts. Synchronous.
  virtual absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() = 0;

  // Synchronous. Drops all state on the worker(s): running programs end and
  // every allocation is released. The driver is unusable afterwards; destroy
  // it and open a new one.
  virtual absl::Status Reset() = 0;

  virtual std::unique_ptr<BufferHandle> Allocate(
      int32_t core_id, tpu_driver::MemoryRegion region, int64_t num_bytes,
      absl::Span<Event* const> wait_for) = 0;
  virtual std::unique_ptr<BufferHandle> Allocate(
      int32_t core_id, tpu_driver::MemoryRegion region,
      const xla::ShapeProto& shape, absl::Span<Event* const> wait_for) = 0;

  // A tuple of `children`, all on `core_id`. The tuple does not own its
  // children: they must outlive the tuple's last use (deallocate the tuple
  // first). No children means an empty tuple.
  virtual std::unique_ptr<BufferHandle> AllocateTuple(
      int32_t core_id, tpu_driver::MemoryRegion region,
      absl::Span<BufferHandle* const> children,
      absl::Span<Event* const> wait_for) = 0;

  virtual std::shared_ptr<Event> Deallocate(
      std::unique_ptr<BufferHandle> handle,
      absl::Span<Event* const> wait_for) = 0;

  // `src` holds dst->size_in_bytes() bytes in dense row-major order, each
  // element as wide as its type. The caller keeps `src` alive and unchanged
  // until the returned event completes.
  virtual std::shared_ptr<Event> TransferToDevice(
      const void* src, BufferHandle* dst,
      absl::Span<Event* const> wait_for) = 0;

  // Writes src->size_in_bytes() bytes to `dst`, which must stay valid until
  // the returned event completes.
  virtual std::shared_ptr<Event> TransferFromDevice(
      const BufferHandle* src, void* dst,
      absl::Span<Event* const> wait_for) = 0;

  virtual std::shared_ptr<Event> TransferFromDeviceToDevice(
      const BufferHandle* src, BufferHandle* dst,
      absl::Span<Event* const> wait_for) = 0;

  virtual std::unique_ptr<CompiledProgramHandle> CompileProgram(
      const xla::HloProto& source, int32_t num_replicas,
      absl::Span<Event* const> wait_for) = 0;
  virtual std::unique_ptr<LoadedProgramHandle> LoadProgram(
      int32_t core_id, const CompiledProgramHandle* handle,
      absl::Span<Event* const> wait_for) = 0;
  virtual std::shared_ptr<Event> UnloadProgram(
      std::unique_ptr<LoadedProgramHandle> handle,
      absl::Span<Event* const> wait_for) = 0;

  // `inputs` are the entry parameters (a tuple parameter is a tuple handle);
  // `outputs` is exactly one buffer: the result (a tuple handle whose children
  // receive the leaves when the result is a tuple).
  virtual std::shared_ptr<Event> ExecuteProgram(
      LoadedProgramHandle* program, absl::Span<BufferHandle* const> inputs,
      absl::Span<BufferHandle* const> outputs,
      const xla::DeviceAssignmentProto& device_assignment,
      absl::Span<Event* const> wait_for) = 0;

  // The worker's wait report for people: which cores run or wait in which
  // collective, for whom, and the wait-for cycles. UNIMPLEMENTED where the
  // target has no control service (a real TPU worker), which callers treat
  // as "no report".
  virtual absl::StatusOr<std::string> DescribeWaits() {
    return absl::UnimplementedError("this driver cannot describe waits");
  }
};

// Bytes of a buffer of `shape` in the driver's dense row-major layout; a tuple
// counts 8 bytes per element (its pointer table).
int64_t ComputeBytesFromShape(const xla::ShapeProto& shape);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_TPU_DRIVER_H_
