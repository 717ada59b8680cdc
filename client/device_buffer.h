#ifndef SOFTWARE_TPU_CLIENT_DEVICE_BUFFER_H_
#define SOFTWARE_TPU_CLIENT_DEVICE_BUFFER_H_

// One driver allocation shared by every TpuBuffer that refers to it (aliases
// made by CopyToDevice to the same device, the elements of a destructured
// tuple). The allocation is released, asynchronously, when the last owner
// drops it.
//
// Ordering. `definition_events` are the operations that write the contents
// (a host-to-device transfer, a device-to-device copy); anything that reads
// the buffer waits for them. Reads that may still be in flight when the last
// owner lets go (device-to-host transfers, copies out) are recorded with
// AddReadEvent so the deallocation waits for them too.
//
// Tuples. A tuple allocation keeps its children alive: the driver requires
// children to outlive their tuple, and a tuple's definition events include
// every child's.
//
// Thread safety: safe for concurrent use.

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "driver/tpu_driver.h"

namespace tpu::client {

class TpuClient;

class DeviceBuffer {
 public:
  // Takes ownership of `handle`. `client` keeps the driver alive until the
  // deallocation is scheduled.
  // REQUIRES: handle != nullptr; children are on `device_id` too.
  DeviceBuffer(std::shared_ptr<TpuClient> client, int device_id,
               std::unique_ptr<driver::BufferHandle> handle, bool is_tuple,
               std::vector<std::shared_ptr<driver::Event>> definition_events,
               std::vector<std::shared_ptr<DeviceBuffer>> children);
  // Schedules Deallocate after the definition and recorded read events that
  // are still in flight (waiting on one that already failed would fail the
  // deallocation too), then releases the children: after the tuple, as the
  // driver requires.
  ~DeviceBuffer();

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  int device_id() const { return device_id_; }
  // Owned by this object; valid while it lives.
  driver::BufferHandle* handle() const { return handle_.get(); }
  bool is_tuple() const { return is_tuple_; }
  const std::vector<std::shared_ptr<DeviceBuffer>>& children() const {
    return children_;
  }

  std::vector<std::shared_ptr<driver::Event>> definition_events() const;

  // Makes the deallocation wait for `event` (a read of this buffer). Events
  // already known to be complete are pruned, so the list stays short.
  void AddReadEvent(std::shared_ptr<driver::Event> event);

 private:
  // Constant after construction.
  const std::shared_ptr<TpuClient> client_;
  const int device_id_;
  std::unique_ptr<driver::BufferHandle> handle_;
  const bool is_tuple_;
  const std::vector<std::shared_ptr<driver::Event>> definition_events_;
  const std::vector<std::shared_ptr<DeviceBuffer>> children_;

  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<driver::Event>> read_events_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tpu::client

#endif  // SOFTWARE_TPU_CLIENT_DEVICE_BUFFER_H_
