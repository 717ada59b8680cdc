#include "emulator/trace/merge.h"

#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "emulator/trace/chrome_json.h"
#include "emulator/trace/recorder.h"

namespace tpu::emulator::trace {
namespace {

constexpr absl::string_view kHeader =
    "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
constexpr absl::string_view kFooter = "\n]}\n";

std::string ProcessMetadata(int pid, const std::string& what,
                            const std::string& args) {
  return absl::StrCat("{\"name\": \"", what,
                      "\", \"cat\": \"__metadata\", \"ph\": \"M\", \"ts\": 0, "
                      "\"pid\": ",
                      pid, ", \"tid\": 0, \"args\": {", args, "}}");
}

// The number after `key` in an event line ("\"pid\": "), or -1.
int64_t NumberAfter(absl::string_view line, absl::string_view key) {
  const size_t at = line.find(key);
  if (at == absl::string_view::npos) return -1;
  int64_t value = 0;
  bool digits = false;
  for (size_t i = at + key.size();
       i < line.size() && absl::ascii_isdigit(line[i]); ++i) {
    value = value * 10 + (line[i] - '0');
    digits = true;
  }
  return digits ? value : -1;
}

constexpr absl::string_view kPid = "\"pid\": ";
constexpr absl::string_view kTid = "\"tid\": ";

bool IsFlowEnd(absl::string_view line) {
  return absl::StrContains(line, "\"ph\": \"s\"") ||
         absl::StrContains(line, "\"ph\": \"f\"");
}

// A worker's arrow to a core of another worker ("waited for core 7", drawn
// by the coordinator of a collective) ends on a track that worker does not
// have; core ids are global, so the core's own worker is found by its
// track and the end moves there.
void MoveFlowEndsToTheirCores(std::vector<std::string>& lines) {
  std::map<int64_t, std::set<int64_t>> owners;  // core track -> pids
  for (const std::string& line : lines) {
    if (!absl::StartsWith(line, "{\"name\": \"thread_name\"")) continue;
    const int64_t tid = NumberAfter(line, kTid);
    if (tid >= 0 && tid < kClientTrackBase) {
      owners[tid].insert(NumberAfter(line, kPid));
    }
  }
  for (std::string& line : lines) {
    if (!IsFlowEnd(line)) continue;
    const int64_t pid = NumberAfter(line, kPid);
    const int64_t tid = NumberAfter(line, kTid);
    auto it = owners.find(tid);
    if (it == owners.end() || it->second.size() != 1 ||
        it->second.count(pid) > 0) {
      continue;
    }
    const std::string from = absl::StrCat(kPid, pid, ", ", kTid);
    const std::string to = absl::StrCat(kPid, *it->second.begin(), ", ", kTid);
    const size_t at = line.find(from);
    if (at != std::string::npos) line.replace(at, from.size(), to);
  }
}

}  // namespace

std::string WorkerProcessName(int host_id, const std::string& address) {
  return absl::StrCat("worker ", host_id, " (", address, ")");
}

absl::StatusOr<std::string> MergeChromeTraces(
    const std::vector<WorkerTrace>& workers) {
  std::vector<std::string> lines;
  for (const WorkerTrace& worker : workers) {
    std::string name = WorkerProcessName(worker.host_id, worker.address);
    if (worker.json.empty()) {
      // A named process without events: the trace says who is missing.
      absl::StrAppend(&name, ": no trace (", worker.missing_reason, ")");
    }
    lines.push_back(
        ProcessMetadata(worker.host_id, "process_name",
                        absl::StrCat("\"name\": ", JsonQuote(name))));
    lines.push_back(
        ProcessMetadata(worker.host_id, "process_sort_index",
                        absl::StrCat("\"sort_index\": ", worker.host_id)));
    if (worker.json.empty()) continue;
    absl::string_view json = worker.json;
    if (!absl::ConsumePrefix(&json, kHeader) ||
        !absl::ConsumeSuffix(&json, kFooter)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the trace of worker ", worker.host_id,
          " is not tpu_emulator's Chrome JSON layout (header or footer "
          "differs); was it written by the same version?"));
    }
    const std::string own_pid = absl::StrCat("\"pid\": ", worker.host_id, ",");
    for (absl::string_view line : absl::StrSplit(json, '\n')) {
      absl::ConsumeSuffix(&line, ",");
      if (line.empty()) continue;
      if (!absl::StrContains(line, own_pid)) {
        return absl::InvalidArgumentError(
            absl::StrCat("an event of worker ", worker.host_id,
                         "'s trace has another pid: ", line.substr(0, 200)));
      }
      // Replaced by the worker's name above.
      if (absl::StartsWith(line, "{\"name\": \"process_name\"")) continue;
      lines.emplace_back(line);
    }
  }
  MoveFlowEndsToTheirCores(lines);
  return absl::StrCat(kHeader, absl::StrJoin(lines, ",\n"), kFooter);
}

}  // namespace tpu::emulator::trace
