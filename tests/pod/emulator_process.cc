#include "tests/pod/emulator_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tpu::pod_test {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return absl::StrCat(srcdir != nullptr ? srcdir : ".", "/software_tpu/", path);
}

std::string TmpDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

absl::StatusOr<std::unique_ptr<EmulatorProcess>> EmulatorProcess::Start(
    const std::string& binary, const std::string& name,
    const std::vector<std::string>& flags, absl::Duration timeout) {
  const std::string base = absl::StrCat(TmpDir(), "/", name);
  const std::string port_file = base + ".port";
  const std::string out_path = base + ".out";
  const std::string err_path = base + ".err";
  std::remove(port_file.c_str());
  std::vector<std::string> args = {binary, "--port=0",
                                   absl::StrCat("--port_file=", port_file)};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    // Child: dies with the test process; output to files.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) dup2(out, 1);
    if (err >= 0) dup2(err, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  std::unique_ptr<EmulatorProcess> process(new EmulatorProcess(pid, err_path));
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      process->reaped_ = true;
      return absl::InternalError(absl::StrCat(
          "tpu_emulator ", name, " exited early: ", ReadFile(err_path)));
    }
    int port = 0;
    std::string text(absl::StripAsciiWhitespace(ReadFile(port_file)));
    if (absl::SimpleAtoi(text, &port) && port > 0) {
      process->address_ = absl::StrCat("127.0.0.1:", port);
      return process;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("tpu_emulator ", name, " did not listen within ",
                   absl::FormatDuration(timeout), ": ", ReadFile(err_path)));
}

EmulatorProcess::~EmulatorProcess() { Kill(); }

void EmulatorProcess::Kill() {
  if (reaped_) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  reaped_ = true;
}

std::string EmulatorProcess::Stderr() const { return ReadFile(stderr_path_); }

}  // namespace tpu::pod_test
