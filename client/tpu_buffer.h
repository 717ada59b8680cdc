#ifndef SOFTWARE_TPU_CLIENT_TPU_BUFFER_H_
#define SOFTWARE_TPU_CLIENT_TPU_BUFFER_H_

// A value on one TPU device: an array, or a (possibly nested) tuple of
// arrays. Creation returns at once; the transfers and allocations it starts
// run asynchronously, and every later use waits for them.
//
// A TpuBuffer is valid until Delete; afterwards every operation on it fails
// with INVALID_ARGUMENT. Several TpuBuffers may share one device allocation
// (CopyToDevice to the same device, DestructureTuple); the memory is released
// when the last of them is deleted or destroyed.
//
// Element types: 64-bit types (s64, u64, f64, c128) are rejected with
// INVALID_ARGUMENT, as the reference client does, because the TPU driver API
// does not support them; convert to 32-bit first.
//
// Thread safety: safe for concurrent use.

#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "client/device_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_device.h"
#include "hlo/literal.h"
#include "hlo/shape.h"

namespace tpu::client {

// The reference client's guidance for 64-bit element types.
inline constexpr absl::string_view k64BitUnsupportedMessage =
    "64-bit data types are not yet supported on the TPU driver API. Convert "
    "inputs to float32/int32 before using.";

// INVALID_ARGUMENT with k64BitUnsupportedMessage for s64/u64/f64/c128 leaves,
// INVALID_ARGUMENT for tokens and other non-array leaves; OK otherwise.
absl::Status CheckBufferShape(const Shape& shape);

class TpuBuffer {
 public:
  // Copies `literal` (an array or nested tuples of arrays) to `device_id`.
  // The literal's bytes are shared, not copied, until the transfer is done;
  // the caller may drop or modify its Literal right away (copy on write).
  static absl::StatusOr<std::unique_ptr<TpuBuffer>> FromLiteral(
      const Literal& literal, std::shared_ptr<TpuClient> client, int device_id);

  // Copies host arrays to `device_id` straight from the caller's memory,
  // without a staging copy (a language binding lends its arrays this way).
  // `leaf_data[i]` points at the i-th array leaf of `shape` (ForEachLeaf
  // order): ByteSize() bytes, dense row-major. That memory must stay valid
  // and unchanged until `on_done_with_host_memory` runs, exactly once: after
  // the last transfer read it (on a driver thread), or on this thread before
  // returning when there is nothing to transfer or the call fails.
  // INVALID_ARGUMENT if leaf_data.size() is not the number of leaves.
  static absl::StatusOr<std::unique_ptr<TpuBuffer>> FromHostBuffers(
      const Shape& shape, absl::Span<const void* const> leaf_data,
      std::function<void()> on_done_with_host_memory,
      std::shared_ptr<TpuClient> client, int device_id);

  // Allocates an uninitialized buffer of `shape` on `device_id`; a tuple
  // shape allocates every element, recursively, and the tuple over them.
  static absl::StatusOr<std::unique_ptr<TpuBuffer>> AllocateBuffer(
      const Shape& shape, std::shared_ptr<TpuClient> client, int device_id);

  // A tuple whose elements are `elements` (shared, not copied). Uses of the
  // tuple wait for every element's contents.
  // REQUIRES: elements are valid and on `device_id`, else INVALID_ARGUMENT.
  static absl::StatusOr<std::unique_ptr<TpuBuffer>> MakeTuple(
      absl::Span<TpuBuffer* const> elements, std::shared_ptr<TpuClient> client,
      int device_id);

  // Use the factories above.
  TpuBuffer(Shape on_host_shape, std::shared_ptr<DeviceBuffer> device_buffer,
            std::shared_ptr<TpuClient> client,
            std::shared_ptr<TpuDevice> device);
  ~TpuBuffer();

  TpuBuffer(const TpuBuffer&) = delete;
  TpuBuffer& operator=(const TpuBuffer&) = delete;

  const Shape& on_host_shape() const { return on_host_shape_; }
  const std::shared_ptr<TpuDevice>& device() const { return device_; }
  const std::shared_ptr<TpuClient>& client() const { return client_; }

  // Starts copying the value to the host and returns without waiting. Only
  // the first call (until Delete) transfers; later calls and ToLiteral share
  // its result. INVALID_ARGUMENT on a deleted buffer.
  absl::Status CopyToHostAsync();

  // The value on the host; waits for the copy CopyToHostAsync started (and
  // starts it if needed). Returns the transfer's error if it failed.
  absl::StatusOr<Literal> ToLiteral();

  // Releases this reference to the device memory (asynchronously, after
  // pending writes and reads); the buffer becomes invalid. Idempotent.
  void Delete();
  bool IsDeleted() const;

  // One buffer per tuple element, sharing the elements' device memory.
  // INVALID_ARGUMENT for a non-tuple or deleted buffer.
  absl::StatusOr<std::vector<std::unique_ptr<TpuBuffer>>> DestructureTuple();

  // A buffer holding this value on `dst_device_id`: an alias of this one when
  // that is this buffer's device, else a device-to-device copy. UNIMPLEMENTED
  // for tuples; INVALID_ARGUMENT for a bad device id or a deleted buffer.
  absl::StatusOr<std::unique_ptr<TpuBuffer>> CopyToDevice(int dst_device_id);

  // Waits until the value is computed and on the device (allocation and every
  // write that defines it). Returns the first failure among them.
  absl::Status BlockHostUntilReady();

  // The device allocation, or nullptr once deleted.
  std::shared_ptr<DeviceBuffer> device_buffer() const;

 private:
  // The host copy started by CopyToHostAsync, shared with the transfers'
  // callbacks.
  struct HostValue;

  // Constant after construction.
  const std::shared_ptr<TpuClient> client_;
  const Shape on_host_shape_;
  const std::shared_ptr<TpuDevice> device_;

  mutable absl::Mutex mu_;
  std::shared_ptr<DeviceBuffer> device_buffer_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<HostValue> host_value_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tpu::client

#endif  // SOFTWARE_TPU_CLIENT_TPU_BUFFER_H_
