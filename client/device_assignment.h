#ifndef SOFTWARE_TPU_CLIENT_DEVICE_ASSIGNMENT_H_
#define SOFTWARE_TPU_CLIENT_DEVICE_ASSIGNMENT_H_

// Which device runs each (replica, computation) of a replicated program: the
// table XLA calls a DeviceAssignment, sent with every ExecuteProgram.
//
// Thread safety: a value type; const methods are safe concurrently.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/xla_data.pb.h"

namespace tpu::client {

class DeviceAssignment {
 public:
  // A replica_count x computation_count table with every entry -1 (unset).
  // REQUIRES: replica_count >= 0 and computation_count >= 0.
  DeviceAssignment(int replica_count, int computation_count);

  int replica_count() const { return replica_count_; }
  int computation_count() const { return computation_count_; }

  // The device id of (replica, computation).
  // REQUIRES: 0 <= replica < replica_count, 0 <= computation <
  // computation_count.
  int operator()(int replica, int computation) const;
  int& operator()(int replica, int computation);

  // XLA's serialization: computation_devices[c].replica_device_ids[r].
  xla::DeviceAssignmentProto ToProto() const;
  // INVALID_ARGUMENT if the table's dimensions disagree with the counts.
  static absl::StatusOr<DeviceAssignment> FromProto(
      const xla::DeviceAssignmentProto& proto);

  // "(replica 0: 0) (replica 1: 1)": per replica, the devices of each
  // computation.
  std::string ToString() const;

  bool operator==(const DeviceAssignment& other) const;

 private:
  int replica_count_;
  int computation_count_;
  std::vector<int> devices_;  // row-major: [replica][computation]
};

}  // namespace tpu::client

#endif  // SOFTWARE_TPU_CLIENT_DEVICE_ASSIGNMENT_H_
