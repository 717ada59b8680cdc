// tpu_ctl: asks a running tpu_emulator what it is doing, through its control
// service (proto/control.proto, on the same port as the TPU protocol).
//
//   tpu_ctl --target=HOST:PORT waits [--format=text|json|dot] [--history=N]
//   tpu_ctl --target=HOST:PORT faults add 'RULE' | list | clear
//   tpu_ctl --target=HOST:PORT trace start [--trace_instructions]
//   tpu_ctl --target=HOST:PORT trace stop --out=FILE.json [--svg=FILE.svg]
//   tpu_ctl trace svg --in=FILE.json --svg=FILE.svg
//   tpu_ctl --target=HOST:PORT stats [--format=text|json]
//   tpu_ctl --target=HOST:PORT top [--iterations=N]
//   tpu_ctl --target=HOST:PORT profile [PROGRAM] [--top=N]
//
// `waits` prints, per core, what it runs or which collective it waits in and
// for which cores, what those do instead, and the wait-for cycles.
// Exit codes: 0 on success, 1 when the worker cannot be reached or answers
// with an error, 2 for bad usage.

#include <limits.h>
#include <stdio.h>

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/control.grpc.pb.h"
#include "proto/wait_report_dot.h"
#include "proto/wait_report_text.h"
#include "tools/tpu_ctl/commands.h"
#include "tools/tpu_ctl/faults_command.h"

ABSL_FLAG(std::string, target, "127.0.0.1:8470",
          "The worker: HOST:PORT (a grpc:// prefix is accepted).");
ABSL_FLAG(std::string, format, "text",
          "text or json (and dot for `waits`: the wait-for graph for "
          "Graphviz).");
ABSL_FLAG(int, history, 0,
          "With `waits`: also list each core's last N collectives.");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(10),
          "How long to wait for the worker's answer.");

namespace {

int Usage(const std::string& message) {
  fprintf(stderr,
          "tpu_ctl: %s\nUsage: tpu_ctl --target=HOST:PORT waits "
          "[--format=text|json|dot] [--history=N]\n"
          "       tpu_ctl --target=HOST:PORT faults add 'RULE' | list | "
          "clear\n"
          "       tpu_ctl --target=HOST:PORT trace start "
          "[--trace_instructions]\n"
          "       tpu_ctl --target=HOST:PORT trace stop --out=FILE.json "
          "[--svg=FILE.svg]\n"
          "       tpu_ctl trace svg --in=FILE.json --svg=FILE.svg\n"
          "       tpu_ctl --target=HOST:PORT stats [--format=text|json]\n"
          "       tpu_ctl --target=HOST:PORT top [--iterations=N]\n"
          "       tpu_ctl --target=HOST:PORT profile [PROGRAM] [--top=N]\n",
          message.c_str());
  return 2;
}

int Waits(tpu_emulator::Control::Stub& stub, const std::string& target) {
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "text" && format != "json" && format != "dot") {
    return Usage(
        absl::StrCat("--format must be text, json or dot, not '", format, "'"));
  }
  grpc::ClientContext context;
  context.set_deadline(
      std::chrono::system_clock::now() +
      absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_timeout)));
  tpu_emulator::GetWaitReportRequest request;
  request.set_history(absl::GetFlag(FLAGS_history));
  tpu_emulator::WaitReport report;
  grpc::Status status = stub.GetWaitReport(&context, request, &report);
  if (!status.ok()) {
    fprintf(stderr,
            "tpu_ctl: %s did not answer GetWaitReport: %s (is tpu_emulator "
            "running there? check --target)\n",
            target.c_str(), status.error_message().c_str());
    return 1;
  }
  const std::string text =
      format == "json"  ? tpu::wire::WaitReportToJson(report)
      : format == "dot" ? tpu::wire::WaitReportToDot(report)
                        : tpu::wire::FormatWaitReport(report);
  fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Asks a running tpu_emulator what it is doing.\nUsage: tpu_ctl "
      "--target=HOST:PORT waits|faults|trace|stats|top|profile ... (see the "
      "header of tools/tpu_ctl/main.cc)");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) {
    return Usage(
        "expected a command: waits, faults, trace, stats, top or profile");
  }
  std::string target = absl::GetFlag(FLAGS_target);
  if (absl::StartsWith(target, "grpc://")) target = target.substr(7);
  // A trace of a long run (or of a whole slice) is larger than gRPC's
  // default 4 MB limit on a received message.
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(INT_MAX);
  auto channel = grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), channel_args);
  auto stub = tpu_emulator::Control::NewStub(channel);
  const std::string command = args[1];
  if (command == "waits") {
    if (args.size() != 2) return Usage("`waits` takes no arguments");
    return Waits(*stub, target);
  }
  if (command == "faults") {
    return tpu::tools::RunFaultsCommand(
        *stub, target, std::vector<std::string>(args.begin() + 2, args.end()),
        absl::GetFlag(FLAGS_timeout));
  }
  // What the emulated TPU did: tools/tpu_ctl/*_command.cc.
  if (command == "trace") return tpu::tools::TraceCommand(*stub, target, args);
  if (command == "stats") return tpu::tools::StatsCommand(*stub, target);
  if (command == "top") return tpu::tools::TopCommand(*stub, target);
  if (command == "profile") {
    return tpu::tools::ProfileCommand(*stub, target, args);
  }
  return Usage(absl::StrCat("unknown command '", command, "'"));
}
