#include "tools/tpu_ctl/stats_text.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tpu::tools {
namespace {

const char* StateName(tpu_emulator::CoreWait::Activity state) {
  switch (state) {
    case tpu_emulator::CoreWait::RUNNING:
      return "running";
    case tpu_emulator::CoreWait::WAITING:
      return "waiting";
    default:
      return "idle";
  }
}

std::string Millis(int64_t micros) {
  return absl::StrFormat("%.3f ms", micros / 1000.0);
}

}  // namespace

std::string HumanBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  return absl::StrFormat("%.1f %s", value, units[unit]);
}

std::string FormatStats(const tpu_emulator::WorkerStats& stats) {
  std::string out = absl::StrCat(
      "host ", stats.host_id(), ": resident memory ",
      HumanBytes(stats.host_rss_bytes()), ", ", stats.clients_size(),
      stats.clients_size() == 1 ? " client" : " clients",
      stats.tracing() ? ", tracing" : "", "\n\n");
  absl::StrAppend(
      &out, absl::StrFormat("%-6s %-8s %5s %21s %8s %7s %7s %14s\n", "core",
                            "state", "queue", "HBM used/capacity", "buffers",
                            "loaded", "runs", "busy"));
  for (const tpu_emulator::CoreStats& core : stats.cores()) {
    absl::StrAppend(
        &out,
        absl::StrFormat("%-6d %-8s %5d %21s %8d %7d %7d %14s\n", core.core(),
                        StateName(core.state()), core.queue_depth(),
                        absl::StrCat(HumanBytes(core.hbm_in_use()), "/",
                                     HumanBytes(core.hbm_capacity())),
                        core.live_buffers(), core.programs_loaded(),
                        core.programs_run(), Millis(core.busy_micros())));
  }
  if (stats.clients_size() == 0) return out + "\nno clients\n";
  absl::StrAppend(&out, "\n",
                  absl::StrFormat("%-6s %12s %8s %8s %7s %7s %14s %9s\n",
                                  "client", "HBM used", "buffers", "compiled",
                                  "loaded", "runs", "busy", "in flight"));
  for (const tpu_emulator::ClientStats& client : stats.clients()) {
    absl::StrAppend(
        &out, absl::StrFormat(
                  "%-6d %12s %8d %8d %7d %7d %14s %9d\n", client.client_id(),
                  HumanBytes(client.hbm_in_use()), client.live_buffers(),
                  client.programs_compiled(), client.programs_loaded(),
                  client.programs_run(), Millis(client.busy_micros()),
                  client.operations_in_flight()));
  }
  return out;
}

std::string FormatProfile(const tpu_emulator::GetProfileResponse& profile,
                          int top) {
  if (profile.programs_size() == 0) {
    return "no profile; start tpu_emulator with --profile_programs and run "
           "the program\n";
  }
  std::string out;
  for (const tpu_emulator::ProgramProfile& program : profile.programs()) {
    int64_t total = 0;
    for (const auto& row : program.instructions()) total += row.total_nanos();
    absl::StrAppend(&out, "program ", program.program(), " (",
                    program.fingerprint(), "): ", program.runs(),
                    program.runs() == 1 ? " run, " : " runs, ",
                    absl::StrFormat("%.3f ms", total / 1e6),
                    " in top-level instructions\n");
    absl::StrAppend(
        &out, absl::StrFormat("%7s %-28s %-20s %7s %12s %12s %12s\n", "time%",
                              "instruction", "opcode", "count", "total", "mean",
                              "bytes"));
    const int rows = std::min(top, program.instructions_size());
    for (int i = 0; i < rows; ++i) {
      const tpu_emulator::InstructionProfile& row = program.instructions(i);
      const double share = total > 0 ? 100.0 * row.total_nanos() / total : 0.0;
      const double mean =
          row.count() > 0 ? row.total_nanos() / 1e3 / row.count() : 0.0;
      absl::StrAppend(
          &out, absl::StrFormat("%6.1f%% %-28s %-20s %7d %9.1f us %9.1f us "
                                "%12s\n",
                                share, row.name(), row.opcode(), row.count(),
                                row.total_nanos() / 1e3, mean,
                                HumanBytes(row.bytes())));
    }
    if (program.instructions_size() > rows) {
      absl::StrAppend(&out, "  (", program.instructions_size() - rows,
                      " more; --top=N shows more)\n");
    }
    out += "\n";
  }
  return out;
}

}  // namespace tpu::tools
