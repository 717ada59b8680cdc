// tpu_ctl trace: records a timeline of what the worker's cores and clients
// did, as Chrome trace-event JSON (Perfetto, chrome://tracing) and, by
// itself, as an SVG picture. Against a worker of a pod slice, it traces
// every worker of the slice into one trace (a process per worker).

#include <stdio.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "tools/tpu_ctl/commands.h"
#include "tools/tpu_ctl/trace_svg.h"

ABSL_FLAG(std::string, out, "", "With `trace stop`: write the JSON here.");
ABSL_FLAG(std::string, svg, "",
          "With `trace stop` or `trace svg`: also draw the timeline here.");
ABSL_FLAG(std::string, in, "", "With `trace svg`: the trace JSON to draw.");
ABSL_FLAG(bool, trace_instructions, false,
          "With `trace start`: record every top-level instruction too.");

namespace tpu::tools {
namespace {

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    fprintf(stderr, "tpu_ctl: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

// Draws `json` into --svg if given; the exit code.
int MaybeDrawSvg(const std::string& json) {
  const std::string svg_path = absl::GetFlag(FLAGS_svg);
  if (svg_path.empty()) return 0;
  absl::StatusOr<std::string> svg = TraceJsonToSvg(json);
  if (!svg.ok()) {
    fprintf(stderr, "tpu_ctl: cannot draw the trace: %s\n",
            svg.status().ToString().c_str());
    return 1;
  }
  return WriteFile(svg_path, *svg) ? 0 : 1;
}

int Start(tpu_emulator::Control::Stub& stub, const std::string& target) {
  grpc::ClientContext context;
  SetDeadline(context);
  tpu_emulator::StartTraceRequest request;
  request.set_instructions(absl::GetFlag(FLAGS_trace_instructions));
  tpu_emulator::StartTraceResponse response;
  grpc::Status status = stub.StartTrace(&context, request, &response);
  if (!status.ok()) return CallFailed(target, "StartTrace", status);
  for (const std::string& note : response.notes()) {
    fprintf(stderr, "tpu_ctl: %s\n", note.c_str());
  }
  printf("tracing %s; `tpu_ctl trace stop --out=FILE` writes the trace\n",
         target.c_str());
  return 0;
}

int Stop(tpu_emulator::Control::Stub& stub, const std::string& target) {
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    return UsageError("`trace stop` needs --out=FILE for the trace JSON");
  }
  grpc::ClientContext context;
  SetDeadline(context);
  tpu_emulator::StopTraceResponse response;
  grpc::Status status =
      stub.StopTrace(&context, tpu_emulator::StopTraceRequest(), &response);
  if (!status.ok()) return CallFailed(target, "StopTrace", status);
  // Workers of the slice that are missing from the trace.
  for (const std::string& note : response.notes()) {
    fprintf(stderr, "tpu_ctl: %s\n", note.c_str());
  }
  if (!WriteFile(out, response.trace_json())) return 1;
  printf("wrote %s (%zu bytes); open it in https://ui.perfetto.dev\n",
         out.c_str(), response.trace_json().size());
  return MaybeDrawSvg(response.trace_json());
}

int Svg() {
  const std::string in = absl::GetFlag(FLAGS_in);
  if (in.empty() || absl::GetFlag(FLAGS_svg).empty()) {
    return UsageError("`trace svg` needs --in=TRACE.json and --svg=FILE.svg");
  }
  std::ifstream file(in, std::ios::binary);
  if (!file) {
    fprintf(stderr, "tpu_ctl: cannot read %s\n", in.c_str());
    return 1;
  }
  std::stringstream json;
  json << file.rdbuf();
  return MaybeDrawSvg(json.str());
}

}  // namespace

int TraceCommand(tpu_emulator::Control::Stub& stub, const std::string& target,
                 const std::vector<char*>& args) {
  const std::string verb = args.size() == 3 ? args[2] : "";
  if (verb == "start") return Start(stub, target);
  if (verb == "stop") return Stop(stub, target);
  if (verb == "svg") return Svg();
  return UsageError("`trace` takes one of start, stop or svg");
}

}  // namespace tpu::tools
