#ifndef SOFTWARE_TPU_EMULATOR_DEVICE_BUFFER_H_
#define SOFTWARE_TPU_EMULATOR_DEVICE_BUFFER_H_

// A buffer in emulated HBM: an array of bytes (optionally with the shape it
// was allocated with) or a tuple of other buffers, on one core.
//
// Contents are an immutable, shared AlignedBuffer: a write replaces the
// pointer, it never mutates bytes in place. So readers (a transfer, a running
// program) take a snapshot without copying, a device-to-device copy shares
// bytes, and a program result can alias an argument safely. A buffer that was
// never written reads as zeros and holds no host memory, which is what makes
// HBM capacity accounting rather than committed memory.
//
// Thread safety: safe for concurrent use.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "emulator/worker/hbm.h"
#include "hlo/aligned_buffer.h"
#include "hlo/literal.h"
#include "hlo/shape.h"

namespace tpu::emulator {

class DeviceBuffer {
 public:
  // An array buffer of `size` bytes holding `reservation`; `shape` is set when
  // it was allocated by shape (REQUIRES: shape->ByteSize() == size).
  static std::shared_ptr<DeviceBuffer> CreateArray(int core_id, int64_t size,
                                                   std::optional<Shape> shape,
                                                   HbmReservation reservation);
  // A tuple of `children` (shared: deallocating the tuple leaves them alone).
  static std::shared_ptr<DeviceBuffer> CreateTuple(
      int core_id, std::vector<std::shared_ptr<DeviceBuffer>> children);

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  bool is_tuple() const { return is_tuple_; }
  int core_id() const { return core_id_; }
  // Array bytes; for tuples 8 per child (XLA's pointer table).
  int64_t size() const { return size_; }
  // Arrays allocated by shape.
  const std::optional<Shape>& shape() const { return shape_; }
  const std::vector<std::shared_ptr<DeviceBuffer>>& children() const {
    return children_;
  }

  // Arrays: the current bytes; nullptr if never written (reads as zeros).
  std::shared_ptr<AlignedBuffer> contents() const;
  // Arrays: replaces the bytes. REQUIRES: bytes->size() == size().
  void set_contents(std::shared_ptr<AlignedBuffer> bytes);

  // Returns the HBM and marks the buffer dead; later users get an error.
  // Idempotent. Running users keep their snapshot of the bytes.
  void Release();
  bool released() const;

  // "f32[4] (16 bytes) on core 3", "tuple of 2 on core 0", "64 bytes on core
  // 1".
  std::string Describe() const;

 private:
  DeviceBuffer(bool is_tuple, int core_id, int64_t size,
               std::optional<Shape> shape,
               std::vector<std::shared_ptr<DeviceBuffer>> children,
               HbmReservation reservation);

  // Constant after construction.
  const bool is_tuple_;
  const int core_id_;
  const int64_t size_;
  const std::optional<Shape> shape_;
  const std::vector<std::shared_ptr<DeviceBuffer>> children_;

  mutable absl::Mutex mu_;
  std::shared_ptr<AlignedBuffer> contents_ ABSL_GUARDED_BY(mu_);
  HbmReservation reservation_ ABSL_GUARDED_BY(mu_);
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

// INVALID_ARGUMENT unless `buffer` can hold a value of `shape`: a tuple buffer
// needs a tuple shape with compatible children, an array buffer allocated by
// shape needs exactly that shape, one allocated by bytes needs the shape's
// byte size. `what` names the buffer in messages ("input 0 (handle 5)").
absl::Status CheckCompatible(const DeviceBuffer& buffer, const Shape& shape,
                             const std::string& what);

// Snapshots `buffer` as a literal of `shape` (never-written arrays read as
// zeros). FAILED_PRECONDITION if it or a child was released.
// REQUIRES: CheckCompatible(buffer, shape).ok().
absl::StatusOr<Literal> ReadLiteral(const DeviceBuffer& buffer,
                                    const Shape& shape,
                                    const std::string& what);

// Stores `value` into `buffer` (tuple leaves into tuple children), sharing its
// bytes. REQUIRES: CheckCompatible(buffer, value.shape()).ok().
void WriteLiteral(DeviceBuffer& buffer, const Literal& value);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_DEVICE_BUFFER_H_
