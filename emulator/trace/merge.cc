#include "emulator/trace/merge.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "emulator/trace/chrome_json.h"

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
  return absl::StrCat(kHeader, absl::StrJoin(lines, ",\n"), kFooter);
}

}  // namespace tpu::emulator::trace
