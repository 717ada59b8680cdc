#ifndef SOFTWARE_TPU_TESTS_E2E_CLI_H_
#define SOFTWARE_TPU_TESTS_E2E_CLI_H_

// The binaries end-to-end tests run as users do (tpu_emulator, tpu_run),
// and what they print.
//
// Thread safety: reentrant.

#include <string>
#include <vector>

#include "tools/lib/subprocess.h"

namespace tpu::e2e {

// Paths of the binaries among the test's runfiles.
std::string TpuEmulatorPath();
std::string TpuRunPath();

// Writes kTwiceXPlusOne (programs.h) as HLO text into a fresh directory
// <scratch>/<name> and returns the file's path.
std::string WriteTwiceXPlusOne(const std::string& name);

// Runs `argv` to completion, bounded at 120 s. A command that cannot be
// started or does not finish fails the running test and yields an empty
// result (exit code -1).
tools::CommandResult RunToCompletion(std::vector<std::string> argv);

// tpu_run of kTwiceXPlusOne (WriteTwiceXPlusOne(name)) on random inputs
// against `target`, with `flags` besides, as RunToCompletion.
tools::CommandResult RunTwiceXPlusOne(const std::string& target,
                                      const std::string& name,
                                      std::vector<std::string> flags = {});

// The single line a failed run printed on stderr, cut before gRPC's own
// words (" Error from gRPC: ...", which differ between gRPC versions); or a
// description of what was printed instead of one line.
std::string ErrorLineBeforeGrpc(const tools::CommandResult& result);

// RunTwiceXPlusOne(target, name), which must fail (exit code 1, else the
// test fails), and its ErrorLineBeforeGrpc.
std::string TwiceXPlusOneError(const std::string& target,
                               const std::string& name);

// What ErrorLineBeforeGrpc gives for a tpu_run that could not connect to
// `address` because of `reason` (the driver's words, open_failure.h).
std::string ConnectErrorLine(const std::string& address,
                             const std::string& reason);

// The driver's reason for a refused connection, when no connect timeout was
// set; `start` is the command it suggests ("tpu_emulator --port=1").
std::string RefusedReason(const std::string& start);

}  // namespace tpu::e2e

#endif  // SOFTWARE_TPU_TESTS_E2E_CLI_H_
