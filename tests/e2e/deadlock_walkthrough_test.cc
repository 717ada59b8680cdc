// The README's "Reproduce a deadlock" walkthrough, run as written three
// times against fresh workers: the same warnings, the same deadline and the
// same cycle in `tpu_ctl waits` every time (durations and ports aside).

#include <signal.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tools/lib/subprocess.h"

namespace tpu {
namespace {

// What one run prints, with "for 1.23 s" wait times and the worker's port
// replaced: they are the only parts that differ between runs.
constexpr char kExpected[] =
    R"(compiled step_a and step_b: 2 replicas (cores 0 and 1), one all-reduce each
launched: core 0 runs step_a then step_b; core 1 runs step_b then step_a
warning: TPU Execute is taking a long time. This might be due to a deadlock between multiple TPU cores or a very slow program.
warning: TPU Execute is taking a long time. This might be due to a deadlock between multiple TPU cores or a very slow program.
warning: TPU Execute is taking a long time. This might be due to a deadlock between multiple TPU cores or a very slow program.
error: DEADLINE_EXCEEDED: TPU program took more than 1 seconds to complete.
holding the deadlocked cores until interrupted; look with: tpu_ctl --target=grpc://HOST:PORT waits
$ tpu_ctl --target=HOST:PORT waits
core 0 (host 0): waiting program step_a launch 0 (client 1) in all-reduce ar_a [s32[1]] with group {0,1} for T s
  waiting for core 1
    core 1 waits in step_b launch 0 at all-reduce ar_b [s32[1]]: a different program
  1 more program(s) queued behind it
core 1 (host 0): waiting program step_b launch 0 (client 1) in all-reduce ar_b [s32[1]] with group {0,1} for T s
  waiting for core 0
    core 0 waits in step_a launch 0 at all-reduce ar_a [s32[1]]: a different program
  1 more program(s) queued behind it
deadlock: core 0 waits for core 1 waits for core 0
$ tpu_ctl --target=HOST:PORT faults list
rule 1: execute core=1 nth=1 delay=200ms (matched 1)
)";

std::string Normalize(std::string text) {
  text = std::regex_replace(text, std::regex("for [0-9.e+-]+ s"), "for T s");
  return std::regex_replace(text, std::regex("127\\.0\\.0\\.1:[0-9]+"),
                            "HOST:PORT");
}

// One run of the walkthrough against a fresh worker; returns everything the
// user would see on their terminal.
std::string RunWalkthrough(int run) {
  const std::string dir = tools::ScratchDir();
  const std::string name = absl::StrCat("walkthrough_", run);
  // 1. The worker, with the delay rule that fixes who waits first.
  auto worker = tools::ServerProcess::Start(
      {tools::RunfilePath("tools/tpu_emulator/tpu_emulator"), "--port=0",
       "--fault=execute core=1 nth=1 delay=200ms"},
      dir, name);
  EXPECT_TRUE(worker.ok()) << worker.status();
  if (!worker.ok()) return "";
  const std::string address = (*worker)->address();
  // 2. The two programs in opposite orders, holding the deadlock.
  const std::string out = absl::StrCat(dir, "/", name, ".demo.out");
  auto demo = tools::Subprocess::Start(
      {tools::RunfilePath("tools/deadlock_demo/deadlock_demo"),
       absl::StrCat("--target=grpc://", address), "--warn_interval=300ms",
       "--max_time=1s", "--hold"},
      out, absl::StrCat(dir, "/", name, ".demo.err"));
  EXPECT_TRUE(demo.ok()) << demo.status();
  if (!demo.ok()) return "";
  std::string transcript;
  for (int attempt = 0; attempt < 1200; ++attempt) {
    transcript = tools::ReadFileOrEmpty(out);
    if (absl::StrContains(transcript, "look with: tpu_ctl")) break;
    absl::SleepFor(absl::Milliseconds(25));
  }
  // 3. What the worker says about it.
  const std::string tpu_ctl = tools::RunfilePath("tools/tpu_ctl/tpu_ctl");
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"waits"},
        std::vector<std::string>{"faults", "list"}}) {
    std::vector<std::string> argv = {tpu_ctl,
                                     absl::StrCat("--target=", address)};
    argv.insert(argv.end(), command.begin(), command.end());
    auto result = tools::RunCommand(argv, absl::Seconds(30));
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return "";
    EXPECT_EQ(result->exit_code, 0) << result->err;
    absl::StrAppend(&transcript, "$ tpu_ctl --target=", address, " ",
                    absl::StrJoin(command, " "), "\n", result->out);
  }
  EXPECT_EQ((*demo)->Stop(SIGTERM, absl::Seconds(30)), 1);
  return Normalize(transcript);
}

TEST(DeadlockWalkthroughTest, ThreeRunsGiveTheSameOutput) {
  std::vector<std::string> runs;
  for (int run = 0; run < 3; ++run) runs.push_back(RunWalkthrough(run));
  EXPECT_EQ(runs[0], kExpected);
  EXPECT_EQ(runs[1], runs[0]);
  EXPECT_EQ(runs[2], runs[0]);
}

}  // namespace
}  // namespace tpu
