#ifndef SOFTWARE_TPU_TOOLS_LIB_SUBPROCESS_H_
#define SOFTWARE_TPU_TOOLS_LIB_SUBPROCESS_H_

// Child processes, for tests and benchmarks that run our binaries as users
// do: start a binary with its stdout and stderr going to files, wait for it
// with a bound, and never leave it behind (the child is killed when this
// process dies, and the destructor kills and reaps it).
//
// Thread safety: thread-compatible.

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tpu::tools {

class Subprocess {
 public:
  // Starts argv[0] (a path) with argv[1..].
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(
      const std::vector<std::string>& argv, const std::string& stdout_path,
      const std::string& stderr_path);
  // Kills (SIGKILL) and reaps the child if it is still running.
  ~Subprocess();

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // The exit code (128 + signal if killed by a signal), or DEADLINE_EXCEEDED
  // if it is still running after `timeout` (it keeps running).
  absl::StatusOr<int> Wait(absl::Duration timeout);

  // Sends `signal` and waits up to `timeout` for the exit, then SIGKILLs.
  // Returns the exit code.
  int Stop(int signal, absl::Duration timeout);

  pid_t pid() const { return pid_; }

 private:
  explicit Subprocess(pid_t pid) : pid_(pid) {}

  pid_t pid_;
  bool reaped_ = false;
  int exit_code_ = -1;
};

// A server child that reports the port it listens on by writing it to the
// file its --port_file flag names, as tpu_emulator and ack_server do.
class ServerProcess {
 public:
  // Starts `argv` plus --port_file=<dir>/<name>.port, with its output in
  // <dir>/<name>.out and .err, and waits up to `timeout` for the port.
  // UNAVAILABLE (with its stderr) if it exits first, DEADLINE_EXCEEDED if it
  // writes no port in time.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      std::vector<std::string> argv, const std::string& dir,
      const std::string& name, absl::Duration timeout = absl::Seconds(60));

  int port() const { return port_; }
  // "127.0.0.1:<port>".
  std::string address() const;
  // Its stderr so far, for failure messages.
  std::string Stderr() const;
  Subprocess& process() { return *process_; }

  // SIGKILLs the server and reaps it (idempotent).
  void Kill();

 private:
  ServerProcess(std::unique_ptr<Subprocess> process, std::string stderr_path,
                int port)
      : process_(std::move(process)),
        stderr_path_(std::move(stderr_path)),
        port_(port) {}

  std::unique_ptr<Subprocess> process_;
  std::string stderr_path_;
  int port_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs a command to completion (killing it after `timeout`, which is an
// error) and returns its exit code and output.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout);

// The whole file, or "" if it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);

// `path` (relative to this workspace's root) among the runfiles of the
// running test or binary: under $TEST_SRCDIR or $RUNFILES_DIR if set (bazel
// test, bazel run), else under "<argv0>.runfiles" (a binary run from
// bazel-bin), else under the current directory.
std::string RunfilePath(const std::string& path, const char* argv0 = nullptr);

// A scratch directory: $TEST_TMPDIR under bazel test, else /tmp.
std::string ScratchDir();

}  // namespace tpu::tools

#endif  // SOFTWARE_TPU_TOOLS_LIB_SUBPROCESS_H_
