#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_GEMM_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_GEMM_H_

// Batched matrix products on Eigen's tensor contraction, shared by dot and
// convolution. All matrices are dense row-major.
//
// Thread safety: stateless.

#include <cstdint>

namespace Eigen {
struct ThreadPoolDevice;
}

namespace tpu::emulator::interpreter {

// For b in [0, batch): out[b] (m x n) = A[b] * B[b], where A[b] is m x k
// (or k x m stored, if a_transposed) and B[b] is k x n (or n x k stored, if
// b_transposed). `accumulate` adds to out instead of overwriting.
// Instantiated for float, double, std::complex<float>, std::complex<double>,
// int32_t, int64_t.
template <typename T>
void BatchedGemm(const Eigen::ThreadPoolDevice* device, int64_t batch,
                 int64_t m, int64_t n, int64_t k, const T* a, bool a_transposed,
                 const T* b, bool b_transposed, T* out,
                 bool accumulate = false);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_GEMM_H_
