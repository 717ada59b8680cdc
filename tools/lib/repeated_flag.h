#ifndef SOFTWARE_TPU_TOOLS_LIB_REPEATED_FLAG_H_
#define SOFTWARE_TPU_TOOLS_LIB_REPEATED_FLAG_H_

// A flag that may be given many times (--fault=A --fault=B). absl keeps only
// the last value of a repeated flag, so a tool takes these out of argv before
// absl parses the rest.
//
// Thread safety: call once, from main, before absl::ParseCommandLine.

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tpu::tools {

// Removes every `--NAME=VALUE` and `--NAME VALUE` before a lone `--` from
// argv (updating *argc) and returns the values in order.
std::vector<std::string> TakeRepeatedFlag(absl::string_view name, int* argc,
                                          char** argv);

}  // namespace tpu::tools

#endif  // SOFTWARE_TPU_TOOLS_LIB_REPEATED_FLAG_H_
