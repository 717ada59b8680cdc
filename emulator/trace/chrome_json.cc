#include "emulator/trace/chrome_json.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tpu::emulator::trace {
namespace {

bool IsClientTrack(int64_t tid) { return tid >= kClientTrackBase; }

// Spreads the slices of each client track over lanes: a slice goes to the
// first lane whose last slice ended before it starts (interval colouring),
// so no two slices of one lane overlap. Returns the lanes used per track.
std::map<int64_t, int> AssignLanes(std::vector<Event>& events) {
  std::vector<Event*> slices;
  for (Event& event : events) {
    if (event.phase == 'X' && IsClientTrack(event.tid)) {
      slices.push_back(&event);
    }
  }
  std::stable_sort(slices.begin(), slices.end(),
                   [](const Event* a, const Event* b) {
                     return a->ts_micros < b->ts_micros;
                   });
  std::map<int64_t, std::vector<int64_t>> lane_ends;
  for (Event* slice : slices) {
    std::vector<int64_t>& ends = lane_ends[slice->tid];
    size_t lane = 0;
    while (lane < ends.size() && ends[lane] > slice->ts_micros) ++lane;
    // The last lane takes the overflow (may overlap; never expected).
    if (lane >= static_cast<size_t>(kLanesPerClient))
      lane = kLanesPerClient - 1;
    if (lane == ends.size()) ends.push_back(0);
    ends[lane] = std::max(ends[lane], slice->ts_micros + slice->dur_micros);
    slice->tid += static_cast<int64_t>(lane);
  }
  std::map<int64_t, int> lanes;
  for (const auto& [tid, ends] : lane_ends) {
    lanes[tid] = static_cast<int>(ends.size());
  }
  return lanes;
}

void AppendMetadata(std::string* out, int pid, int64_t tid,
                    const std::string& what, const std::string& args) {
  absl::StrAppend(out, out->empty() ? "" : ",\n", "{\"name\": \"", what,
                  "\", \"cat\": \"__metadata\", \"ph\": \"M\", \"ts\": 0, "
                  "\"pid\": ",
                  pid, ", \"tid\": ", tid, ", \"args\": {", args, "}}");
}

}  // namespace

std::string ToChromeJson(const Trace& trace) {
  std::vector<Event> events = trace.events;
  const std::map<int64_t, int> lanes = AssignLanes(events);
  std::stable_sort(
      events.begin(), events.end(),
      [](const Event& a, const Event& b) { return a.ts_micros < b.ts_micros; });

  std::string body;
  const int pid = trace.pid;
  AppendMetadata(&body, pid, 0, "process_name",
                 absl::StrCat("\"name\": ", JsonQuote(absl::StrCat(
                                                "tpu_emulator host ", pid))));
  for (const auto& [tid, name] : trace.track_names) {
    const int count =
        IsClientTrack(tid) && lanes.count(tid) > 0 ? lanes.at(tid) : 1;
    for (int lane = 0; lane < count; ++lane) {
      const std::string lane_name =
          lane == 0 ? name : absl::StrCat(name, " (", lane + 1, ")");
      AppendMetadata(&body, pid, tid + lane, "thread_name",
                     absl::StrCat("\"name\": ", JsonQuote(lane_name)));
      // Cores first (by id), then clients.
      AppendMetadata(
          &body, pid, tid + lane, "thread_sort_index",
          absl::StrCat("\"sort_index\": ", IsClientTrack(tid)
                                               ? 100000 + tid - kClientTrackBase
                                               : tid));
    }
  }
  for (const Event& event : events) {
    absl::StrAppend(&body, ",\n{\"name\": ", JsonQuote(event.name),
                    ", \"cat\": ", JsonQuote(event.category), ", \"ph\": \"",
                    std::string(1, event.phase),
                    "\", \"ts\": ", event.ts_micros, ", \"pid\": ", pid,
                    ", \"tid\": ", event.tid);
    switch (event.phase) {
      case 'X':
        absl::StrAppend(&body, ", \"dur\": ", event.dur_micros);
        break;
      case 'i':
        absl::StrAppend(&body, ", \"s\": \"t\"");
        break;
      case 's':
        absl::StrAppend(&body, ", \"id\": ", SliceFlowId(pid, event.flow_id));
        break;
      case 'f':
        absl::StrAppend(&body, ", \"id\": ", SliceFlowId(pid, event.flow_id),
                        ", \"bp\": \"e\"");
        break;
      default:
        break;
    }
    if (!event.args.empty()) {
      absl::StrAppend(&body, ", \"args\": {", event.args, "}");
    }
    body += "}";
  }
  return absl::StrCat("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n",
                      body, "\n]}\n");
}

}  // namespace tpu::emulator::trace
