#ifndef SOFTWARE_TPU_EMULATOR_TOPOLOGY_H_
#define SOFTWARE_TPU_EMULATOR_TOPOLOGY_H_

// Which cores a worker serves and how they are numbered.
//
// A lone worker (pod_hosts = 1) serves cores 0..chips*cores_per_chip-1. In
// pod-slice mode the worker is host `host_id` of `pod_hosts` hosts with
// `chips` chips each; cores are numbered across the slice (host-major, then
// chip, then core on chip) and this worker serves only its own host's range,
// under their slice-wide ids, as a Cloud TPU pod host does.
//
// Chips sit on a grid: a host's chips form a block 2 wide (1 wide for an odd
// chip count), e.g. 2x2x1 for the 4 chips of a v3-8; hosts of a slice are
// placed side by side along x.
//
// Thread safety: value type.

#include <cstdint>

#include "absl/status/statusor.h"
#include "proto/tpu_driver.pb.h"

namespace tpu::emulator {

struct WorkerOptions;

class Topology {
 public:
  // INVALID_ARGUMENT unless chips, cores_per_chip, pod_hosts >= 1,
  // 0 <= host_id < pod_hosts, and the slice has at most 65536 cores.
  static absl::StatusOr<Topology> Create(int chips, int cores_per_chip,
                                         int pod_hosts, int host_id);

  int chips_per_host() const { return chips_; }
  int cores_per_chip() const { return cores_per_chip_; }
  int pod_hosts() const { return pod_hosts_; }
  int host_id() const { return host_id_; }

  int local_core_count() const { return chips_ * cores_per_chip_; }
  int total_chip_count() const { return chips_ * pod_hosts_; }
  int total_core_count() const { return local_core_count() * pod_hosts_; }

  // The id of local core `index` (0 <= index < local_core_count()).
  int CoreId(int index) const { return host_id_ * local_core_count() + index; }
  // The local index of core `core_id`, or -1 if this worker does not serve it.
  int LocalIndex(int64_t core_id) const;
  // The host serving global chip `chip` (0 <= chip < total_chip_count()).
  int HostOfChip(int chip) const { return chip / chips_; }
  tpu_driver::ChipCoordinate ChipCoordinate(int chip) const;

  // "cores 8..15 (host 1 of 2)" or "cores 0..7".
  std::string DescribeLocalCores() const;

 private:
  Topology(int chips, int cores_per_chip, int pod_hosts, int host_id)
      : chips_(chips),
        cores_per_chip_(cores_per_chip),
        pod_hosts_(pod_hosts),
        host_id_(host_id) {}

  int chips_;
  int cores_per_chip_;
  int pod_hosts_;
  int host_id_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_TOPOLOGY_H_
