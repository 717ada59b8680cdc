#include "tools/lib/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tpu::tools {
namespace {

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string TempPath(absl::string_view name) {
  static std::atomic<int> counter{0};
  return absl::StrCat(ScratchDir(), "/", name, "_", getpid(), "_", counter++);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    const std::vector<std::string>& argv, const std::string& stdout_path,
    const std::string& stderr_path) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Child: die with the test, write output to the files, exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int out = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, 1);
    dup2(err, 2);
    int null_in = open("/dev/null", O_RDONLY);
    if (null_in >= 0) dup2(null_in, 0);
    execv(args[0], args.data());
    _exit(127);
  }
  return std::unique_ptr<Subprocess>(new Subprocess(pid));
}

Subprocess::~Subprocess() {
  if (!reaped_) Stop(SIGKILL, absl::Seconds(10));
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  if (reaped_) return exit_code_;
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t got = waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      reaped_ = true;
      exit_code_ = ExitCode(status);
      return exit_code_;
    }
    if (got < 0 && errno != EINTR) {
      reaped_ = true;
      return absl::InternalError(
          absl::StrCat("waitpid: ", std::strerror(errno)));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("process ", pid_, " still running after ",
                       absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
}

int Subprocess::Stop(int signal, absl::Duration timeout) {
  if (reaped_) return exit_code_;
  kill(pid_, signal);
  absl::StatusOr<int> code = Wait(timeout);
  if (code.ok()) return *code;
  kill(pid_, SIGKILL);
  code = Wait(absl::Seconds(30));
  return code.ok() ? *code : -1;
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    std::vector<std::string> argv, const std::string& dir,
    const std::string& name, absl::Duration timeout) {
  const std::string base = absl::StrCat(dir, "/", name);
  const std::string port_file = base + ".port";
  const std::string err_path = base + ".err";
  std::remove(port_file.c_str());
  argv.push_back(absl::StrCat("--port_file=", port_file));
  absl::StatusOr<std::unique_ptr<Subprocess>> process =
      Subprocess::Start(argv, base + ".out", err_path);
  if (!process.ok()) return process.status();
  // The port file appears once the server listens.
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int port = 0;
    const std::string text(
        absl::StripAsciiWhitespace(ReadFileOrEmpty(port_file)));
    if (absl::SimpleAtoi(text, &port) && port > 0) {
      return std::unique_ptr<ServerProcess>(
          new ServerProcess(*std::move(process), err_path, port));
    }
    if ((*process)->Wait(absl::Milliseconds(20)).ok()) {
      return absl::UnavailableError(absl::StrCat(
          argv[0], " (", name, ") exited early: ", ReadFileOrEmpty(err_path)));
    }
  }
  return absl::DeadlineExceededError(absl::StrCat(
      argv[0], " (", name, ") wrote no port file within ",
      absl::FormatDuration(timeout), ": ", ReadFileOrEmpty(err_path)));
}

std::string ServerProcess::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

std::string ServerProcess::Stderr() const {
  return ReadFileOrEmpty(stderr_path_);
}

void ServerProcess::Kill() { process_->Stop(SIGKILL, absl::Seconds(10)); }

std::string RunfilePath(const std::string& path, const char* argv0) {
  std::string root = ".";
  if (const char* dir = std::getenv("TEST_SRCDIR"); dir != nullptr) {
    root = dir;
  } else if (const char* dir = std::getenv("RUNFILES_DIR"); dir != nullptr) {
    root = dir;
  } else if (argv0 != nullptr && *argv0 != '\0') {
    root = absl::StrCat(argv0, ".runfiles");
  }
  return absl::StrCat(root, "/software_tpu/", path);
}

std::string ScratchDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout) {
  const std::string out_path = TempPath("stdout");
  const std::string err_path = TempPath("stderr");
  absl::StatusOr<std::unique_ptr<Subprocess>> process =
      Subprocess::Start(argv, out_path, err_path);
  if (!process.ok()) return process.status();
  absl::StatusOr<int> code = (*process)->Wait(timeout);
  if (!code.ok()) {
    (*process)->Stop(SIGKILL, absl::Seconds(10));
    return absl::DeadlineExceededError(absl::StrCat(
        argv[0], " did not finish within ", absl::FormatDuration(timeout),
        "; stderr: ", ReadFileOrEmpty(err_path)));
  }
  CommandResult result;
  result.exit_code = *code;
  result.out = ReadFileOrEmpty(out_path);
  result.err = ReadFileOrEmpty(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return result;
}

}  // namespace tpu::tools
