#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_GEMM_BACKENDS_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_GEMM_BACKENDS_H_

// Thin wrappers over the GEMM libraries that gemm_routine.cc routes to. Each
// call runs on the calling thread only: parallelism comes from the worker's
// pool (gemm_routine.cc splits products into tiles), never from a library's
// own threads.
//
// Thread safety: every function may be called concurrently.

#include <cstdint>

namespace tpu::emulator::interpreter {

// One row-major product on the calling thread:
//   C (m x n, row stride ldc) = or += op(A) * op(B),
// where op(A) is m x k (A stored k x m with row stride lda if a_transposed,
// else m x k) and op(B) is k x n (stored n x k if b_transposed).
struct GemmTile {
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t lda = 0;
  bool a_transposed = false;
  const void* b = nullptr;
  int64_t ldb = 0;
  bool b_transposed = false;
  float* c = nullptr;
  int64_t ldc = 0;
  bool accumulate = false;
};

// oneDNN's sgemm: f32 operands, f32 FMA accumulation.
void OneDnnGemmF32(const GemmTile& tile);

// oneDNN's bf16 GEMM (AVX512-BF16 dot products, f32 accumulation): bf16
// operands. The hardware treats denormal inputs and sums as zero; callers
// use it only where Bf16ProductsStayNormal shows that none can occur.
void OneDnnGemmBf16(const GemmTile& tile);

// True if no product or sum of products of elements of two such arrays can
// be an f32 denormal: every element is zero, infinite, NaN or at least 2^-50
// in magnitude. Then products are multiples of 2^-114 and so is every f32
// partial sum, which is therefore zero or normal.
bool Bf16ProductsStayNormal(const uint16_t* x, int64_t n);

// A JIT-compiled libxsmm kernel for one small row-major product shape with
// no transposes, or null if libxsmm has none for it.
class XsmmKernel {
 public:
  XsmmKernel() = default;
  // REQUIRES: m, n, k > 0.
  static XsmmKernel Dispatch(int64_t m, int64_t n, int64_t k, bool accumulate);
  bool ok() const { return fn_ != nullptr; }
  // c (m x n) = or += a (m x k) * b (k x n), all dense row-major.
  void Run(const float* a, const float* b, float* c) const;

 private:
  void* fn_ = nullptr;
};

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_GEMM_BACKENDS_H_
