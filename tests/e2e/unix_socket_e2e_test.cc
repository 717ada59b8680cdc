// The local fast path end to end: tpu_emulator --unix_socket=PATH serves the
// same protocol on a Unix domain socket beside its TCP port, and tpu_run
// reaches it as grpc://unix:PATH; a path nobody serves, or one already
// served, gets a message that says what to do.

#include <signal.h>
#include <stdlib.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/e2e/cli.h"
#include "tools/lib/subprocess.h"

namespace tpu {
namespace {

using e2e::TpuEmulatorPath;
using e2e::TpuRunPath;
using tools::CommandResult;
using tools::ServerProcess;

// A short directory of our own: TEST_TMPDIR can be longer than the 107 bytes
// a socket address holds.
std::string ShortDir() {
  char dir[] = "/tmp/unix_e2e.XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  return dir;
}

CommandResult RunModule(const std::string& target) {
  return e2e::RunTwiceXPlusOne(target, "unix");
}

TEST(UnixSocketE2ETest, TpuRunReachesTheWorkerOverItsUnixSocket) {
  const std::string dir = ShortDir();
  const std::string socket = dir + "/tpu.sock";
  absl::StatusOr<std::unique_ptr<ServerProcess>> worker =
      ServerProcess::Start({TpuEmulatorPath(), "--port=0", "--chips=1",
                            absl::StrCat("--unix_socket=", socket)},
                           dir, "emulator");
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_EQ(tools::ReadFileOrEmpty(dir + "/emulator.out"),
            absl::StrCat("tpu_emulator listening on 127.0.0.1:",
                         (*worker)->port(), " and unix:", socket, "\n"));
  const std::string target = absl::StrCat("grpc://unix:", socket);
  CommandResult unix_run = RunModule(target);
  EXPECT_EQ(unix_run.exit_code, 0) << unix_run.err;
  // Same program, same worker, over TCP: the same answer.
  CommandResult tcp_run =
      RunModule(absl::StrCat("grpc://", (*worker)->address()));
  EXPECT_EQ(tcp_run.exit_code, 0) << tcp_run.err;
  EXPECT_TRUE(absl::StrContains(unix_run.out, "replica 0 out_0: f32[4]"))
      << unix_run.out;
  EXPECT_EQ(unix_run.out, tcp_run.out);

  // A second worker may not take the socket over.
  CommandResult second = e2e::RunToCompletion(
      {TpuEmulatorPath(), "--port=0", absl::StrCat("--unix_socket=", socket)});
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_EQ(second.err,
            absl::StrCat("tpu_emulator: UNAVAILABLE: A server is already "
                         "listening on Unix socket \"",
                         socket,
                         "\". Stop it or pick another --unix_socket path.\n"));

  // Once the worker is gone, clients are told what to do.
  EXPECT_EQ((*worker)->process().Stop(SIGTERM, absl::Seconds(30)), 0);
  EXPECT_EQ(e2e::TwiceXPlusOneError(target, "unix"),
            e2e::ConnectErrorLine(target,
                                  e2e::RefusedReason(absl::StrCat(
                                      "tpu_emulator --unix_socket=", socket))));
}

TEST(UnixSocketE2ETest, ASocketLeftByAKilledWorkerIsReused) {
  const std::string dir = ShortDir();
  const std::string socket = dir + "/tpu.sock";
  const std::vector<std::string> argv = {
      TpuEmulatorPath(), "--port=0", "--chips=1",
      absl::StrCat("--unix_socket=", socket)};
  absl::StatusOr<std::unique_ptr<ServerProcess>> killed =
      ServerProcess::Start(argv, dir, "killed");
  ASSERT_TRUE(killed.ok()) << killed.status();
  (*killed)->Kill();  // SIGKILL: the socket file stays behind.
  absl::StatusOr<std::unique_ptr<ServerProcess>> next =
      ServerProcess::Start(argv, dir, "next");
  ASSERT_TRUE(next.ok()) << next.status();
  CommandResult run = RunModule(absl::StrCat("grpc://unix:", socket));
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

}  // namespace
}  // namespace tpu
