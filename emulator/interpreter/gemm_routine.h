#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_GEMM_ROUTINE_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_GEMM_ROUTINE_H_

// f32-accumulating batched matrix products (f32 or bf16 operands), each
// routed once, at compile time, to the library that runs its shape fastest
// here. Measured on the shapes the interpreter sees (dot_benchmark prints
// them; the numbers are in the README of this folder):
//   - oneDNN (sgemm, and its AVX512-BF16 GEMM for bf16 x bf16) for every
//     product with m, n > 1 that is not small;
//   - libxsmm's JIT kernels for small products (m*n*k <= 64^3) without
//     transposed operands, many at once in a batch;
//   - Eigen (gemm.h) for matrix-vector products, small transposed ones and
//     empty ones.
// OpenBLAS and BLIS were measured and are not used (see the README).
//
// Every library runs single-threaded on the calling thread; Run splits the
// work into tiles on the worker's pool.
//
// Numerics: every route multiplies exactly and accumulates in f32 (with
// FMA); only the summation order differs between routes. bf16 products take
// the AVX512-BF16 route only when no denormal can occur (see
// Bf16ProductsStayNormal); otherwise they are converted to f32 first.
//
// Thread safety: a GemmRoutine is immutable after Choose; Run may be called
// concurrently.

#include <cstdint>
#include <functional>

#include "emulator/interpreter/gemm_backends.h"

namespace Eigen {
struct ThreadPoolDevice;
}

namespace tpu::emulator::interpreter {

enum class GemmLibrary { kEigen, kOneDnn, kLibxsmm };
const char* GemmLibraryName(GemmLibrary library);

// batch products of m x k by k x n, laid out as in gemm.h's BatchedGemm.
struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool a_transposed = false, b_transposed = false;
};

class GemmRoutine {
 public:
  GemmRoutine() = default;
  // The route for `shape`. If bf16_operands, the caller has bf16 operands;
  // the routine says through bf16_operands() whether Run takes them as they
  // are or wants them converted to f32.
  static GemmRoutine Choose(const GemmShape& shape, bool bf16_operands);

  GemmLibrary library() const { return library_; }
  const GemmShape& shape() const { return shape_; }
  // True if Run's a and b are bf16 arrays; otherwise they are f32.
  bool bf16_operands() const { return bf16_; }

  // For b in [0, batch): out[b] (m x n) = or += A[b] * B[b], dense
  // row-major, on `device` (the calling thread only if null).
  void Run(const Eigen::ThreadPoolDevice* device, const void* a, const void* b,
           float* out, bool accumulate) const;

  // As Run (out = A * B), calling rows_done(m0, m1) once rows [m0, m1) of
  // out are final, on the thread that computed them where the library's
  // tiles are blocks of rows, so that a consumer (a convolution's epilogue)
  // reads them while they are in cache. The calls cover [0, m * batch)
  // exactly once.
  void RunRows(const Eigen::ThreadPoolDevice* device, const void* a,
               const void* b, float* out,
               const std::function<void(int64_t, int64_t)>& rows_done) const;

 private:
  using RowsDone = std::function<void(int64_t, int64_t)>;
  void RunOneDnn(const Eigen::ThreadPoolDevice* device, const void* a,
                 const void* b, bool bf16, float* out, bool accumulate,
                 const RowsDone* rows_done = nullptr) const;
  void RunXsmm(const Eigen::ThreadPoolDevice* device, const float* a,
               const float* b, float* out, bool accumulate) const;

  GemmShape shape_;
  GemmLibrary library_ = GemmLibrary::kEigen;
  bool bf16_ = false;
  // [accumulate]: libxsmm bakes beta into the kernel.
  XsmmKernel xsmm_[2];
};

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_GEMM_ROUTINE_H_
