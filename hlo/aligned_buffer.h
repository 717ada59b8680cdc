#ifndef SOFTWARE_TPU_HLO_ALIGNED_BUFFER_H_
#define SOFTWARE_TPU_HLO_ALIGNED_BUFFER_H_

// A fixed-size, 64-byte aligned, uninitialized block of host memory: the
// storage of literals, HBM buffers and interpreter temporaries (aligned so
// Eigen's AVX-512 kernels run at full speed on it).
//
// Thread safety: thread-compatible.

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tpu {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  // A buffer of `size` bytes, contents unspecified. Never returns null (a
  // failed allocation aborts, as operator new does).
  static std::shared_ptr<AlignedBuffer> Allocate(int64_t size);
  // A buffer of `size` zero bytes.
  static std::shared_ptr<AlignedBuffer> AllocateZeroed(int64_t size);

  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  AlignedBuffer(void* data, int64_t size) : data_(data), size_(size) {}

  void* data_;
  int64_t size_;
};

}  // namespace tpu

#endif  // SOFTWARE_TPU_HLO_ALIGNED_BUFFER_H_
