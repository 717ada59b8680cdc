#include "hlo/host_memory.h"

#include <malloc.h>

namespace tpu {

void ConfigureHostMemoryForLargeBuffers() {
  // One arena: large blocks freed by one thread are reused by the next
  // (transfers are allocated and freed on different gRPC threads).
  mallopt(M_ARENA_MAX, 1);
  // No block from mmap: glibc caps the mmap threshold at 32 MiB, and every
  // block above it would be fresh pages again.
  mallopt(M_MMAP_MAX, 0);
  // Keep up to 1 GiB of free heap top for the next transfer; beyond that the
  // heap shrinks, so a burst of huge buffers does not pin memory forever.
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void ReleaseFreeHostMemory() { malloc_trim(0); }

}  // namespace tpu
