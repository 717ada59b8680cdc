#include "emulator/worker/system_info.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tpu::emulator {
namespace {

// "MemTotal:       24609908 kB" -> bytes.
bool ParseMeminfoLine(const std::string& line, const char* key,
                      int64_t* bytes) {
  const std::string prefix = std::string(key) + ":";
  if (line.rfind(prefix, 0) != 0) return false;
  std::istringstream in(line.substr(prefix.size()));
  int64_t kib = 0;
  if (!(in >> kib)) return false;
  *bytes = kib * 1024;
  return true;
}

}  // namespace

tpu_driver::CpuInfo ReadCpuInfo() {
  tpu_driver::CpuInfo cpu;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  cpu.set_num_cpu_cores(cpus > 0 ? static_cast<int32_t>(cpus) : 0);
  cpu.set_cpu_load_average_1min(0);
  cpu.set_ram_bytes_total(0);
  cpu.set_ram_bytes_available(0);
  {
    std::ifstream loadavg("/proc/loadavg");
    double load = 0;
    if (loadavg >> load)
      cpu.set_cpu_load_average_1min(static_cast<float>(load));
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    int64_t bytes = 0;
    if (ParseMeminfoLine(line, "MemTotal", &bytes)) {
      cpu.set_ram_bytes_total(bytes);
    } else if (ParseMeminfoLine(line, "MemAvailable", &bytes)) {
      cpu.set_ram_bytes_available(bytes);
    }
  }
  return cpu;
}

tpu_driver::SystemInfo BuildSystemInfo(
    const Topology& topology, int64_t hbm_capacity,
    const std::function<int64_t(int local_index)>& hbm_available,
    const tpu_driver::CpuInfo& cpu) {
  tpu_driver::SystemInfo info;
  *info.mutable_cpu() = cpu;
  // A lone worker reports its own chips; a pod-slice host reports them all.
  const bool slice = topology.pod_hosts() > 1;
  const int first_chip = 0;  // a lone worker is always host 0
  const int chip_count =
      slice ? topology.total_chip_count() : topology.chips_per_host();
  for (int chip = first_chip; chip < first_chip + chip_count; ++chip) {
    const int host = topology.HostOfChip(chip);
    tpu_driver::TpuChipInfo* chip_info = info.add_tpu_chip();
    chip_info->set_host_id(slice ? host : topology.host_id());
    *chip_info->mutable_chip_coord() = topology.ChipCoordinate(chip);
    for (int c = 0; c < topology.cores_per_chip(); ++c) {
      const int id = chip * topology.cores_per_chip() + c;
      const int on_host = id % topology.local_core_count();
      const int local = topology.LocalIndex(id);
      const int64_t available =
          local >= 0 ? hbm_available(local) : hbm_capacity;
      tpu_driver::TpuCoreInfo* core = chip_info->add_core();
      core->set_id(id);
      core->set_core_on_chip_index(c);
      core->set_core_on_host_index(on_host);
      core->set_hbm_bytes_available(available);
      core->set_hbm_bytes_allocatable(available);
      if (local >= 0) *info.add_local_core() = *core;
    }
  }
  info.set_host_id(topology.host_id());
  info.set_host_count(topology.pod_hosts());
  info.set_chip_count(chip_count);
  info.set_core_count(chip_count * topology.cores_per_chip());
  return info;
}

}  // namespace tpu::emulator
