#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_STREAM_STORE_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_STREAM_STORE_H_

// Copies into memory without reading the destination first (non-temporal
// stores): an output far larger than the caches is written once and read
// much later, so a normal store's read-for-ownership of each line only
// doubles the write traffic. Used where a kernel is bound by memory
// bandwidth (the 64 MiB all-reduce reads 8 contributions and writes one
// result: the saved read is a tenth of its traffic).
//
// Thread safety: a thread must call StreamFence after its StreamCopy calls
// and before it signals another thread that the bytes are there.

#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace tpu::emulator::interpreter {

inline void StreamCopy(void* dst, const void* src, int64_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#if defined(__AVX512F__) || defined(__SSE2__)
#if defined(__AVX512F__)
  constexpr int64_t kVector = 64;
#else
  constexpr int64_t kVector = 16;
#endif
  // The unaligned head and tail go through the cache.
  const int64_t head = std::min<int64_t>(
      bytes, (kVector - reinterpret_cast<uintptr_t>(d) % kVector) % kVector);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  for (; bytes >= kVector; bytes -= kVector, d += kVector, s += kVector) {
#if defined(__AVX512F__)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d), _mm512_loadu_si512(s));
#else
    _mm_stream_si128(reinterpret_cast<__m128i*>(d),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
#endif
  }
#endif
  std::memcpy(d, s, bytes);
}

// Orders this thread's earlier StreamCopy stores before its later stores.
inline void StreamFence() {
#if defined(__AVX512F__) || defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_STREAM_STORE_H_
