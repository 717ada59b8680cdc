#include "driver/pod/pod_topology.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tpu::driver {
namespace {

int CoresInChips(const tpu_driver::SystemInfo& info) {
  int cores = 0;
  for (const auto& chip : info.tpu_chip()) cores += chip.core_size();
  return cores;
}

// A worker reports only its own cores when every core of its chips is local.
bool ReportsOnlyOwnCores(const tpu_driver::SystemInfo& info) {
  return info.local_core_size() == CoresInChips(info);
}

std::string CoordString(const tpu_driver::ChipCoordinate& c) {
  return absl::StrCat("(", c.x(), ",", c.y(), ",", c.z(), ")");
}

void MergeCpu(const tpu_driver::SystemInfo& info, bool first,
              tpu_driver::CpuInfo* cpu) {
  // The pod "host" is all the workers' hosts together.
  if (first) {
    *cpu = info.cpu();
    return;
  }
  cpu->set_num_cpu_cores(cpu->num_cpu_cores() + info.cpu().num_cpu_cores());
  cpu->set_cpu_load_average_1min(std::max(cpu->cpu_load_average_1min(),
                                          info.cpu().cpu_load_average_1min()));
  cpu->set_ram_bytes_total(cpu->ram_bytes_total() +
                           info.cpu().ram_bytes_total());
  cpu->set_ram_bytes_available(cpu->ram_bytes_available() +
                               info.cpu().ram_bytes_available());
}

// Appends `chip` to the pod view, renumbering its cores, served by `worker`.
void AddChip(const tpu_driver::TpuChipInfo& chip, int worker,
             PodTopology* topology) {
  tpu_driver::SystemInfo& pod = topology->system_info;
  tpu_driver::TpuChipInfo* out = pod.add_tpu_chip();
  *out = chip;
  out->set_host_id(0);
  for (auto& core : *out->mutable_core()) {
    const int32_t pod_id = static_cast<int32_t>(topology->cores.size());
    topology->cores.push_back({worker, core.id()});
    core.set_id(pod_id);
    core.set_core_on_host_index(pod_id);
    *pod.add_local_core() = core;
  }
}

}  // namespace

absl::StatusOr<PodTopology> MergeSystemInfo(
    absl::Span<const tpu_driver::SystemInfo> infos,
    absl::Span<const std::string> names) {
  if (infos.empty()) {
    return absl::InvalidArgumentError(
        "A grpc+pod:// driver needs at least one worker: give their addresses "
        "as grpc+pod://host1:port1,host2:port2.");
  }
  PodTopology topology;
  topology.worker_count = static_cast<int>(infos.size());
  int lone = 0;
  for (size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].local_core_size() == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(names[i], " reports no local TPU cores."));
    }
    if (ReportsOnlyOwnCores(infos[i])) ++lone;
  }
  if (lone != 0 && lone != static_cast<int>(infos.size())) {
    size_t lone_index = 0, slice_index = 0;
    for (size_t i = 0; i < infos.size(); ++i) {
      (ReportsOnlyOwnCores(infos[i]) ? lone_index : slice_index) = i;
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "The workers do not agree on the topology: ", names[lone_index],
        " reports only its own cores, but ", names[slice_index],
        " reports a pod slice of ", infos[slice_index].tpu_chip_size(),
        " chips. Start every worker as a host of the same slice "
        "(--pod_hosts/--host_id) or none of them."));
  }
  topology.slice = lone == 0;
  tpu_driver::SystemInfo& pod = topology.system_info;

  if (!topology.slice) {
    for (size_t w = 0; w < infos.size(); ++w) {
      for (const auto& chip : infos[w].tpu_chip()) {
        AddChip(chip, static_cast<int>(w), &topology);
      }
    }
  } else {
    absl::flat_hash_map<int32_t, int> worker_of_host;
    std::vector<absl::flat_hash_set<int32_t>> served(infos.size());
    for (size_t w = 0; w < infos.size(); ++w) {
      auto [it, inserted] =
          worker_of_host.emplace(infos[w].host_id(), static_cast<int>(w));
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            names[it->second], " and ", names[w], " both report host_id ",
            infos[w].host_id(),
            " of the slice: is one worker listed twice, or were two started "
            "with the same --host_id?"));
      }
      for (const auto& core : infos[w].local_core()) {
        served[w].insert(core.id());
      }
    }
    absl::flat_hash_set<std::tuple<int32_t, int32_t, int32_t>> seen;
    for (size_t w = 0; w < infos.size(); ++w) {
      for (const auto& chip : infos[w].tpu_chip()) {
        const auto& c = chip.chip_coord();
        if (!seen.insert({c.x(), c.y(), c.z()}).second) continue;
        auto owner = worker_of_host.find(chip.host_id());
        if (owner == worker_of_host.end()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "The chip at ", CoordString(c), " reported by ", names[w],
              " belongs to host ", chip.host_id(),
              " of the slice, but no listed worker is that host: list every "
              "host of the slice in the grpc+pod:// address."));
        }
        for (const auto& core : chip.core()) {
          if (!served[owner->second].contains(core.id())) {
            return absl::FailedPreconditionError(absl::StrCat(
                "Core ", core.id(), " of the chip at ", CoordString(c),
                " belongs to host ", chip.host_id(), ", but ",
                names[owner->second],
                " (that host) does not list it among its local cores."));
          }
        }
        AddChip(chip, owner->second, &topology);
      }
    }
  }
  for (size_t w = 0; w < infos.size(); ++w) {
    MergeCpu(infos[w], w == 0, pod.mutable_cpu());
  }
  pod.set_chip_count(pod.tpu_chip_size());
  pod.set_core_count(pod.local_core_size());
  pod.set_host_count(1);
  pod.set_host_id(0);
  return topology;
}

absl::StatusOr<xla::DeviceAssignmentProto> TranslateDeviceAssignment(
    const PodTopology& topology, int worker,
    const xla::DeviceAssignmentProto& pod_assignment) {
  const int64_t pod_cores = static_cast<int64_t>(topology.cores.size());
  int32_t own_cores = 0;
  for (const auto& location : topology.cores) {
    if (location.worker == worker) ++own_cores;
  }
  // Lone workers: ids handed to foreign cores, in order of first use.
  absl::flat_hash_map<int64_t, int32_t> foreign_ids;
  xla::DeviceAssignmentProto out = pod_assignment;
  for (auto& computation : *out.mutable_computation_devices()) {
    for (auto& id : *computation.mutable_replica_device_ids()) {
      if (id < 0 || id >= pod_cores) {
        return absl::InvalidArgumentError(absl::StrCat(
            "The device assignment names core ", id, ", but the pod has ",
            pod_cores, " cores (0-", pod_cores - 1, ")."));
      }
      const PodCoreLocation& location = topology.cores[id];
      if (topology.slice || location.worker == worker) {
        id = location.worker_core_id;
      } else {
        auto [it, inserted] = foreign_ids.emplace(
            id, own_cores + static_cast<int32_t>(foreign_ids.size()));
        id = it->second;
      }
    }
  }
  return out;
}

}  // namespace tpu::driver
