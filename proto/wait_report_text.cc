#include "proto/wait_report_text.h"

#include <algorithm>
#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "proto/json_quote.h"

namespace tpu::wire {
namespace {

using tpu_emulator::CoreWait;

const char* StateName(CoreWait::Activity activity) {
  switch (activity) {
    case CoreWait::RUNNING:
      return "running";
    case CoreWait::WAITING:
      return "waiting";
    default:
      return "idle";
  }
}

template <typename Ints>
std::string JsonInts(const Ints& values) {
  return absl::StrCat("[", absl::StrJoin(values, ", "), "]");
}

std::string Since(int64_t since_micros, int64_t now_micros) {
  const double seconds = (now_micros - since_micros) / 1e6;
  return absl::StrCat(absl::SixDigits(seconds), " s");
}

}  // namespace

std::vector<std::vector<int>> FindCycles(
    const std::vector<int>& nodes, const std::vector<std::vector<int>>& edges) {
  // Index of each node id.
  auto index_of = [&](int node) -> int {
    auto it = std::find(nodes.begin(), nodes.end(), node);
    return it == nodes.end() ? -1 : static_cast<int>(it - nodes.begin());
  };
  std::set<std::vector<int>> found;
  std::vector<int> path;
  std::vector<bool> on_path(nodes.size(), false);
  // Depth-first from each start, only through nodes not smaller than the
  // start, so each cycle is found once, from its smallest node.
  std::function<void(int, int)> visit = [&](int start, int at) {
    path.push_back(nodes[at]);
    on_path[at] = true;
    for (int next_node : edges[at]) {
      const int next = index_of(next_node);
      if (next < 0 || nodes[next] < nodes[start]) continue;
      if (next == start) {
        found.insert(path);
      } else if (!on_path[next] && path.size() < nodes.size()) {
        visit(start, next);
      }
    }
    on_path[at] = false;
    path.pop_back();
  };
  for (size_t s = 0; s < nodes.size(); ++s) visit(static_cast<int>(s), s);
  return std::vector<std::vector<int>>(found.begin(), found.end());
}

std::string FormatWaitReport(const tpu_emulator::WaitReport& report) {
  std::string out;
  const int64_t now = report.taken_unix_micros();
  for (const CoreWait& core : report.cores()) {
    if (core.activity() == CoreWait::IDLE) continue;
    absl::StrAppend(&out, "core ", core.core(), " (host ", core.host_id(),
                    "): ", StateName(core.activity()), " program ",
                    core.program(), " launch ", core.launch(), " (client ",
                    core.client_id(), ")");
    if (core.activity() == CoreWait::WAITING) {
      absl::StrAppend(
          &out, " in ", core.kind(), " ", core.instruction(), " [",
          core.signature(), "] with group {", absl::StrJoin(core.group(), ","),
          "} for ", Since(core.since_unix_micros(), now), "\n",
          "  waiting for core", core.waiting_for_size() == 1 ? " " : "s ",
          absl::StrJoin(core.waiting_for(), ", "), "\n");
      for (const std::string& line : core.diagnosis()) {
        absl::StrAppend(&out, "    ", line, "\n");
      }
    } else {
      absl::StrAppend(&out, "\n");
    }
    if (core.queued() > 0) {
      absl::StrAppend(&out, "  ", core.queued(),
                      " more program(s) queued behind it\n");
    }
    for (const auto& record : core.history()) {
      absl::StrAppend(&out, "  #", record.sequence(), " ", record.program(),
                      " launch ", record.launch(), " ", record.kind(), " ",
                      record.instruction(), " [", record.signature(), "] {",
                      absl::StrJoin(record.group(), ","), "} ",
                      record.done() ? "done" : "waiting", "\n");
    }
  }
  if (out.empty()) out = "no core is running or waiting\n";
  for (const auto& cycle : report.cycles()) {
    std::vector<std::string> steps;
    for (int core : cycle.cores()) steps.push_back(absl::StrCat("core ", core));
    steps.push_back(absl::StrCat("core ", cycle.cores(0)));
    absl::StrAppend(&out, "deadlock: ", absl::StrJoin(steps, " waits for "),
                    "\n");
  }
  return out;
}

std::string WaitReportToJson(const tpu_emulator::WaitReport& report) {
  std::vector<std::string> cores;
  for (const CoreWait& core : report.cores()) {
    std::vector<std::string> diagnosis, history;
    for (const std::string& line : core.diagnosis()) {
      diagnosis.push_back(JsonQuote(line));
    }
    for (const auto& r : core.history()) {
      history.push_back(absl::StrCat(
          "{\"sequence\": ", r.sequence(), ", \"program\": ",
          JsonQuote(r.program()), ", \"launch\": ", r.launch(),
          ", \"instruction\": ", JsonQuote(r.instruction()), ", \"kind\": ",
          JsonQuote(r.kind()), ", \"signature\": ", JsonQuote(r.signature()),
          ", \"group\": ", JsonInts(r.group()), ", \"state\": \"",
          r.done() ? "done" : "waiting",
          "\", \"start_unix_micros\": ", r.start_unix_micros(),
          ", \"end_unix_micros\": ", r.end_unix_micros(), "}"));
    }
    cores.push_back(absl::StrCat(
        "{\"core\": ", core.core(), ", \"host_id\": ", core.host_id(),
        ", \"state\": \"", StateName(core.activity()),
        "\", \"program\": ", JsonQuote(core.program()),
        ", \"launch\": ", core.launch(), ", \"client\": ", core.client_id(),
        ", \"instruction\": ", JsonQuote(core.instruction()),
        ", \"kind\": ", JsonQuote(core.kind()), ", \"signature\": ",
        JsonQuote(core.signature()), ", \"group\": ", JsonInts(core.group()),
        ", \"waiting_for\": ", JsonInts(core.waiting_for()),
        ", \"since_unix_micros\": ", core.since_unix_micros(),
        ", \"diagnosis\": [", absl::StrJoin(diagnosis, ", "), "], \"queued\": ",
        core.queued(), ", \"history\": [", absl::StrJoin(history, ", "), "]}"));
  }
  std::vector<std::string> cycles;
  for (const auto& cycle : report.cycles()) {
    cycles.push_back(JsonInts(cycle.cores()));
  }
  return absl::StrCat("{\"taken_unix_micros\": ", report.taken_unix_micros(),
                      ", \"cores\": [", absl::StrJoin(cores, ", "),
                      "], \"cycles\": [", absl::StrJoin(cycles, ", "), "]}\n");
}

}  // namespace tpu::wire
