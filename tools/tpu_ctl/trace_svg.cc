#include "tools/tpu_ctl/trace_svg.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace tpu::tools {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr double kLabelWidth = 150;
constexpr double kTimelineWidth = 1100;
constexpr double kLevelHeight = 18;
constexpr double kRowGap = 6;
constexpr double kTop = 40;

struct Slice {
  std::string name;
  std::string category;
  double ts = 0;
  double dur = 0;
  int depth = 0;
};

struct Track {
  std::string name;
  double sort_index = 0;
  std::vector<Slice> slices;
  int depth = 1;
  double y = 0;
};

struct FlowEnd {
  std::pair<double, double> track;  // (pid, tid)
  double ts = 0;
};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
  }
  return out;
}

std::string Field(const Struct& event, const std::string& key) {
  auto it = event.fields().find(key);
  if (it == event.fields().end()) return "";
  if (it->second.has_string_value()) return it->second.string_value();
  return "";
}

double Number(const Struct& event, const std::string& key) {
  auto it = event.fields().find(key);
  if (it == event.fields().end() || !it->second.has_number_value()) return 0;
  return it->second.number_value();
}

const char* Color(const std::string& category) {
  if (category == "program") return "#8ab4f8";
  if (category == "instruction") return "#c4b5fd";
  if (category == "collective wait") return "#f28b82";
  if (category == "collective exchange") return "#fbbc04";
  if (category == "transfer") return "#81c995";
  if (category == "compile") return "#d7aefb";
  return "#dadce0";
}

}  // namespace

absl::StatusOr<std::string> TraceJsonToSvg(const std::string& json) {
  Struct root;
  if (!google::protobuf::util::JsonStringToMessage(json, &root).ok()) {
    return absl::InvalidArgumentError(
        "the trace is not JSON (expected Chrome trace-event JSON, as `tpu_ctl "
        "trace stop --out` writes)");
  }
  auto events_it = root.fields().find("traceEvents");
  if (events_it == root.fields().end() || !events_it->second.has_list_value()) {
    return absl::InvalidArgumentError(
        "the trace has no \"traceEvents\" list (expected Chrome trace-event "
        "JSON)");
  }
  std::map<std::pair<double, double>, Track> tracks;
  std::map<double, std::pair<FlowEnd, FlowEnd>> flows;
  std::map<double, bool> flow_has_start, flow_has_end;
  double begin = INFINITY, end = -INFINITY;
  for (const Value& value : events_it->second.list_value().values()) {
    if (!value.has_struct_value()) continue;
    const Struct& event = value.struct_value();
    const std::pair<double, double> key = {Number(event, "pid"),
                                           Number(event, "tid")};
    const std::string phase = Field(event, "ph");
    if (phase == "M") {
      auto args = event.fields().find("args");
      if (args == event.fields().end() || !args->second.has_struct_value()) {
        continue;
      }
      const Struct& a = args->second.struct_value();
      Track& track = tracks[key];
      if (Field(event, "name") == "thread_name") track.name = Field(a, "name");
      if (Field(event, "name") == "thread_sort_index") {
        track.sort_index = Number(a, "sort_index");
      }
      continue;
    }
    if (phase == "s" || phase == "f") {
      const double id = Number(event, "id");
      FlowEnd& at = phase == "s" ? flows[id].first : flows[id].second;
      at.track = key;
      at.ts = Number(event, "ts");
      (phase == "s" ? flow_has_start : flow_has_end)[id] = true;
      continue;
    }
    if (phase != "X") continue;
    Slice slice;
    slice.name = Field(event, "name");
    slice.category = Field(event, "cat");
    slice.ts = Number(event, "ts");
    slice.dur = Number(event, "dur");
    begin = std::min(begin, slice.ts);
    end = std::max(end, slice.ts + slice.dur);
    Track& track = tracks[key];
    if (track.name.empty() && track.slices.empty()) {
      track.sort_index = key.second;
    }
    track.slices.push_back(std::move(slice));
  }
  if (!(begin <= end)) begin = end = 0;
  const double span = std::max(1.0, end - begin);
  auto x_of = [&](double ts) {
    return kLabelWidth + (ts - begin) / span * kTimelineWidth;
  };

  // Rows: tracks with slices, by sort index; depth from nesting.
  std::vector<std::pair<std::pair<double, double>, Track*>> rows;
  for (auto& [key, track] : tracks) {
    if (track.slices.empty()) continue;
    if (track.name.empty()) {
      track.name = absl::StrCat("track ", static_cast<int64_t>(key.second));
    }
    std::stable_sort(track.slices.begin(), track.slices.end(),
                     [](const Slice& a, const Slice& b) {
                       return std::make_tuple(a.ts, -a.dur) <
                              std::make_tuple(b.ts, -b.dur);
                     });
    std::vector<double> open_ends;
    for (Slice& slice : track.slices) {
      while (!open_ends.empty() && open_ends.back() <= slice.ts &&
             !(open_ends.back() == slice.ts && slice.dur == 0)) {
        open_ends.pop_back();
      }
      slice.depth = static_cast<int>(open_ends.size());
      track.depth = std::max(track.depth, slice.depth + 1);
      open_ends.push_back(slice.ts + slice.dur);
    }
    rows.push_back({key, &track});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(a.first.first, a.second->sort_index) <
           std::make_tuple(b.first.first, b.second->sort_index);
  });
  double y = kTop;
  for (auto& [key, track] : rows) {
    track->y = y;
    y += track->depth * kLevelHeight + kRowGap;
  }
  const double height = y + 30;
  const double width = kLabelWidth + kTimelineWidth + 20;

  std::string svg = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, "
      "Arial, sans-serif\" font-size=\"11\">\n"
      "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"18\" font-size=\"14\">TPU timeline: %.3f ms</text>\n",
      width, height, width, height, width, height, span / 1000.0);
  // Time axis: ten ticks.
  for (int i = 0; i <= 10; ++i) {
    const double x = kLabelWidth + kTimelineWidth * i / 10;
    absl::StrAppend(&svg,
                    absl::StrFormat("<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" "
                                    "y2=\"%.0f\" stroke=\"#eeeeee\"/>\n"
                                    "<text x=\"%.1f\" y=\"%.0f\" fill=\"#666\" "
                                    "text-anchor=\"middle\">%.3f ms</text>\n",
                                    x, kTop - 4, x, height - 24, x, height - 10,
                                    span * i / 10 / 1000.0));
  }
  for (const auto& [key, track] : rows) {
    absl::StrAppend(
        &svg, absl::StrFormat(
                  "<g class=\"row\" data-track=\"%s\">\n<text x=\"8\" "
                  "y=\"%.1f\">%s</text>\n",
                  Escape(track->name), track->y + 13, Escape(track->name)));
    for (const Slice& slice : track->slices) {
      const double x = x_of(slice.ts);
      const double w = std::max(0.5, slice.dur / span * kTimelineWidth);
      const double top = track->y + slice.depth * kLevelHeight;
      absl::StrAppend(
          &svg, absl::StrFormat("<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                                "height=\"%.0f\" fill=\"%s\" stroke=\"#555\" "
                                "stroke-width=\"0.3\"><title>%s (%s): %.0f "
                                "us</title></rect>\n",
                                x, top, w, kLevelHeight - 2,
                                Color(slice.category), Escape(slice.name),
                                Escape(slice.category), slice.dur));
      // Names only where they fit (about 6 px per character).
      const size_t fits = static_cast<size_t>(std::max(0.0, (w - 4) / 6));
      if (fits >= 3) {
        std::string label = slice.name;
        if (label.size() > fits) label = label.substr(0, fits - 1) + "~";
        absl::StrAppend(
            &svg, absl::StrFormat("<text x=\"%.2f\" y=\"%.1f\">%s</text>\n",
                                  x + 2, top + 12, Escape(label)));
      }
    }
    svg += "</g>\n";
  }
  // Flow arrows, from the waiter to what it waited for.
  std::map<std::pair<double, double>, double> row_y;
  for (const auto& [key, track] : rows) row_y[key] = track->y;
  for (const auto& [id, ends] : flows) {
    if (!flow_has_start[id] || !flow_has_end[id]) continue;
    if (row_y.count(ends.first.track) == 0 ||
        row_y.count(ends.second.track) == 0) {
      continue;
    }
    absl::StrAppend(
        &svg, absl::StrFormat("<line class=\"flow\" x1=\"%.2f\" y1=\"%.1f\" "
                              "x2=\"%.2f\" y2=\"%.1f\" stroke=\"#d93025\" "
                              "stroke-width=\"1.2\"/>\n",
                              x_of(ends.first.ts),
                              row_y[ends.first.track] + kLevelHeight / 2,
                              x_of(ends.second.ts),
                              row_y[ends.second.track] + kLevelHeight / 2));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tpu::tools
