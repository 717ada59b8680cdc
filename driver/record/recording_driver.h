#ifndef SOFTWARE_TPU_DRIVER_RECORD_RECORDING_DRIVER_H_
#define SOFTWARE_TPU_DRIVER_RECORD_RECORDING_DRIVER_H_

// record://|file=PATH|worker=ADDRESS: a TpuDriver over any other driver that
// writes every operation to PATH in the format of TensorFlow's
// recording_tpu_driver.cc (proto/recording.h), and, beyond the reference,
// each operation's result status and every transfer_from's bytes to
// PATH.results. tools/tpu_replay replays both.
//
// Ids in the log are local to the recording, counted from 1 in call order,
// and an operation's entry is written when it is issued, so the log lists
// every dependency before its dependents. An event returned by this driver
// completes after its result is in the side file (written, and flushed, on
// the wrapped driver's completion thread: recording costs a file write per
// operation, and a copy of every transfer's bytes). QuerySystemInfo, Reset and
// DescribeWaits pass through unrecorded, as in the reference.
//
// Handles and events of another driver are passed through unrecorded (the
// wrapped driver rejects them as it would anyway).
//
// Thread safety: safe for concurrent use, like every TpuDriver.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "driver/tpu_driver.h"
#include "proto/recording.h"

namespace tpu::driver {

inline constexpr char kRecordDriverPrefix[] = "record://";

class RecordedEvent;

class RecordingDriver : public TpuDriver {
 public:
  // Records to `path` (created or truncated) and `path` + ".results".
  static absl::StatusOr<std::unique_ptr<RecordingDriver>> Create(
      std::unique_ptr<TpuDriver> inner, const std::string& path);
  // Opens config.worker() = "record://|file=PATH|worker=ADDRESS": ADDRESS
  // through the DriverRegistry with the rest of `config`. INVALID_ARGUMENT
  // if file or worker is missing.
  static absl::StatusOr<std::unique_ptr<RecordingDriver>> Open(
      const tpu_driver::TpuDriverConfig& config);

  ~RecordingDriver() override;

  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override;
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
  absl::StatusOr<std::string> DescribeWaits() override;

 private:
  RecordingDriver(std::unique_ptr<TpuDriver> inner,
                  std::shared_ptr<RecordWriter> log,
                  std::shared_ptr<RecordWriter> results)
      : log_(std::move(log)),
        results_(std::move(results)),
        inner_(std::move(inner)) {}

  // Completes `inner`'s outcome into a new event of recording id `id`, after
  // writing the result (with `size` bytes at `read_back` for a successful
  // transfer_from).
  std::shared_ptr<RecordedEvent> Track(int64_t id, std::shared_ptr<Event> inner,
                                       const void* read_back = nullptr,
                                       int64_t size = 0);
  // Fills `entry`'s wait_for_id, operation_id and thread_id, then logs it.
  void Save(tpu_driver::StreamRequest::Entry& entry,
            absl::Span<Event* const> wait_for, int64_t id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Declared before inner_: destroying the wrapped driver completes its
  // pending events, whose results are still written.
  const std::shared_ptr<RecordWriter> log_;
  const std::shared_ptr<RecordWriter> results_;
  const std::unique_ptr<TpuDriver> inner_;

  // Held while an operation gets its id, is issued and is logged, so the
  // log's order is the id order.
  absl::Mutex mu_;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_RECORD_RECORDING_DRIVER_H_
