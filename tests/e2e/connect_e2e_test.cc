// Connecting to a worker that is not there, as users meet it: tpu_run against
// a port nothing listens on fails at once with a message that names the
// address and says what to do; a grpc+pod:// list with one dead worker names
// that worker; and --connect_timeout waits for a tpu_emulator that starts
// after the client began connecting.

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/e2e/programs.h"
#include "tools/lib/ports.h"
#include "tools/lib/subprocess.h"

namespace tpu {
namespace {

namespace fs = std::filesystem;
using tools::CommandResult;
using tools::RunfilePath;
using tools::ScratchDir;
using tools::ServerProcess;

std::string Emulator() {
  return RunfilePath("tools/tpu_emulator/tpu_emulator");
}
std::string TpuRun() { return RunfilePath("tools/tpu_run/tpu_run"); }

// The HLO text module tpu_run runs, in a fresh directory of the test's own.
std::string WriteModule(const std::string& test) {
  const std::string dir = absl::StrCat(ScratchDir(), "/", test);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = absl::StrCat(dir, "/module.hlo");
  std::ofstream(path) << e2e::kTwiceXPlusOne;
  return path;
}

int DeadPort() {
  absl::StatusOr<int> port = tools::UnusedLoopbackPort();
  EXPECT_TRUE(port.ok()) << port.status();
  return port.ok() ? *port : 1;
}

// The one error line tpu_run printed, without gRPC's own words after it
// (they differ between gRPC versions).
std::string ErrorLineBeforeGrpc(const CommandResult& result) {
  std::vector<std::string> lines =
      absl::StrSplit(result.err, '\n', absl::SkipEmpty());
  if (lines.size() != 1) return absl::StrCat("not one line: ", result.err);
  const size_t grpc = lines[0].find(" Error from gRPC: ");
  return grpc == std::string::npos ? lines[0] : lines[0].substr(0, grpc);
}

std::string RefusedMessage(const std::string& address, int port) {
  return absl::StrCat(
      "Failed to connect to remote server at address: ", address,
      ": the connection was refused; no TPU worker is serving there. Start "
      "one (tpu_emulator --port=",
      port,
      "), check the address (--target), or wait for a worker that is still "
      "starting with a connect timeout (--connect_timeout).");
}

TEST(ConnectE2ETest, RefusedConnectionFailsAtOnceNamingTheAddress) {
  const int port = DeadPort();
  const std::string address = absl::StrCat("grpc://127.0.0.1:", port);
  // No timeout flags: the default connection_timeout is 30 s, and a refused
  // connection must not wait for it. The message proves it did not: waiting
  // would have ended in "no answer within 30s".
  absl::StatusOr<CommandResult> result = tools::RunCommand(
      {TpuRun(), absl::StrCat("--target=", address),
       absl::StrCat("--module=", WriteModule("refused")), "--random_inputs"},
      absl::Seconds(120));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 1);
  EXPECT_EQ(ErrorLineBeforeGrpc(*result),
            absl::StrCat("tpu_run: error: UNAVAILABLE: ",
                         RefusedMessage(address, port)));
}

TEST(ConnectE2ETest, PodWithOneDeadWorkerFailsAtOnceNamingIt) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> live = ServerProcess::Start(
      {Emulator(), "--port=0", "--chips=1"}, ScratchDir(), "pod_live");
  ASSERT_TRUE(live.ok()) << live.status();
  const int port = DeadPort();
  const std::string dead = absl::StrCat("grpc://127.0.0.1:", port);
  absl::StatusOr<CommandResult> result = tools::RunCommand(
      {TpuRun(),
       absl::StrCat("--target=grpc+pod://", (*live)->address(),
                    ",127.0.0.1:", port),
       absl::StrCat("--module=", WriteModule("pod_dead")), "--random_inputs"},
      absl::Seconds(120));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 1);
  EXPECT_EQ(ErrorLineBeforeGrpc(*result),
            absl::StrCat("tpu_run: error: UNAVAILABLE: Could not open worker "
                         "1 (",
                         dead, "): ", RefusedMessage(dead, port)));
}

TEST(ConnectE2ETest, ConnectTimeoutWaitsForAWorkerThatStartsLater) {
  const int port = DeadPort();
  const std::string dir = absl::StrCat(ScratchDir(), "/late_worker");
  const std::string module = WriteModule("late_worker");
  absl::StatusOr<std::unique_ptr<tools::Subprocess>> run =
      tools::Subprocess::Start(
          {TpuRun(), absl::StrCat("--target=grpc://127.0.0.1:", port),
           absl::StrCat("--module=", module), "--random_inputs",
           "--connect_timeout=120s"},
          dir + "/tpu_run.out", dir + "/tpu_run.err");
  ASSERT_TRUE(run.ok()) << run.status();
  // Let tpu_run start and be refused a few times before the worker exists.
  absl::SleepFor(absl::Milliseconds(500));
  ASSERT_FALSE((*run)->Wait(absl::ZeroDuration()).ok())
      << "tpu_run gave up on the worker before it started: "
      << tools::ReadFileOrEmpty(dir + "/tpu_run.err");

  absl::StatusOr<std::unique_ptr<ServerProcess>> worker = ServerProcess::Start(
      {Emulator(), absl::StrCat("--port=", port)}, dir, "late_emulator");
  ASSERT_TRUE(worker.ok()) << worker.status();
  absl::StatusOr<int> code = (*run)->Wait(absl::Seconds(120));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << tools::ReadFileOrEmpty(dir + "/tpu_run.err");
  EXPECT_TRUE(absl::StrContains(tools::ReadFileOrEmpty(dir + "/tpu_run.out"),
                                "replica 0"))
      << tools::ReadFileOrEmpty(dir + "/tpu_run.out");
  (*worker)->process().Stop(SIGTERM, absl::Seconds(10));
}

}  // namespace
}  // namespace tpu
