#include "tests/e2e/cli.h"

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/e2e/programs.h"

namespace tpu::e2e {

std::string TpuEmulatorPath() {
  return tools::RunfilePath("tools/tpu_emulator/tpu_emulator");
}

std::string TpuRunPath() { return tools::RunfilePath("tools/tpu_run/tpu_run"); }

std::string WriteTwiceXPlusOne(const std::string& name) {
  const std::string dir = absl::StrCat(tools::ScratchDir(), "/", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = absl::StrCat(dir, "/module.hlo");
  std::ofstream(path) << kTwiceXPlusOne;
  return path;
}

tools::CommandResult RunToCompletion(std::vector<std::string> argv) {
  absl::StatusOr<tools::CommandResult> result =
      tools::RunCommand(argv, absl::Seconds(120));
  if (!result.ok()) {
    ADD_FAILURE() << result.status();
    return tools::CommandResult();
  }
  return *std::move(result);
}

tools::CommandResult RunTwiceXPlusOne(const std::string& target,
                                      const std::string& name,
                                      std::vector<std::string> flags) {
  flags.insert(
      flags.begin(),
      {TpuRunPath(), absl::StrCat("--target=", target),
       absl::StrCat("--module=", WriteTwiceXPlusOne(name)), "--random_inputs"});
  return RunToCompletion(std::move(flags));
}

std::string TwiceXPlusOneError(const std::string& target,
                               const std::string& name) {
  tools::CommandResult result = RunTwiceXPlusOne(target, name);
  EXPECT_EQ(result.exit_code, 1) << "tpu_run --target=" << target;
  return ErrorLineBeforeGrpc(result);
}

std::string ConnectErrorLine(const std::string& address,
                             const std::string& reason) {
  return absl::StrCat(
      "tpu_run: error: UNAVAILABLE: Failed to connect to remote server at "
      "address: ",
      address, ": ", reason);
}

std::string RefusedReason(const std::string& start) {
  return absl::StrCat(
      "the connection was refused; no TPU worker is serving there. Start one (",
      start,
      "), check the address (--target), or wait for a worker that is still "
      "starting with a connect timeout (--connect_timeout).");
}

std::string ErrorLineBeforeGrpc(const tools::CommandResult& result) {
  std::vector<std::string> lines =
      absl::StrSplit(result.err, '\n', absl::SkipEmpty());
  if (lines.size() != 1) return absl::StrCat("not one line: ", result.err);
  const size_t grpc = lines[0].find(" Error from gRPC: ");
  return grpc == std::string::npos ? lines[0] : lines[0].substr(0, grpc);
}

}  // namespace tpu::e2e
