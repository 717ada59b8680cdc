#ifndef SOFTWARE_TPU_DRIVER_POD_POD_TOPOLOGY_H_
#define SOFTWARE_TPU_DRIVER_POD_POD_TOPOLOGY_H_

// How the pod driver presents several workers as one host: the merged
// SystemInfo and, for each pod core id, the worker serving it and that
// worker's own id for the core.
//
// Two kinds of workers are understood:
//  - Lone workers, each reporting only its own cores (every core it lists in
//    tpu_chip is a local core). Every chip of every worker is kept, in worker
//    order: their coordinates may repeat, they are separate systems.
//  - Hosts of one pod slice (started with --pod_hosts/--host_id), each
//    reporting the whole slice and serving the chips whose host_id is its
//    own. Chips are deduplicated by coordinates and each one is served by the
//    worker whose SystemInfo.host_id equals the chip's host_id. The workers
//    then share core ids, and those are what they are sent.
// In both cases pod cores are numbered 0..N-1 in chip order, and the merged
// view is one host (host_count 1, host_id 0) whose local cores are all cores.
//
// Thread safety: plain functions and values.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/tpu_driver.pb.h"
#include "proto/xla_data.pb.h"

namespace tpu::driver {

struct PodCoreLocation {
  // Index of the worker (in the order of the pod address) serving the core.
  int worker = 0;
  // The core's id in that worker's numbering.
  int32_t worker_core_id = 0;
};

struct PodTopology {
  // What QuerySystemInfo returns.
  tpu_driver::SystemInfo system_info;
  // Indexed by pod core id.
  std::vector<PodCoreLocation> cores;
  // True when the workers are hosts of one pod slice (see above).
  bool slice = false;
  // Number of workers.
  int worker_count = 0;
};

// Merges what each worker reported. `names[i]` names worker i in messages.
// Errors (INVALID_ARGUMENT / FAILED_PRECONDITION, naming the workers): no
// workers, a worker without cores, workers of both kinds mixed, two workers
// claiming one host id, a slice chip whose host is not among the workers, a
// slice chip core that its host does not serve.
absl::StatusOr<PodTopology> MergeSystemInfo(
    absl::Span<const tpu_driver::SystemInfo> infos,
    absl::Span<const std::string> names);

// The device assignment to send to `worker` for a launch whose assignment is
// written in pod core ids. In a slice every worker knows every core by its
// slice id, so each pod id becomes that id. Lone workers only know their own
// cores: those become their worker ids, and the other workers' cores get ids
// past the worker's own (distinct, served by nobody) so that each replica is
// still found at its place and no foreign core is mistaken for a local one.
// INVALID_ARGUMENT if the assignment names a core the pod does not have.
absl::StatusOr<xla::DeviceAssignmentProto> TranslateDeviceAssignment(
    const PodTopology& topology, int worker,
    const xla::DeviceAssignmentProto& pod_assignment);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_POD_POD_TOPOLOGY_H_
