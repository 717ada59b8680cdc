#ifndef SOFTWARE_TPU_TOOLS_LIB_PORTS_H_
#define SOFTWARE_TPU_TOOLS_LIB_PORTS_H_

// Loopback ports for tests and benchmarks that need an address before the
// server behind it exists (to start a client first, or to dial a port
// nothing listens on).
//
// Thread safety: reentrant.

#include "absl/status/statusor.h"

namespace tpu::tools {

// A TCP port on 127.0.0.1 that was free a moment ago: bound, then released.
// Nothing listens on it, so connecting is refused, until someone else takes
// it (unlikely soon: the kernel hands out ephemeral ports in turn).
absl::StatusOr<int> UnusedLoopbackPort();

}  // namespace tpu::tools

#endif  // SOFTWARE_TPU_TOOLS_LIB_PORTS_H_
