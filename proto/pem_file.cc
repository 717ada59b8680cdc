#include "proto/pem_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tpu {

absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    const std::string message = absl::StrCat("Cannot read ", what, " \"", path,
                                             "\": ", std::strerror(error));
    return error == EACCES ? absl::PermissionDeniedError(message)
                           : absl::NotFoundError(message);
  }
  std::stringstream contents;
  contents << in.rdbuf();
  if (!absl::StrContains(contents.str(), "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", path,
                     "\" is not a PEM file (it has no \"-----BEGIN\" line)."));
  }
  return contents.str();
}

}  // namespace tpu
