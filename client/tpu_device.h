#ifndef SOFTWARE_TPU_CLIENT_TPU_DEVICE_H_
#define SOFTWARE_TPU_CLIENT_TPU_DEVICE_H_

// One TPU core as the client sees it: its global id (the core id the driver
// addresses), the host that serves it, and where it sits in the topology.
//
// Thread safety: immutable after construction; safe for concurrent use.

#include <array>
#include <string>

#include "absl/strings/string_view.h"

namespace tpu::client {

class TpuDevice {
 public:
  TpuDevice(int id, int host_id, const std::array<int, 3>& coords,
            int core_on_chip)
      : id_(id),
        host_id_(host_id),
        coords_(coords),
        core_on_chip_(core_on_chip) {}

  TpuDevice(const TpuDevice&) = delete;
  TpuDevice& operator=(const TpuDevice&) = delete;

  // The core id: what device assignments and the driver call this core.
  int id() const { return id_; }
  // The host (worker) serving this core; XLA calls it the process index.
  int host_id() const { return host_id_; }
  // The chip's (x, y, z) coordinates in the slice.
  const std::array<int, 3>& coords() const { return coords_; }
  // Index of this core among the cores of its chip.
  int core_on_chip() const { return core_on_chip_; }

  absl::string_view device_kind() const { return "Cloud TPU"; }

  // Terse: "TPU_3".
  std::string ToString() const;
  // Verbose, as the reference client prints it: "TPU_3(host=0,(1,0,0,1))".
  std::string DebugString() const;

 private:
  const int id_;
  const int host_id_;
  const std::array<int, 3> coords_;
  const int core_on_chip_;
};

}  // namespace tpu::client

#endif  // SOFTWARE_TPU_CLIENT_TPU_DEVICE_H_
