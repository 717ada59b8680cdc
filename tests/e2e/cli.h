#ifndef SOFTWARE_TPU_TESTS_E2E_CLI_H_
#define SOFTWARE_TPU_TESTS_E2E_CLI_H_

// The binaries end-to-end tests run as users do (tpu_emulator, tpu_run),
// and what they print.
//
// Thread safety: reentrant.

#include <string>

#include "tools/lib/subprocess.h"

namespace tpu::e2e {

// Paths of the binaries among the test's runfiles.
std::string TpuEmulatorPath();
std::string TpuRunPath();

// Writes kTwiceXPlusOne (programs.h) as HLO text into a fresh directory
// <scratch>/<name> and returns the file's path.
std::string WriteTwiceXPlusOne(const std::string& name);

// The single line a failed run printed on stderr, cut before gRPC's own
// words (" Error from gRPC: ...", which differ between gRPC versions); or a
// description of what was printed instead of one line.
std::string ErrorLineBeforeGrpc(const tools::CommandResult& result);

}  // namespace tpu::e2e

#endif  // SOFTWARE_TPU_TESTS_E2E_CLI_H_
