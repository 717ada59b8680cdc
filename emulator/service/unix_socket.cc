#include "emulator/service/unix_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tpu::emulator {

absl::Status CheckUnixSocketPath(const std::string& path) {
  sockaddr_un address{};
  if (path.empty()) {
    return absl::InvalidArgumentError("The Unix socket path is empty.");
  }
  if (path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Unix socket path \"", path, "\" is ", path.size(),
        " bytes long; a socket address holds at most ",
        sizeof(address.sun_path) - 1, ". Use a shorter path (e.g. in /tmp)."));
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Cannot create Unix socket \"", path, "\": directory \"",
                     dir, "\": ", std::strerror(errno), "."));
  }
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::OkStatus();  // Nothing there: gRPC creates it.
  }
  if (!S_ISSOCK(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", path,
                     "\" exists and is not a socket; refusing to replace it. "
                     "Pick another --unix_socket path."));
  }
  // A socket file: in use if something accepts connections on it.
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  }
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  const bool live =
      connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  if (live) {
    return absl::UnavailableError(
        absl::StrCat("A server is already listening on Unix socket \"", path,
                     "\". Stop it or pick another --unix_socket path."));
  }
  return absl::OkStatus();  // Left by a server that died: gRPC replaces it.
}

}  // namespace tpu::emulator
