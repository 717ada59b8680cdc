// Connecting to a worker that is not there, as users meet it: tpu_run against
// a port nothing listens on fails at once with a message that names the
// address and says what to do; a grpc+pod:// list with one dead worker names
// that worker; and --connect_timeout waits for a tpu_emulator that starts
// after the client began connecting.

#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/e2e/cli.h"
#include "tools/lib/ports.h"
#include "tools/lib/subprocess.h"

namespace tpu {
namespace {

using e2e::ConnectErrorLine;
using e2e::RefusedReason;
using e2e::TpuEmulatorPath;
using e2e::TpuRunPath;
using e2e::WriteTwiceXPlusOne;
using tools::ScratchDir;
using tools::ServerProcess;

int DeadPort() {
  absl::StatusOr<int> port = tools::UnusedLoopbackPort();
  EXPECT_TRUE(port.ok()) << port.status();
  return port.ok() ? *port : 1;
}

TEST(ConnectE2ETest, RefusedConnectionFailsAtOnceNamingTheAddress) {
  const int port = DeadPort();
  const std::string address = absl::StrCat("grpc://127.0.0.1:", port);
  // No timeout flags: the default connection_timeout is 30 s, and a refused
  // connection must not wait for it. The message proves it did not: waiting
  // would have ended in "no answer within 30s".
  EXPECT_EQ(e2e::TwiceXPlusOneError(address, "refused"),
            ConnectErrorLine(address, RefusedReason(absl::StrCat(
                                          "tpu_emulator --port=", port))));
}

TEST(ConnectE2ETest, PodWithOneDeadWorkerFailsAtOnceNamingIt) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> live = ServerProcess::Start(
      {TpuEmulatorPath(), "--port=0", "--chips=1"}, ScratchDir(), "pod_live");
  ASSERT_TRUE(live.ok()) << live.status();
  const int port = DeadPort();
  const std::string dead = absl::StrCat("grpc://127.0.0.1:", port);
  const std::string pod =
      absl::StrCat("grpc+pod://", (*live)->address(), ",127.0.0.1:", port);
  EXPECT_EQ(
      e2e::TwiceXPlusOneError(pod, "pod_dead"),
      absl::StrCat(
          "tpu_run: error: UNAVAILABLE: Could not open worker "
          "1 (",
          dead, "): Failed to connect to remote server at address: ", dead,
          ": ", RefusedReason(absl::StrCat("tpu_emulator --port=", port))));
}

TEST(ConnectE2ETest, ConnectTimeoutWaitsForAWorkerThatStartsLater) {
  const int port = DeadPort();
  const std::string dir = absl::StrCat(ScratchDir(), "/late_worker");
  const std::string module = WriteTwiceXPlusOne("late_worker");
  absl::StatusOr<std::unique_ptr<tools::Subprocess>> run =
      tools::Subprocess::Start(
          {TpuRunPath(), absl::StrCat("--target=grpc://127.0.0.1:", port),
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
      {TpuEmulatorPath(), absl::StrCat("--port=", port)}, dir, "late_emulator");
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
