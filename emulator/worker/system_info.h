#ifndef SOFTWARE_TPU_EMULATOR_SYSTEM_INFO_H_
#define SOFTWARE_TPU_EMULATOR_SYSTEM_INFO_H_

// The SystemInfo a worker reports: its topology (in pod-slice mode the whole
// slice's chips with their host ids, while local_core lists only the cores
// this worker serves), per-core HBM figures, and the host's real CPU facts.
//
// Thread safety: free functions; ReadCpuInfo reads /proc on every call.

#include <cstdint>
#include <functional>

#include "emulator/worker/topology.h"
#include "proto/tpu_driver.pb.h"

namespace tpu::emulator {

// The host's CPU count, 1-minute load average and memory, from /proc (zeros
// where /proc cannot be read).
tpu_driver::CpuInfo ReadCpuInfo();

// `hbm_available(local_index)` gives the free HBM bytes of a local core;
// cores of other hosts report `hbm_capacity`.
tpu_driver::SystemInfo BuildSystemInfo(
    const Topology& topology, int64_t hbm_capacity,
    const std::function<int64_t(int local_index)>& hbm_available,
    const tpu_driver::CpuInfo& cpu);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SYSTEM_INFO_H_
