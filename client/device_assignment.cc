#include "client/device_assignment.h"

#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tpu::client {

DeviceAssignment::DeviceAssignment(int replica_count, int computation_count)
    : replica_count_(replica_count),
      computation_count_(computation_count),
      devices_(static_cast<size_t>(replica_count) * computation_count, -1) {
  if (replica_count < 0 || computation_count < 0) std::abort();
}

int DeviceAssignment::operator()(int replica, int computation) const {
  return devices_[static_cast<size_t>(replica) * computation_count_ +
                  computation];
}

int& DeviceAssignment::operator()(int replica, int computation) {
  return devices_[static_cast<size_t>(replica) * computation_count_ +
                  computation];
}

xla::DeviceAssignmentProto DeviceAssignment::ToProto() const {
  xla::DeviceAssignmentProto proto;
  proto.set_replica_count(replica_count_);
  proto.set_computation_count(computation_count_);
  for (int c = 0; c < computation_count_; ++c) {
    auto* devices = proto.add_computation_devices();
    for (int r = 0; r < replica_count_; ++r) {
      devices->add_replica_device_ids((*this)(r, c));
    }
  }
  return proto;
}

absl::StatusOr<DeviceAssignment> DeviceAssignment::FromProto(
    const xla::DeviceAssignmentProto& proto) {
  if (proto.replica_count() < 0 || proto.computation_count() < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "device assignment has negative counts: %d replicas, %d computations",
        proto.replica_count(), proto.computation_count()));
  }
  if (proto.computation_devices_size() != proto.computation_count()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "device assignment lists %d computations but computation_count is %d",
        proto.computation_devices_size(), proto.computation_count()));
  }
  DeviceAssignment assignment(proto.replica_count(), proto.computation_count());
  for (int c = 0; c < proto.computation_count(); ++c) {
    const auto& ids = proto.computation_devices(c).replica_device_ids();
    if (ids.size() != proto.replica_count()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "device assignment computation %d lists %d replicas but "
          "replica_count is %d",
          c, ids.size(), proto.replica_count()));
    }
    for (int r = 0; r < proto.replica_count(); ++r) {
      assignment(r, c) = static_cast<int>(ids[r]);
    }
  }
  return assignment;
}

std::string DeviceAssignment::ToString() const {
  std::string out;
  for (int r = 0; r < replica_count_; ++r) {
    std::vector<int> row(devices_.begin() + r * computation_count_,
                         devices_.begin() + (r + 1) * computation_count_);
    absl::StrAppend(&out, r == 0 ? "" : " ", "(replica ", r, ": ",
                    absl::StrJoin(row, ","), ")");
  }
  return out;
}

bool DeviceAssignment::operator==(const DeviceAssignment& other) const {
  return replica_count_ == other.replica_count_ &&
         computation_count_ == other.computation_count_ &&
         devices_ == other.devices_;
}

}  // namespace tpu::client
