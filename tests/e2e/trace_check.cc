#include "tests/e2e/trace_check.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace tpu::e2e {

using ::google::protobuf::Struct;
using ::google::protobuf::Value;

std::string Str(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? "" : it->second.string_value();
}

std::vector<TraceEvent> CheckTraceFormat(const std::string& json) {
  Struct root;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &root).ok())
      << "not JSON: " << json.substr(0, 200);
  std::vector<TraceEvent> events;
  const auto& list = root.fields().at("traceEvents").list_value().values();
  EXPECT_GT(list.size(), 0);
  for (const Value& value : list) {
    const Struct& e = value.struct_value();
    for (const char* field : {"name", "ph", "ts", "pid", "tid"}) {
      EXPECT_TRUE(e.fields().count(field) > 0)
          << "event without " << field << ": " << e.DebugString();
    }
    TraceEvent event;
    event.name = Str(e, "name");
    event.cat = Str(e, "cat");
    event.ph = Str(e, "ph");
    auto num = [&](const char* key) {
      auto it = e.fields().find(key);
      return it == e.fields().end() ? 0.0 : it->second.number_value();
    };
    event.ts = num("ts");
    event.dur = num("dur");
    event.pid = num("pid");
    event.tid = num("tid");
    event.id = num("id");
    if (e.fields().count("args") > 0)
      event.args = e.fields().at("args").struct_value();
    if (event.ph == "X") {
      EXPECT_TRUE(e.fields().count("dur") > 0) << event.name;
      EXPECT_GE(event.dur, 0) << event.name;
    }
    events.push_back(std::move(event));
  }
  // Per track, slices nest.
  std::map<std::pair<double, double>, std::vector<const TraceEvent*>> tracks;
  for (const TraceEvent& e : events) {
    if (e.ph == "X") tracks[{e.pid, e.tid}].push_back(&e);
  }
  for (auto& [track, slices] : tracks) {
    std::stable_sort(slices.begin(), slices.end(),
                     [](const TraceEvent* a, const TraceEvent* b) {
                       return std::make_tuple(a->ts, -a->dur) <
                              std::make_tuple(b->ts, -b->dur);
                     });
    std::vector<const TraceEvent*> stack;
    for (const TraceEvent* slice : slices) {
      while (!stack.empty() &&
             stack.back()->ts + stack.back()->dur <= slice->ts &&
             !(slice->dur == 0 &&
               stack.back()->ts + stack.back()->dur == slice->ts)) {
        stack.pop_back();
      }
      if (!stack.empty()) {
        EXPECT_LE(slice->ts + slice->dur, stack.back()->ts + stack.back()->dur)
            << slice->name << " overlaps " << stack.back()->name << " on track "
            << track.second << " without nesting";
      }
      stack.push_back(slice);
    }
  }
  // Flows connect existing slices.
  std::map<double, int> starts, finishes;
  for (const TraceEvent& e : events) {
    if (e.ph != "s" && e.ph != "f") continue;
    (e.ph == "s" ? starts : finishes)[e.id]++;
    bool inside = false;
    for (const TraceEvent* slice : tracks[{e.pid, e.tid}]) {
      inside |= slice->ts <= e.ts && e.ts <= slice->ts + slice->dur;
    }
    EXPECT_TRUE(inside) << "flow " << e.name << " (" << e.ph << ") at " << e.ts
                        << " on track " << e.tid << " is inside no slice";
  }
  EXPECT_EQ(starts.size(), finishes.size());
  for (const auto& [id, n] : starts) {
    EXPECT_EQ(n, 1);
    EXPECT_EQ(finishes[id], 1) << "flow " << id << " has no finish";
  }
  return events;
}

}  // namespace tpu::e2e
