#ifndef SOFTWARE_TPU_TOOLS_TPU_CTL_STATS_TEXT_H_
#define SOFTWARE_TPU_TOOLS_TPU_CTL_STATS_TEXT_H_

// The worker's stats and program profiles as tables for people (tpu_ctl
// stats, top, profile).
//
// Thread safety: stateless functions.

#include <string>

#include "proto/control.pb.h"

namespace tpu::tools {

// "1.5 GiB", "512 B".
std::string HumanBytes(int64_t bytes);

// A line for the host, a table of cores (state, queue, HBM, buffers,
// programs loaded and run, busy time) and one of clients.
std::string FormatStats(const tpu_emulator::WorkerStats& stats);

// Per program: its runs, then its `top` most expensive instructions with
// their share of the program's time, count, total and mean time, bytes.
std::string FormatProfile(const tpu_emulator::GetProfileResponse& profile,
                          int top);

}  // namespace tpu::tools

#endif  // SOFTWARE_TPU_TOOLS_TPU_CTL_STATS_TEXT_H_
