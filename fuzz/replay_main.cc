// A main for fuzz targets outside --config=fuzz: feeds every file of the
// directories (or files) named on the command line to LLVMFuzzerTestOneInput,
// in sorted order, so the seed corpus and every past finding run as a plain
// test under the default gcc build. Missing paths are skipped (a target may
// have no regressions yet), but finding no input at all fails: a replay that
// feeds nothing would pass whatever the target does.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
    __attribute__((weak));

namespace {

std::vector<std::filesystem::path> InputsUnder(const std::string& root) {
  std::vector<std::filesystem::path> inputs;
  std::error_code error;
  if (std::filesystem::is_regular_file(root, error)) {
    inputs.push_back(root);
    return inputs;
  }
  if (!std::filesystem::is_directory(root, error)) return inputs;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(root, error)) {
    if (entry.is_regular_file()) inputs.push_back(entry.path());
  }
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::filesystem::path> found = InputsUnder(argv[i]);
    inputs.insert(inputs.end(), found.begin(), found.end());
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr,
                 "No inputs found under the paths given; pass the corpus "
                 "directory (and the regressions directory) as arguments.\n");
    return 1;
  }
  for (const auto& path : inputs) {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      std::fprintf(stderr, "Cannot read %s\n", path.c_str());
      return 1;
    }
    std::string bytes((std::istreambuf_iterator<char>(file)),
                      std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", path.c_str(),
                 bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                           bytes.size());
  }
  std::printf("Replayed %zu inputs without a crash.\n", inputs.size());
  return 0;
}
