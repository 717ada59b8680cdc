// tpu_replay: replays a recording of a TPU driver session against any
// target and tells whether it still behaves as recorded.
//
//   tpu_replay --log=PATH --target=ADDRESS [--stop_at_first_failure]
//              [--timeout=5m] [--fault='RULE']...
//
// The log is what record://|file=PATH|worker=... or tpu_emulator
// --record_dir wrote (TensorFlow's recording format; proto/recording.h).
// Every operation runs with its recorded dependencies and data; each one
// that fails is printed with its status. If PATH.results exists (written by
// the same recorders), the first operation whose status code or
// transfer_from bytes differ from the recording is printed too.
//
// Each --fault rule is added to the target's fault rules (its control
// service; grpc:// targets only) before the replay starts, so a recorded
// session becomes a reproduction of a failure. The rules stay on the worker
// afterwards (`tpu_ctl faults clear` removes them).
//
// Exit code: 0 when every operation succeeded, or, with PATH.results, when
// every result matched the recording; 1 otherwise; 2 when the log cannot be
// read (a truncated or corrupt log is named with the byte offset) or the
// target cannot be opened.

#include <stdio.h>

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "driver/driver_registry.h"
#include "driver/record/replay.h"
#include "proto/control_call.h"
#include "proto/json_quote.h"
#include "tools/lib/repeated_flag.h"

ABSL_FLAG(std::string, log, "",
          "The recording to replay (record:// file= or a --record_dir file).");
ABSL_FLAG(std::string, target, "",
          "Driver address to replay against: grpc://HOST:PORT, local://, "
          "grpc+pod://A,B, ...");
ABSL_FLAG(bool, stop_at_first_failure, false,
          "Run one operation at a time and stop at the first that fails.");
ABSL_FLAG(absl::Duration, timeout, absl::Minutes(5),
          "How long one operation may take before it is reported "
          "DEADLINE_EXCEEDED.");

namespace {

int Fail(const std::string& message) {
  fprintf(stderr, "tpu_replay: error: %s\n", message.c_str());
  return 2;
}

// Adds `rules` to the fault rules of the worker at `target`, printing each
// with its number.
absl::Status AddFaults(const std::string& target,
                       const std::vector<std::string>& rules) {
  if (rules.empty()) return absl::OkStatus();
  if (!absl::StartsWith(target, "grpc://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--fault needs a grpc:// target (a tpu_emulator's control service), "
        "not '",
        target, "'"));
  }
  for (const std::string& rule : rules) {
    absl::StatusOr<std::string> added = tpu::wire::CallControl(
        target, "AddFault",
        absl::StrCat("{\"rule\": ", tpu::wire::JsonQuote(rule), "}"),
        absl::Seconds(10));
    if (!added.ok()) {
      return absl::Status(added.status().code(),
                          absl::StrCat("--fault='", rule, "' on ", target, ": ",
                                       added.status().message()));
    }
    printf("fault rule on %s: %s\n", target.c_str(), rule.c_str());
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Replays a TPU driver recording against a target.\nUsage: tpu_replay "
      "--log=PATH --target=ADDRESS [--stop_at_first_failure] [--timeout=5m] "
      "[--fault='RULE']...");
  const std::vector<std::string> faults =
      tpu::tools::TakeRepeatedFlag("fault", &argc, argv);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    return Fail(
        absl::StrCat("unexpected argument '", positional[1], "'; see --help."));
  }
  const std::string log = absl::GetFlag(FLAGS_log);
  const std::string target = absl::GetFlag(FLAGS_target);
  if (log.empty() || target.empty()) {
    return Fail("--log=PATH and --target=ADDRESS are both required.");
  }

  absl::StatusOr<tpu::driver::RecordedEntries> entries =
      tpu::driver::ReadRecordedEntries(log);
  if (!entries.ok()) return Fail(entries.status().ToString());
  std::optional<tpu::driver::RecordedResults> recorded;
  const std::string results_path = absl::StrCat(log, tpu::kResultsSuffix);
  absl::StatusOr<tpu::driver::RecordedResults> results =
      tpu::driver::ReadRecordedResults(results_path);
  if (results.ok()) {
    recorded = *std::move(results);
  } else if (results.status().code() != absl::StatusCode::kNotFound) {
    return Fail(results.status().ToString());
  }

  absl::StatusOr<std::unique_ptr<tpu::driver::TpuDriver>> driver =
      tpu::driver::DriverRegistry::Open(target);
  if (!driver.ok()) return Fail(driver.status().ToString());
  if (absl::Status added = AddFaults(target, faults); !added.ok()) {
    return Fail(added.ToString());
  }

  tpu::driver::ReplayOptions options;
  options.stop_at_first_failure = absl::GetFlag(FLAGS_stop_at_first_failure);
  options.operation_timeout = absl::GetFlag(FLAGS_timeout);
  tpu::driver::ReplayReport report =
      tpu::driver::Replay(**driver, *entries, options);
  driver->reset();  // ends the session before reporting

  for (const tpu::driver::ReplayedOperation& op : report.operations) {
    if (op.status.ok()) continue;
    printf("%s failed: %s\n", tpu::driver::DescribeOperation(op).c_str(),
           op.status.ToString().c_str());
  }
  printf("replayed %zu of %zu operations from %s: %d failed%s\n",
         report.operations.size(), entries->size(), log.c_str(), report.failed,
         report.stopped_early ? " (stopped at the first failure)" : "");
  if (!recorded.has_value()) {
    printf("no %s: results not compared\n", results_path.c_str());
    return report.failed == 0 ? 0 : 1;
  }
  std::optional<std::string> difference =
      tpu::driver::FirstDifference(report, *recorded);
  if (difference.has_value()) {
    printf("first difference from the recording: %s\n", difference->c_str());
    return 1;
  }
  printf("every result matches the recording (%s)\n", results_path.c_str());
  return report.stopped_early ? 1 : 0;
}
