#ifndef SOFTWARE_TPU_HLO_ALIGNED_BUFFER_H_
#define SOFTWARE_TPU_HLO_ALIGNED_BUFFER_H_

// A fixed-size, 64-byte aligned, uninitialized block of host memory: the
// storage of literals, HBM buffers and interpreter temporaries (aligned so
// Eigen's AVX-512 kernels run at full speed on it).
//
// Every buffer is charged to the process memory budget (hlo/memory_budget.h)
// before its memory is taken, and released to it when freed.
//
// Thread safety: thread-compatible.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "hlo/memory_budget.h"

namespace tpu {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  // A buffer of `size` bytes, contents unspecified, or RESOURCE_EXHAUSTED
  // when the process budget or the system refuses the memory.
  static absl::StatusOr<std::shared_ptr<AlignedBuffer>> TryAllocate(
      int64_t size);
  // As TryAllocate, for code that cannot return a status (literals made deep
  // inside kernels): a refusal throws HostMemoryExhausted (a std::bad_alloc),
  // which the interpreter's and worker's operation boundaries turn into
  // RESOURCE_EXHAUSTED. Never returns null.
  static std::shared_ptr<AlignedBuffer> Allocate(int64_t size);
  // A buffer of `size` zero bytes; throws as Allocate.
  static std::shared_ptr<AlignedBuffer> AllocateZeroed(int64_t size);
  // `size` zero bytes that are never written and commit no memory: a
  // read-only anonymous mapping, whose pages all map the kernel's zero page.
  // For sending a never-written buffer; writing to data() faults. Not
  // charged to the budget (it commits nothing). RESOURCE_EXHAUSTED if the
  // address space is refused.
  static absl::StatusOr<std::shared_ptr<AlignedBuffer>> ReadOnlyZeros(
      int64_t size);

  // Frees the large blocks kept for reuse (freed buffers of 4 MiB and more
  // wait in a bounded cache for the next allocation of their size): for an
  // idle process that should give its memory back.
  static void DropCachedBlocks();

  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  AlignedBuffer(void* data, int64_t size, MemoryBudget* budget, bool mapped)
      : data_(data), size_(size), budget_(budget), mapped_(mapped) {}

  void* data_;
  int64_t size_;
  // Where size_ was charged (null: nowhere).
  MemoryBudget* budget_;
  // A ReadOnlyZeros mapping, unmapped rather than freed.
  bool mapped_;
};

}  // namespace tpu

#endif  // SOFTWARE_TPU_HLO_ALIGNED_BUFFER_H_
