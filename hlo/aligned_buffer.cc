#include "hlo/aligned_buffer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tpu {

std::shared_ptr<AlignedBuffer> AlignedBuffer::Allocate(int64_t size) {
  // aligned_alloc needs a size that is a multiple of the alignment, and a
  // zero-byte request must still give a distinct, freeable pointer.
  size_t rounded = (static_cast<size_t>(size < 0 ? 0 : size) + kAlignment - 1) /
                   kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* data = std::aligned_alloc(kAlignment, rounded);
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
