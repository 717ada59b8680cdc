#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_COLLECTIVE_GROUPS_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_COLLECTIVE_GROUPS_H_

// Who takes part in a collective: replica groups and XLA's group modes
// (xla/service/collective_ops_utils.h), read once at compile time and
// resolved to device ids for each launch.
//
// The mode follows from channel_id and use_global_device_ids:
//   no channel_id                        cross-replica: ids are replica ids,
//                                        within the caller's partition
//   channel_id, no use_global_device_ids cross-partition: ids are partition
//     attribute (all-to-all, permute,    ids, within the caller's replica
//     broadcast)
//   channel_id, use_global_device_ids=0  cross-replica-and-partition: ids
//                                        are replica ids, every partition
//   channel_id, use_global_device_ids=1  flattened: ids are global device
//                                        ids, replica * partitions + partition
// An empty group list means one group of every replica (or partition).
//
// Thread safety: value types.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/interpreter/collectives.h"
#include "hlo/hlo_module.h"

namespace tpu::emulator::interpreter {

enum class GroupMode {
  kCrossReplica,
  kCrossPartition,
  kCrossReplicaAndPartition,
  kFlattenedId,
};

const char* GroupModeName(GroupMode mode);

struct CollectiveGroups {
  GroupMode mode = GroupMode::kCrossReplica;
  // As written (iota lists expanded); empty means all.
  std::vector<std::vector<int64_t>> groups;
};

// Reads replica_groups (field 49) or collective_device_list (field 87,
// explicit or iota) and the group mode. INVALID_ARGUMENT, naming what is
// wrong, for an impossible combination or groups that do not fit
// `num_replicas` (repeated ids, ids out of range, groups that leave a replica
// out in the cross-replica modes).
absl::StatusOr<CollectiveGroups> ReadCollectiveGroups(
    const HloInstruction& instruction, int num_replicas);

// Every id an iota replica-group list stands for, as explicit groups.
absl::StatusOr<std::vector<std::vector<int64_t>>> ExpandIotaGroups(
    const xla::IotaReplicaGroupListProto& iota);

// The participants of the caller's group for one launch.
struct Participants {
  // Device ids in group order.
  std::vector<int> devices;
  // The group's ids as written (replica, partition or global ids, per mode),
  // parallel to `devices`; what source_target_pairs and reduction order use.
  std::vector<int64_t> ids;
  // The caller's index in `devices`.
  int rank = 0;
};

// INVALID_ARGUMENT if the caller is in no group or an id does not exist in
// `assignment`.
absl::StatusOr<Participants> ResolveParticipants(
    const CollectiveGroups& groups, const DeviceAssignment& assignment,
    int replica, int partition);

// Every replica (or partition, for cross-partition mode) of the caller's
// partition (replica): the participants of a collective-permute, whose
// source_target_pairs use these ids.
Participants AllInMode(GroupMode mode, const DeviceAssignment& assignment,
                       int replica, int partition);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_COLLECTIVE_GROUPS_H_
