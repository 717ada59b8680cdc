#include "client/tpu_device.h"

#include "absl/strings/str_format.h"

namespace tpu::client {

std::string TpuDevice::ToString() const {
  return absl::StrFormat("TPU_%d", id_);
}

std::string TpuDevice::DebugString() const {
  return absl::StrFormat("TPU_%d(host=%d,(%d,%d,%d,%d))", id_, host_id_,
                         coords_[0], coords_[1], coords_[2], core_on_chip_);
}

}  // namespace tpu::client
