#include "client/device_buffer.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "client/tpu_client.h"

namespace tpu::client {
namespace {

bool IsComplete(driver::Event* event) {
  return event->AwaitWithTimeout(absl::ZeroDuration()).has_value();
}

}  // namespace

DeviceBuffer::DeviceBuffer(
    std::shared_ptr<TpuClient> client, int device_id,
    std::unique_ptr<driver::BufferHandle> handle, bool is_tuple,
    std::vector<std::shared_ptr<driver::Event>> definition_events,
    std::vector<std::shared_ptr<DeviceBuffer>> children)
    : client_(std::move(client)),
      device_id_(device_id),
      handle_(std::move(handle)),
      is_tuple_(is_tuple),
      definition_events_(std::move(definition_events)),
      children_(std::move(children)) {
  if (handle_ == nullptr) std::abort();
}

DeviceBuffer::~DeviceBuffer() {
  std::vector<driver::Event*> wait_for;
  for (const auto& e : definition_events_) {
    if (!IsComplete(e.get())) wait_for.push_back(e.get());
  }
  {
    absl::MutexLock lock(&mu_);
    for (const auto& e : read_events_) {
      if (!IsComplete(e.get())) wait_for.push_back(e.get());
    }
  }
  // The returned event is dropped: nobody waits for a deallocation, and a
  // failure (e.g. the worker is gone) leaves nothing to clean up here.
  client_->driver()->Deallocate(std::move(handle_), wait_for);
}

std::vector<std::shared_ptr<driver::Event>> DeviceBuffer::definition_events()
    const {
  return definition_events_;
}

void DeviceBuffer::AddReadEvent(std::shared_ptr<driver::Event> event) {
  absl::MutexLock lock(&mu_);
  read_events_.erase(
      std::remove_if(read_events_.begin(), read_events_.end(),
                     [](const std::shared_ptr<driver::Event>& e) {
                       return IsComplete(e.get());
                     }),
      read_events_.end());
  read_events_.push_back(std::move(event));
}

}  // namespace tpu::client
