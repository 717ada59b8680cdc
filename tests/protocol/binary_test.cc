// The real tpu_emulator binary, as a user starts it: --port=0 with a port
// file, a hand-written protocol client end to end, SIGTERM for a graceful
// exit 0; bad flags give a one-line error and a non-zero exit.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "emulator/worker/test_programs.h"
#include "emulator/worker/test_requests.h"
#include "gtest/gtest.h"
#include "hlo/shape.h"
#include "tests/protocol/protocol_client.h"
#include "tools/lib/subprocess.h"

extern char** environ;

namespace tpu {
namespace {

using namespace emulator::test_requests;  // NOLINT

std::string BinaryPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return absl::StrCat(srcdir ? srcdir : ".",
                      "/software_tpu/tools/tpu_emulator/tpu_emulator");
}

std::string TempPath(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp ? tmp : "/tmp", "/", name, ".", getpid());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A child process that is always reaped: killed if still running at the end.
class Child {
 public:
  Child(std::vector<std::string> args, const std::string& out,
        const std::string& err) {
    std::vector<char*> argv;
    args.insert(args.begin(), BinaryPath());
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) !=
        0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Child() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool started() const { return pid_ > 0; }
  bool Running() {
    if (exited_) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      status_ = status;
    }
    return !exited_;
  }
  // Waits up to `timeout` for the exit; returns the wait status or -1.
  int Wait(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (Running() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    return exited_ ? status_ : -1;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

TEST(BinaryTest, ServesEndToEndAndShutsDownOnSigterm) {
  const std::string port_file = TempPath("port");
  const std::string out = TempPath("stdout");
  const std::string err = TempPath("stderr");
  unlink(port_file.c_str());
  Child child({"--port=0", "--port_file=" + port_file, "--chips=2",
               "--compute_threads=1", "--unknown_handle_wait_ms=2000",
               "--cores_per_chip=1", "--hbm_bytes_per_core=1048576"},
              out, err);
  ASSERT_TRUE(child.started());
  std::string port;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline && child.Running()) {
    port = ReadFile(port_file);
    if (!port.empty()) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_FALSE(port.empty()) << "no port file; stderr: " << ReadFile(err);
  port = std::string(absl::StripAsciiWhitespace(port));
  EXPECT_EQ(ReadFile(out),
            absl::StrCat("tpu_emulator listening on 127.0.0.1:", port, "\n"));

  auto stub = NewStub(absl::StrCat("127.0.0.1:", port));
  grpc::ClientContext info_context;
  tpu_driver::QuerySystemInfoResponse info;
  ASSERT_TRUE(stub->QuerySystemInfo(&info_context,
                                    tpu_driver::QuerySystemInfoRequest(), &info)
                  .ok());
  EXPECT_EQ(info.system_info().local_core_size(), 2);
  EXPECT_EQ(info.system_info().local_core(1).hbm_bytes_available(), 1048576);

  grpc::ClientContext open_context;
  tpu_driver::OpenResponse opened;
  ASSERT_TRUE(
      stub->Open(&open_context, tpu_driver::OpenRequest(), &opened).ok());
  const uint32_t c = opened.client_id();
  {
    ProtocolStream s(stub.get());
    const Shape f32 = Shape::Array(xla::F32, {4});
    s.Send({AllocShape(Id(c, 1), 1, f32), AllocShape(Id(c, 2), 1, f32),
            AllocShape(Id(c, 3), 1, f32),
            TransferTo(Id(c, 4), Id(c, 1), F32Bytes({1, 2, 3, 4})),
            TransferTo(Id(c, 5), Id(c, 2), F32Bytes({0.5f, 0.5f, -3, 100}))});
    s.Send({Compile(Id(c, 6), emulator::test_programs::AddF32(4)),
            Load(Id(c, 7), 1, Id(c, 6)),
            Execute(Id(c, 8), Id(c, 7), {Id(c, 1), Id(c, 2)}, {Id(c, 3)}, 1,
                    {Id(c, 4), Id(c, 5)}),
            TransferFrom(Id(c, 9), Id(c, 3), {Id(c, 8)})});
    auto r = s.Await(Id(c, 9), absl::Seconds(60));
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->status().code(), 0) << r->status().message();
    EXPECT_EQ(FromF32Bytes(r->transfer_from().data()),
              (std::vector<float>{1.5f, 2.5f, 0, 104}));
    EXPECT_TRUE(s.Finish().ok());
  }

  ASSERT_EQ(kill(child.pid(), SIGTERM), 0);
  const int status = child.Wait(absl::Seconds(30));
  ASSERT_NE(status, -1) << "did not exit after SIGTERM";
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Opens a client on the worker behind `stub`; 0 if Open failed.
uint32_t OpenClient(tpu_driver::CloudTpuDriver::Stub* stub) {
  grpc::ClientContext context;
  tpu_driver::OpenResponse opened;
  grpc::Status status =
      stub->Open(&context, tpu_driver::OpenRequest(), &opened);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return status.ok() ? opened.client_id() : 0;
}

// Free HBM of `core`, -1 if the query failed.
int64_t AvailableHbm(tpu_driver::CloudTpuDriver::Stub* stub, int core) {
  grpc::ClientContext context;
  tpu_driver::QuerySystemInfoResponse info;
  if (!stub->QuerySystemInfo(&context, tpu_driver::QuerySystemInfoRequest(),
                             &info)
           .ok()) {
    return -1;
  }
  for (const auto& c : info.system_info().local_core()) {
    if (c.id() == core) return c.hbm_bytes_available();
  }
  return -1;
}

TEST(BinaryTest, AStreamActsOnlyForTheClientItFirstUsed) {
  constexpr int64_t kHbm = 1 << 20;
  absl::StatusOr<std::unique_ptr<tools::ServerProcess>> server =
      tools::ServerProcess::Start(
          {BinaryPath(), "--port=0", "--chips=1", "--cores_per_chip=1",
           absl::StrCat("--hbm_bytes_per_core=", kHbm)},
          tools::ScratchDir(), "isolation");
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = NewStub((*server)->address());
  const uint32_t a = OpenClient(stub.get());
  const uint32_t b = OpenClient(stub.get());
  auto sa = std::make_unique<ProtocolStream>(stub.get());
  ProtocolStream sb(stub.get());
  sb.Send({AllocBytes(Id(b, 1), 0, 4), TransferTo(Id(b, 2), Id(b, 1), "BBBB")});
  ASSERT_EQ(sb.Code(Id(b, 2)), 0);
  sa->Send({AllocBytes(Id(a, 1), 0, 8)});
  ASSERT_EQ(sa->Code(Id(a, 1)), 0);
  // Client b's entries on a's stream: refused, even naming b's own handles.
  sa->Send({AllocBytes(Id(b, 3), 0, 1024), Dealloc(Id(b, 4), Id(b, 1)),
            TransferTo(Id(b, 5), Id(b, 1), "XXXX")});
  for (int op : {3, 4, 5}) {
    auto refused = sa->Await(Id(b, op));
    ASSERT_TRUE(refused.has_value()) << op;
    EXPECT_EQ(refused->status().code(),
              static_cast<int>(absl::StatusCode::kPermissionDenied));
    EXPECT_EQ(refused->status().message(),
              absl::StrCat("operation ", op, " (client ", b,
                           "): this stream belongs to client ", a,
                           "; a StreamExecute stream acts only for the client "
                           "whose id it first used. Open a stream of its own "
                           "for client ",
                           b, "."));
  }
  // b's state is untouched: nothing allocated, its buffer and bytes intact.
  EXPECT_EQ(AvailableHbm(stub.get(), 0), kHbm - 12);
  sb.Send({TransferFrom(Id(b, 6), Id(b, 1))});
  auto intact = sb.Await(Id(b, 6));
  ASSERT_TRUE(intact.has_value());
  ASSERT_EQ(intact->status().code(), 0) << intact->status().message();
  EXPECT_EQ(intact->transfer_from().data(), "BBBB");
  // Breaking a's stream releases a only, though it carried b's ids.
  sa.reset();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (AvailableHbm(stub.get(), 0) != kHbm - 4 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(AvailableHbm(stub.get(), 0), kHbm - 4);
  sb.Send({TransferFrom(Id(b, 7), Id(b, 1))});
  EXPECT_EQ(sb.Code(Id(b, 7)), 0);
  EXPECT_TRUE(sb.Finish().ok());
}

TEST(BinaryTest, BadFlagsGiveOneLineErrorAndNonZeroExit) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"--no_such_flag=1"},
           {"--port=seventy"},
           {"--chips=0", "--port=0"},
           {"--port=70000"},
           {"--pod_hosts=2", "--host_id=2", "--port=0"}}) {
    const std::string out = TempPath("bad_stdout");
    const std::string err = TempPath("bad_stderr");
    Child child(args, out, err);
    ASSERT_TRUE(child.started());
    const int status = child.Wait(absl::Seconds(30));
    ASSERT_NE(status, -1) << args[0];
    ASSERT_TRUE(WIFEXITED(status)) << args[0];
    EXPECT_NE(WEXITSTATUS(status), 0) << args[0];
    const std::string message = ReadFile(err);
    EXPECT_FALSE(message.empty()) << args[0];
    EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1)
        << args[0] << ": " << message;
  }
}

}  // namespace
}  // namespace tpu
