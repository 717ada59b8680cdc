#include "proto/wait_report_dot.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tpu::wire {
namespace {

using tpu_emulator::CoreWait;

// A DOT double-quoted string; "\n" becomes a centred line break.
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      out += c;
    }
  }
  return out + "\"";
}

std::string NodeId(int core) { return absl::StrCat("core", core); }

std::string NodeLabel(const CoreWait& core) {
  std::string label = absl::StrCat("core ", core.core());
  if (core.host_id() != 0)
    absl::StrAppend(&label, " (host ", core.host_id(), ")");
  switch (core.activity()) {
    case CoreWait::RUNNING:
      absl::StrAppend(&label, "\nrunning ", core.program(), " #",
                      core.launch());
      break;
    case CoreWait::WAITING:
      absl::StrAppend(&label, "\nwaiting in ", core.program(), " #",
                      core.launch());
      break;
    default:
      absl::StrAppend(&label, "\nidle");
  }
  if (core.queued() > 0)
    absl::StrAppend(&label, "\n", core.queued(), " queued");
  return label;
}

const char* NodeColor(CoreWait::Activity activity) {
  switch (activity) {
    case CoreWait::RUNNING:
      return "palegreen";
    case CoreWait::WAITING:
      return "lightsalmon";
    default:
      return "lightgrey";
  }
}

}  // namespace

std::string WaitReportToDot(const tpu_emulator::WaitReport& report) {
  // Edges that lie on a cycle: (from, to) for consecutive cores of a cycle.
  std::set<std::pair<int, int>> cycle_edges;
  std::vector<std::string> cycle_names;
  for (const tpu_emulator::Cycle& cycle : report.cycles()) {
    const int n = cycle.cores_size();
    for (int i = 0; i < n; ++i) {
      cycle_edges.insert({cycle.cores(i), cycle.cores((i + 1) % n)});
    }
    std::vector<std::string> names;
    for (int core : cycle.cores()) names.push_back(absl::StrCat("core ", core));
    if (n > 0) names.push_back(absl::StrCat("core ", cycle.cores(0)));
    cycle_names.push_back(absl::StrJoin(names, " -> "));
  }

  std::string dot = "digraph waits {\n  rankdir=LR;\n";
  std::string title = "who waits for whom";
  if (!cycle_names.empty()) {
    absl::StrAppend(&title, "\ndeadlock: ", absl::StrJoin(cycle_names, "; "));
  }
  absl::StrAppend(&dot, "  label=", Quoted(title),
                  "; labelloc=t; fontname=\"Helvetica\";\n",
                  "  node [shape=box, style=\"rounded,filled\", "
                  "fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", "
                  "fontsize=10];\n");

  std::set<int> drawn;
  for (const CoreWait& core : report.cores()) {
    bool waited_for = false;
    for (const CoreWait& other : report.cores()) {
      for (int w : other.waiting_for()) waited_for |= w == core.core();
    }
    if (core.activity() == CoreWait::IDLE && !waited_for) continue;
    drawn.insert(core.core());
    absl::StrAppend(&dot, "  ", NodeId(core.core()),
                    " [label=", Quoted(NodeLabel(core)),
                    ", fillcolor=", NodeColor(core.activity()), "];\n");
  }
  for (const CoreWait& core : report.cores()) {
    if (core.activity() != CoreWait::WAITING) continue;
    for (int missing : core.waiting_for()) {
      if (drawn.count(missing) == 0) {
        // A member outside this report (e.g. another worker's core).
        drawn.insert(missing);
        absl::StrAppend(&dot, "  ", NodeId(missing), " [label=",
                        Quoted(absl::StrCat("core ", missing, "\nnot here")),
                        ", fillcolor=white];\n");
      }
      const bool on_cycle = cycle_edges.count({core.core(), missing}) > 0;
      const std::string label =
          absl::StrCat(core.program(), " #", core.launch(), "\n", core.kind(),
                       " ", core.instruction());
      absl::StrAppend(
          &dot, "  ", NodeId(core.core()), " -> ", NodeId(missing),
          " [label=", Quoted(label),
          on_cycle ? ", color=red, fontcolor=red, penwidth=2.5" : "", "];\n");
    }
  }
  dot += "}\n";
  return dot;
}

}  // namespace tpu::wire
