#ifndef SOFTWARE_TPU_PROTO_WAIT_REPORT_TEXT_H_
#define SOFTWARE_TPU_PROTO_WAIT_REPORT_TEXT_H_

// The wait report (proto/control.proto) for people and for scripts. Shared
// by everyone who shows it: the worker's log line, tools/tpu_ctl, and the
// client beside its execute-deadline messages, so the report reads the same
// wherever a user meets it.
//
// Thread safety: stateless functions.

#include <string>
#include <vector>

#include "proto/control.pb.h"

namespace tpu::wire {

// The simple cycles of a wait-for graph: edges[i] are the nodes that
// nodes[i] waits for. Each cycle is rotated to start at its smallest node
// and listed once.
std::vector<std::vector<int>> FindCycles(
    const std::vector<int>& nodes, const std::vector<std::vector<int>>& edges);

// One paragraph per core that is not idle, then the cycles; "no core is
// running or waiting" when all are idle.
std::string FormatWaitReport(const tpu_emulator::WaitReport& report);

// {"cores": [{"core", "host_id", "state", "program", "launch", "client",
// "instruction", "kind", "group", "waiting_for", "diagnosis", "queued",
// "history"}], "cycles": [[...]]}.
std::string WaitReportToJson(const tpu_emulator::WaitReport& report);

}  // namespace tpu::wire

#endif  // SOFTWARE_TPU_PROTO_WAIT_REPORT_TEXT_H_
