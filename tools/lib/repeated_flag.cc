#include "tools/lib/repeated_flag.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tpu::tools {

std::vector<std::string> TakeRepeatedFlag(absl::string_view name, int* argc,
                                          char** argv) {
  const std::string bare = absl::StrCat("--", name);
  const std::string with_value = absl::StrCat(bare, "=");
  std::vector<std::string> values;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") {
      while (i < *argc) argv[out++] = argv[i++];
      break;
    }
    if (absl::StartsWith(arg, with_value)) {
      values.emplace_back(arg.substr(with_value.size()));
    } else if (arg == bare && i + 1 < *argc) {
      values.emplace_back(argv[++i]);
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  return values;
}

}  // namespace tpu::tools
