#ifndef SOFTWARE_TPU_EMULATOR_SERVICE_UNIX_SOCKET_H_
#define SOFTWARE_TPU_EMULATOR_SERVICE_UNIX_SOCKET_H_

// The worker's Unix domain socket listener (--unix_socket=PATH), the local
// fast path: the same protocol as the TCP port, minus the TCP/IP stack.
// Clients dial grpc://unix:PATH. It is plaintext: only processes on this
// machine with write permission on PATH can connect (gRPC creates it under
// the process's umask).
//
// Thread safety: reentrant.

#include <string>

#include "absl/status/status.h"

namespace tpu::emulator {

// Checks that a server may listen on `path` before gRPC tries, so that the
// failure says why: INVALID_ARGUMENT for an empty path, one longer than a
// socket address holds (107 bytes), a directory that does not exist or is
// not writable, or an existing file that is not a socket; UNAVAILABLE if a
// server is listening there already. A socket file
// left by a server that died is fine (gRPC replaces it).
absl::Status CheckUnixSocketPath(const std::string& path);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SERVICE_UNIX_SOCKET_H_
