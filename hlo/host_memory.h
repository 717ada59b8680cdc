#ifndef SOFTWARE_TPU_HLO_HOST_MEMORY_H_
#define SOFTWARE_TPU_HLO_HOST_MEMORY_H_

// Process-wide malloc policy for programs that move large buffers (the
// emulator, tpu_run, benchmarks).
//
// By default glibc gives large allocations fresh pages from mmap and returns
// them on free, and threads other than the main one allocate from arenas
// that cannot hold blocks above 64 MiB at all. On a virtual machine a page
// fault costs microseconds, so a 256 MiB transfer, which passes through a
// few freshly allocated copies (gRPC slices, the request, the HBM buffer),
// spent more time faulting than copying: 0.05 GB/s. With this policy freed
// blocks stay in one heap and are reused, and the same transfer runs at
// gigabytes per second once warm.
//
// Call once, early in main, before threads start. Libraries never call it:
// the malloc policy of a user's process is the user's.

namespace tpu {

void ConfigureHostMemoryForLargeBuffers();

// Gives the free pages of the heap back to the system (malloc_trim). Under
// the policy above freed blocks stay in the heap for reuse; the worker calls
// this when its last client is gone, so that a worker which served a burst
// returns to its idle footprint instead of keeping the burst's peak.
void ReleaseFreeHostMemory();

}  // namespace tpu

#endif  // SOFTWARE_TPU_HLO_HOST_MEMORY_H_
