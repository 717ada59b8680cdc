#include "emulator/interpreter/gemm_backends.h"

#include <omp.h>

#include <mutex>

#include "libxsmm.h"
#include "oneapi/dnnl/dnnl.h"

// Exported by libdnnl 2.x (row-major, like dnnl_sgemm) but declared in its
// public header only from 3.0 on.
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(
    char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K,
    float alpha, const uint16_t* A, dnnl_dim_t lda, const uint16_t* B,
    dnnl_dim_t ldb, float beta, float* C, dnnl_dim_t ldc);

namespace tpu::emulator::interpreter {
namespace {

// Debian's oneDNN runs on OpenMP and would start a team of one thread per
// core on every call. One OpenMP thread per calling thread keeps each call
// on its caller; the caller's own setting is restored afterwards.
class SingleOpenMpThread {
 public:
  SingleOpenMpThread() : saved_(omp_get_max_threads()) {
    if (saved_ != 1) omp_set_num_threads(1);
  }
  ~SingleOpenMpThread() {
    if (saved_ != 1) omp_set_num_threads(saved_);
  }

 private:
  int saved_;
};

}  // namespace

void OneDnnGemmF32(const GemmTile& t) {
  SingleOpenMpThread single;
  dnnl_sgemm(t.a_transposed ? 'T' : 'N', t.b_transposed ? 'T' : 'N', t.m, t.n,
             t.k, 1.0f, static_cast<const float*>(t.a), t.lda,
             static_cast<const float*>(t.b), t.ldb, t.accumulate ? 1.0f : 0.0f,
             t.c, t.ldc);
}

void OneDnnGemmBf16(const GemmTile& t) {
  SingleOpenMpThread single;
  dnnl_gemm_bf16bf16f32(t.a_transposed ? 'T' : 'N', t.b_transposed ? 'T' : 'N',
                        t.m, t.n, t.k, 1.0f, static_cast<const uint16_t*>(t.a),
                        t.lda, static_cast<const uint16_t*>(t.b), t.ldb,
                        t.accumulate ? 1.0f : 0.0f, t.c, t.ldc);
}

bool Bf16ProductsStayNormal(const uint16_t* x, int64_t n) {
  // Biased exponent 77 is 2^-50. Branch-free so that it vectorizes.
  uint32_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t magnitude = x[i] & 0x7fffu;
    bad |= static_cast<uint32_t>(magnitude != 0 && (magnitude >> 7) < 77);
  }
  return bad == 0;
}

XsmmKernel XsmmKernel::Dispatch(int64_t m, int64_t n, int64_t k,
                                bool accumulate) {
  static std::once_flag init;
  std::call_once(init, [] { libxsmm_init(); });
  // libxsmm is column-major: the row-major C = A * B is the column-major
  // C^T = B^T * A^T, an n x m product with B first.
  const libxsmm_blasint mm = n, nn = m, kk = k;
  const libxsmm_blasint lda = n, ldb = k, ldc = n;
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  const int flags = LIBXSMM_GEMM_FLAG_NONE;
  XsmmKernel kernel;
  kernel.fn_ = reinterpret_cast<void*>(libxsmm_smmdispatch(
      mm, nn, kk, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr));
  return kernel;
}

void XsmmKernel::Run(const float* a, const float* b, float* c) const {
  reinterpret_cast<libxsmm_smmfunction>(fn_)(b, a, c);
}

}  // namespace tpu::emulator::interpreter
