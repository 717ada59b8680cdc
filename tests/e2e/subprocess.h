#ifndef SOFTWARE_TPU_TESTS_E2E_SUBPROCESS_H_
#define SOFTWARE_TPU_TESTS_E2E_SUBPROCESS_H_

// Child processes for tests: start a binary with arguments, its stdout and
// stderr going to files, wait for it with a bound, and never leave it behind
// (the child is killed when the test process dies, and the destructor kills
// and reaps it).
//
// Thread safety: thread-compatible.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tpu::e2e {

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

}  // namespace tpu::e2e

#endif  // SOFTWARE_TPU_TESTS_E2E_SUBPROCESS_H_
