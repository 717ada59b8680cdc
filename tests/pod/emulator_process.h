#ifndef SOFTWARE_TPU_TESTS_POD_EMULATOR_PROCESS_H_
#define SOFTWARE_TPU_TESTS_POD_EMULATOR_PROCESS_H_

// A tpu_emulator child process on a loopback port, for multi-process tests:
// started with --port=0 --port_file, waited for with a bound, killed
// (SIGKILL) and reaped when the object dies. The child also dies with the
// test process (PR_SET_PDEATHSIG), so nothing is left behind.
//
// Thread safety: thread-compatible.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tpu::pod_test {

class EmulatorProcess {
 public:
  // Starts `binary` with `flags` plus --port=0 --port_file=..., and waits up
  // to `timeout` for it to listen. `name` tells its files apart.
  static absl::StatusOr<std::unique_ptr<EmulatorProcess>> Start(
      const std::string& binary, const std::string& name,
      const std::vector<std::string>& flags,
      absl::Duration timeout = absl::Seconds(60));
  ~EmulatorProcess();

  EmulatorProcess(const EmulatorProcess&) = delete;
  EmulatorProcess& operator=(const EmulatorProcess&) = delete;

  // "127.0.0.1:<port>".
  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }

  // SIGKILLs the process and reaps it (idempotent).
  void Kill();
  // Its stderr so far, for failure messages.
  std::string Stderr() const;

 private:
  EmulatorProcess(pid_t pid, std::string stderr_path)
      : pid_(pid), stderr_path_(std::move(stderr_path)) {}

  pid_t pid_;
  bool reaped_ = false;
  std::string stderr_path_;
  std::string address_;
};

// The path of a runfile of this workspace.
std::string Runfile(const std::string& path);
// A per-test scratch directory.
std::string TmpDir();

}  // namespace tpu::pod_test

#endif  // SOFTWARE_TPU_TESTS_POD_EMULATOR_PROCESS_H_
