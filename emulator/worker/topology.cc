#include "emulator/worker/topology.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tpu::emulator {

absl::StatusOr<Topology> Topology::Create(int chips, int cores_per_chip,
                                          int pod_hosts, int host_id) {
  if (chips < 1 || cores_per_chip < 1 || pod_hosts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Invalid topology: chips (", chips, "), cores_per_chip (",
                     cores_per_chip, ") and pod_hosts (", pod_hosts,
                     ") must all be at least 1."));
  }
  if (host_id < 0 || host_id >= pod_hosts) {
    return absl::InvalidArgumentError(
        absl::StrCat("Invalid topology: host_id ", host_id,
                     " is outside [0, pod_hosts = ", pod_hosts, ")."));
  }
  const int64_t total =
      int64_t{chips} * int64_t{cores_per_chip} * int64_t{pod_hosts};
  if (total > 65536) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Invalid topology: ", total, " cores in the slice; at most 65536."));
  }
  return Topology(chips, cores_per_chip, pod_hosts, host_id);
}

int Topology::LocalIndex(int64_t core_id) const {
  const int64_t first = CoreId(0);
  if (core_id < first || core_id >= first + local_core_count()) return -1;
  return static_cast<int>(core_id - first);
}

tpu_driver::ChipCoordinate Topology::ChipCoordinate(int chip) const {
  const int width = chips_ % 2 == 0 ? 2 : 1;
  const int host = HostOfChip(chip);
  const int on_host = chip % chips_;
  tpu_driver::ChipCoordinate c;
  c.set_x(host * width + on_host % width);
  c.set_y(on_host / width);
  c.set_z(0);
  return c;
}

std::string Topology::DescribeLocalCores() const {
  std::string s =
      absl::StrCat("cores ", CoreId(0), "..", CoreId(local_core_count() - 1));
  if (pod_hosts_ > 1) {
    absl::StrAppend(&s, " (host ", host_id_, " of ", pod_hosts_, ")");
  }
  return s;
}

}  // namespace tpu::emulator
