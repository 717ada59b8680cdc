// tpu_ctl stats and top: what each core and client of the worker holds and
// did, once or refreshed every second.

#include <stdio.h>
#include <unistd.h>

#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "tools/tpu_ctl/commands.h"
#include "tools/tpu_ctl/stats_text.h"

ABSL_DECLARE_FLAG(std::string, format);
ABSL_FLAG(int, iterations, 0,
          "With `top`: stop after N refreshes (0: until interrupted).");

namespace tpu::tools {
namespace {

bool GetStats(tpu_emulator::Control::Stub& stub, const std::string& target,
              tpu_emulator::WorkerStats* stats, int* exit_code) {
  grpc::ClientContext context;
  SetDeadline(context);
  grpc::Status status =
      stub.GetStats(&context, tpu_emulator::GetStatsRequest(), stats);
  if (!status.ok()) {
    *exit_code = CallFailed(target, "GetStats", status);
    return false;
  }
  return true;
}

}  // namespace

int StatsCommand(tpu_emulator::Control::Stub& stub, const std::string& target) {
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "text" && format != "json") {
    return UsageError(absl::StrCat(
        "`stats` prints text or json; --format=", format, " is neither"));
  }
  tpu_emulator::WorkerStats stats;
  int exit_code = 0;
  if (!GetStats(stub, target, &stats, &exit_code)) return exit_code;
  std::string text;
  if (format == "json") {
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.always_print_primitive_fields = true;
    (void)google::protobuf::util::MessageToJsonString(stats, &text, options);
    text += "\n";
  } else {
    text = FormatStats(stats);
  }
  fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int TopCommand(tpu_emulator::Control::Stub& stub, const std::string& target) {
  const int iterations = absl::GetFlag(FLAGS_iterations);
  if (iterations < 0) return UsageError("--iterations must be >= 0");
  // Redraw in place on a terminal; frames one after another otherwise.
  const bool terminal = isatty(fileno(stdout));
  for (int i = 0; iterations == 0 || i < iterations; ++i) {
    if (i > 0) absl::SleepFor(absl::Seconds(1));
    tpu_emulator::WorkerStats stats;
    int exit_code = 0;
    if (!GetStats(stub, target, &stats, &exit_code)) return exit_code;
    std::string frame = terminal ? "\033[H\033[2J" : (i > 0 ? "\n" : "");
    absl::StrAppend(
        &frame, "tpu_ctl top ", target, "  ",
        absl::FormatTime("%H:%M:%S", absl::Now(), absl::LocalTimeZone()), "\n",
        FormatStats(stats));
    fwrite(frame.data(), 1, frame.size(), stdout);
    fflush(stdout);
  }
  return 0;
}

}  // namespace tpu::tools
