#include "emulator/interpreter/collective_groups.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "emulator/interpreter/kernel_util.h"

namespace tpu::emulator::interpreter {
namespace {

// Opcodes that carry use_global_device_ids; for the others XLA passes
// "unset", which with a channel_id means cross-partition.
bool HasGlobalDeviceIdsAttribute(const std::string& opcode) {
  return opcode == "all-reduce" || opcode == "all-reduce-start" ||
         opcode == "all-gather" || opcode == "all-gather-start" ||
         opcode == "reduce-scatter";
}

absl::StatusOr<GroupMode> ModeOf(const HloInstruction& instruction) {
  const xla::HloInstructionProto& proto = instruction.proto();
  const bool has_channel = proto.channel_id() > 0;
  std::optional<bool> global_ids;
  if (HasGlobalDeviceIdsAttribute(instruction.opcode())) {
    global_ids = proto.use_global_device_ids();
  }
  if (!has_channel) {
    if (global_ids.value_or(false)) {
      return Malformed(
          "use_global_device_ids=true needs a channel_id (XLA's group modes "
          "allow global device ids only across partitions)");
    }
    return GroupMode::kCrossReplica;
  }
  if (!global_ids.has_value()) return GroupMode::kCrossPartition;
  return *global_ids ? GroupMode::kFlattenedId
                     : GroupMode::kCrossReplicaAndPartition;
}

std::string GroupsToString(const std::vector<std::vector<int64_t>>& groups) {
  std::vector<std::string> parts;
  for (const auto& group : groups) {
    parts.push_back(absl::StrCat("{", absl::StrJoin(group, ","), "}"));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

// Replica ids must name existing replicas, once each, and (in the modes
// whose ids are replica ids) every replica must be in some group: a replica
// in no group would have no peers to meet, which XLA's verifier rejects.
absl::Status CheckReplicaIds(const CollectiveGroups& groups, int num_replicas) {
  absl::flat_hash_set<int64_t> seen;
  for (const auto& group : groups.groups) {
    if (group.empty()) return Malformed("a replica group is empty");
    for (int64_t id : group) {
      if (id < 0 || id >= num_replicas) {
        return Malformed(absl::StrCat(
            "replica_groups ", GroupsToString(groups.groups), " name replica ",
            id, " but the program is compiled for ", num_replicas,
            " replicas"));
      }
      if (!seen.insert(id).second) {
        return Malformed(absl::StrCat("replica_groups ",
                                      GroupsToString(groups.groups),
                                      " name replica ", id, " twice"));
      }
    }
  }
  if (static_cast<int>(seen.size()) != num_replicas) {
    return Malformed(absl::StrCat(
        "replica_groups ", GroupsToString(groups.groups), " cover ",
        seen.size(), " of the ", num_replicas,
        " replicas the program is compiled for; every replica must be in "
        "exactly one group"));
  }
  return absl::OkStatus();
}

// Ids in the other modes depend on the partition count, known at launch;
// only their shape is checked here.
absl::Status CheckOtherIds(const CollectiveGroups& groups) {
  if (groups.mode == GroupMode::kFlattenedId && groups.groups.empty()) {
    return Malformed(
        "flattened-id collectives (use_global_device_ids=true) need explicit "
        "replica_groups");
  }
  absl::flat_hash_set<int64_t> seen;
  for (const auto& group : groups.groups) {
    if (group.empty()) return Malformed("a replica group is empty");
    for (int64_t id : group) {
      if (id < 0 || !seen.insert(id).second) {
        return Malformed(absl::StrCat("replica_groups ",
                                      GroupsToString(groups.groups),
                                      " repeat or misname id ", id));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* GroupModeName(GroupMode mode) {
  switch (mode) {
    case GroupMode::kCrossReplica:
      return "cross-replica";
    case GroupMode::kCrossPartition:
      return "cross-partition";
    case GroupMode::kCrossReplicaAndPartition:
      return "cross-replica-and-partition";
    case GroupMode::kFlattenedId:
      return "flattened-id";
  }
  return "unknown";
}

absl::StatusOr<std::vector<std::vector<int64_t>>> ExpandIotaGroups(
    const xla::IotaReplicaGroupListProto& iota) {
  const int64_t num_groups = iota.num_replica_groups();
  const int64_t per_group = iota.num_devices_per_group();
  if (num_groups <= 0 || per_group <= 0 || num_groups * per_group > (1 << 24)) {
    return Malformed(absl::StrCat("iota replica group list [", num_groups, ",",
                                  per_group, "] has no valid size"));
  }
  std::vector<int64_t> dims(iota.iota_reshape_dims().begin(),
                            iota.iota_reshape_dims().end());
  if (dims.empty()) dims = {num_groups * per_group};
  int64_t total = 1;
  for (int64_t d : dims) {
    if (d <= 0) return Malformed("iota reshape dimensions must be positive");
    total *= d;
    if (total > num_groups * per_group) break;
  }
  if (total != num_groups * per_group) {
    return Malformed(absl::StrCat("iota reshape dimensions hold ", total,
                                  " ids but the groups need ",
                                  num_groups * per_group));
  }
  std::vector<int64_t> perm(iota.iota_transpose_perm().begin(),
                            iota.iota_transpose_perm().end());
  if (perm.empty()) {
    perm.resize(dims.size());
    std::iota(perm.begin(), perm.end(), 0);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted.size() != dims.size() || sorted[i] != static_cast<int64_t>(i)) {
      return Malformed(
          "iota transpose is not a permutation of the reshape "
          "dimensions");
    }
  }
  // Element (i0..in) of the transposed array is element (j) of the iota with
  // j_{perm[k]} = i_k.
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  std::vector<int64_t> out_dims(dims.size());
  for (size_t k = 0; k < perm.size(); ++k) out_dims[k] = dims[perm[k]];
  std::vector<int64_t> index(dims.size(), 0);
  std::vector<std::vector<int64_t>> groups(num_groups);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t value = 0;
    for (size_t k = 0; k < perm.size(); ++k)
      value += index[k] * strides[perm[k]];
    groups[flat / per_group].push_back(value);
    for (int k = static_cast<int>(index.size()) - 1; k >= 0; --k) {
      if (++index[k] < out_dims[k]) break;
      index[k] = 0;
    }
  }
  return groups;
}

absl::StatusOr<CollectiveGroups> ReadCollectiveGroups(
    const HloInstruction& instruction, int num_replicas) {
  const xla::HloInstructionProto& proto = instruction.proto();
  CollectiveGroups result;
  absl::StatusOr<GroupMode> mode = ModeOf(instruction);
  if (!mode.ok()) return mode.status();
  result.mode = *mode;
  auto read_explicit = [&](const auto& list) {
    for (const xla::ReplicaGroup& group : list) {
      result.groups.emplace_back(group.replica_ids().begin(),
                                 group.replica_ids().end());
    }
  };
  if (proto.replica_groups_size() > 0) {
    read_explicit(proto.replica_groups());
  } else if (proto.has_collective_device_list()) {
    const xla::CollectiveDeviceListProto& list = proto.collective_device_list();
    if (list.has_iota_replica_group_list()) {
      absl::StatusOr<std::vector<std::vector<int64_t>>> expanded =
          ExpandIotaGroups(list.iota_replica_group_list());
      if (!expanded.ok()) return expanded.status();
      result.groups = *std::move(expanded);
    } else {
      read_explicit(list.replica_groups());
    }
  }
  const bool replica_ids = result.mode == GroupMode::kCrossReplica ||
                           result.mode == GroupMode::kCrossReplicaAndPartition;
  if (replica_ids && !result.groups.empty()) {
    if (absl::Status s = CheckReplicaIds(result, num_replicas); !s.ok()) {
      return s;
    }
  } else if (!replica_ids) {
    if (absl::Status s = CheckOtherIds(result); !s.ok()) return s;
  }
  return result;
}

Participants AllInMode(GroupMode mode, const DeviceAssignment& assignment,
                       int replica, int partition) {
  Participants all;
  const bool across_partitions = mode == GroupMode::kCrossPartition;
  const int count =
      across_partitions ? assignment.num_partitions : assignment.num_replicas;
  for (int id = 0; id < count; ++id) {
    all.ids.push_back(id);
    all.devices.push_back(across_partitions ? assignment.device(replica, id)
                                            : assignment.device(id, partition));
  }
  all.rank = across_partitions ? partition : replica;
  return all;
}

absl::StatusOr<Participants> ResolveParticipants(
    const CollectiveGroups& groups, const DeviceAssignment& assignment,
    int replica, int partition) {
  const int partitions = assignment.num_partitions;
  const int64_t my_id = [&]() -> int64_t {
    switch (groups.mode) {
      case GroupMode::kCrossPartition:
        return partition;
      case GroupMode::kFlattenedId:
        return int64_t{replica} * partitions + partition;
      default:
        return replica;
    }
  }();
  std::vector<int64_t> group;
  if (groups.groups.empty()) {
    // One group of every id the mode names.
    int64_t count = assignment.num_replicas;
    if (groups.mode == GroupMode::kCrossPartition) count = partitions;
    if (groups.mode == GroupMode::kFlattenedId) count *= partitions;
    group.resize(count);
    std::iota(group.begin(), group.end(), 0);
  }
  for (const auto& candidate : groups.groups) {
    if (std::find(candidate.begin(), candidate.end(), my_id) !=
        candidate.end()) {
      group = candidate;
      break;
    }
  }
  if (group.empty()) {
    return Malformed(absl::StrCat(
        GroupModeName(groups.mode), " id ", my_id, " (replica ", replica,
        ", partition ", partition, ") is in none of the replica groups ",
        GroupsToString(groups.groups)));
  }
  Participants result;
  auto add = [&](int64_t id, int r, int p) -> absl::Status {
    if (r < 0 || r >= assignment.num_replicas || p < 0 || p >= partitions) {
      return Malformed(absl::StrCat(
          GroupModeName(groups.mode), " id ", id,
          " names no device of the launch's device assignment (",
          assignment.num_replicas, " replicas x ", partitions, " partitions)"));
    }
    if (r == replica && p == partition) {
      result.rank = static_cast<int>(result.devices.size());
    }
    result.devices.push_back(assignment.device(r, p));
    result.ids.push_back(id);
    return absl::OkStatus();
  };
  for (int64_t id : group) {
    absl::Status added;
    switch (groups.mode) {
      case GroupMode::kCrossReplica:
        added = add(id, static_cast<int>(id), partition);
        break;
      case GroupMode::kCrossPartition:
        added = add(id, replica, static_cast<int>(id));
        break;
      case GroupMode::kCrossReplicaAndPartition:
        for (int p = 0; p < partitions && added.ok(); ++p) {
          added = add(id * partitions + p, static_cast<int>(id), p);
        }
        break;
      case GroupMode::kFlattenedId:
        added = add(id, static_cast<int>(id / partitions),
                    static_cast<int>(id % partitions));
        break;
    }
    if (!added.ok()) return added;
  }
  return result;
}

}  // namespace tpu::emulator::interpreter
