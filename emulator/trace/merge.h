#ifndef SOFTWARE_TPU_EMULATOR_TRACE_MERGE_H_
#define SOFTWARE_TPU_EMULATOR_TRACE_MERGE_H_

// One Chrome trace for a pod slice from its workers' traces
// (`tpu_ctl trace` against any worker of the slice).
//
// Each worker's trace is ToChromeJson's output: its pid is its host id and
// its core tracks carry global core ids, so tracks never collide; flow ids
// are offset by the pid (chrome_json.h); timestamps are Unix microseconds
// on every worker (recorder.h), one time base for processes of one machine.
// Merging is therefore a concatenation of the workers' events, each process
// renamed after its worker, plus a named, empty process for every worker
// whose trace could not be had. One fix-up: an arrow's end on a core of
// another worker (a collective's coordinator saw it arrive) moves to that
// worker's process, where the core's track is.
//
// Relies on ToChromeJson's layout (one event per line; JSON strings never
// hold a raw newline) rather than parsing JSON.
//
// Thread safety: stateless functions.

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tpu::emulator::trace {

struct WorkerTrace {
  int host_id = 0;
  // The worker's address (host:port), for the process name.
  std::string address;
  // ToChromeJson of its trace; empty if it could not be had.
  std::string json;
  // Why there is no trace (when `json` is empty).
  std::string missing_reason;
};

// The process of worker `host_id` in a slice trace: "worker 1 (ADDRESS)".
std::string WorkerProcessName(int host_id, const std::string& address);

// INVALID_ARGUMENT if a trace is not ToChromeJson's layout or its pid is not
// its host id.
absl::StatusOr<std::string> MergeChromeTraces(
    const std::vector<WorkerTrace>& workers);

}  // namespace tpu::emulator::trace

#endif  // SOFTWARE_TPU_EMULATOR_TRACE_MERGE_H_
