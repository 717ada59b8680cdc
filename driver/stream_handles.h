#ifndef SOFTWARE_TPU_DRIVER_STREAM_HANDLES_H_
#define SOFTWARE_TPU_DRIVER_STREAM_HANDLES_H_

// The handles a StreamDriver hands out. Each remembers the driver instance
// that created it (its serial) and the id of its creating operation, which is
// also its handle on the wire.
//
// Thread safety: immutable after construction except for what their events
// and the compile metadata sink synchronize themselves.

#include <cstdint>
#include <memory>
#include <optional>

#include "driver/completion_event.h"
#include "driver/tpu_driver.h"

namespace tpu::driver {

// What every StreamDriver handle carries.
struct StreamHandleInfo {
  // Serial of the creating driver (NewDriverSerial).
  uint64_t driver_serial = 0;
  // The creating operation; its id is the handle on the wire.
  std::shared_ptr<CompletionEvent> event;
  // The core it lives on; -1 for compiled programs (they live on the host).
  int32_t core_id = -1;

  uint64_t wire_id() const { return event->id().AsInt(); }
};

class StreamBufferHandle : public BufferHandle {
 public:
  StreamBufferHandle(StreamHandleInfo info, int64_t bytes,
                     std::optional<xla::ShapeProto> shape)
      : info_(std::move(info)), bytes_(bytes), shape_(std::move(shape)) {}

  std::shared_ptr<Event> OnReady() override { return info_.event; }
  int64_t size_in_bytes() override { return bytes_; }
  std::optional<xla::ShapeProto> shape() override { return shape_; }

  const StreamHandleInfo& info() const { return info_; }
  int64_t bytes() const { return bytes_; }

 private:
  const StreamHandleInfo info_;
  const int64_t bytes_;
  const std::optional<xla::ShapeProto> shape_;
};

class StreamCompiledProgramHandle : public CompiledProgramHandle {
 public:
  // `program_shape` is filled in by the compile response before the event
  // completes (the event's lock orders the write before any reader).
  StreamCompiledProgramHandle(
      StreamHandleInfo info,
      std::shared_ptr<xla::ProgramShapeProto> program_shape)
      : info_(std::move(info)), program_shape_(std::move(program_shape)) {}

  std::shared_ptr<Event> OnReady() override { return info_.event; }
  absl::StatusOr<xla::ProgramShapeProto> program_shape() override;

  const StreamHandleInfo& info() const { return info_; }

 private:
  const StreamHandleInfo info_;
  const std::shared_ptr<xla::ProgramShapeProto> program_shape_;
};

class StreamLoadedProgramHandle : public LoadedProgramHandle {
 public:
  explicit StreamLoadedProgramHandle(StreamHandleInfo info)
      : info_(std::move(info)) {}

  std::shared_ptr<Event> OnReady() override { return info_.event; }

  const StreamHandleInfo& info() const { return info_; }

 private:
  const StreamHandleInfo info_;
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_STREAM_HANDLES_H_
