#include "hlo/aligned_buffer.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tpu {

namespace {

// Buffers this large are placed on transparent huge pages: a first touch of a
// 256 MiB transfer otherwise takes 65,536 page faults, which cost more than
// the copy itself. Smaller buffers stay on ordinary pages, where a 2 MiB
// alignment would waste memory.
constexpr size_t kHugePageThreshold = size_t{4} << 20;
constexpr size_t kHugePageSize = size_t{2} << 20;

}  // namespace

std::shared_ptr<AlignedBuffer> AlignedBuffer::Allocate(int64_t size) {
  // aligned_alloc needs a size that is a multiple of the alignment, and a
  // zero-byte request must still give a distinct, freeable pointer.
  const size_t requested = static_cast<size_t>(size < 0 ? 0 : size);
  const size_t alignment =
      requested >= kHugePageThreshold ? kHugePageSize : kAlignment;
  size_t rounded = (requested + alignment - 1) / alignment * alignment;
  if (rounded == 0) rounded = alignment;
  void* data = std::aligned_alloc(alignment, rounded);
  if (data != nullptr && alignment == kHugePageSize) {
    // Advisory: without THP support the buffer simply uses small pages.
    (void)madvise(data, rounded, MADV_HUGEPAGE);
  }
  if (data == nullptr) {
    std::fprintf(stderr, "AlignedBuffer: out of memory allocating %lld bytes\n",
                 static_cast<long long>(size));
    std::abort();
  }
  return std::shared_ptr<AlignedBuffer>(new AlignedBuffer(data, size));
}

std::shared_ptr<AlignedBuffer> AlignedBuffer::AllocateZeroed(int64_t size) {
  std::shared_ptr<AlignedBuffer> buffer = Allocate(size);
  if (size > 0) std::memset(buffer->data(), 0, static_cast<size_t>(size));
  return buffer;
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

}  // namespace tpu
