#include "tests/e2e/cli.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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

std::string ErrorLineBeforeGrpc(const tools::CommandResult& result) {
  std::vector<std::string> lines =
      absl::StrSplit(result.err, '\n', absl::SkipEmpty());
  if (lines.size() != 1) return absl::StrCat("not one line: ", result.err);
  const size_t grpc = lines[0].find(" Error from gRPC: ");
  return grpc == std::string::npos ? lines[0] : lines[0].substr(0, grpc);
}

}  // namespace tpu::e2e
