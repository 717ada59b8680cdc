#include "emulator/interpreter/gemm.h"

#include <complex>

#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu {
namespace interpreter {
namespace {

template <typename T, typename Device>
void OneGemm(const Device& device, int64_t m, int64_t n, int64_t k, const T* a,
             bool a_transposed, const T* b, bool b_transposed, T* out,
             bool accumulate) {
  using Matrix = Eigen::Tensor<T, 2, Eigen::RowMajor>;
  using ConstMap = Eigen::TensorMap<const Matrix>;
  using Map = Eigen::TensorMap<Matrix>;
  ConstMap lhs(a, a_transposed ? k : m, a_transposed ? m : k);
  ConstMap rhs(b, b_transposed ? n : k, b_transposed ? k : n);
  Map result(out, m, n);
  Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
      Eigen::IndexPair<Eigen::Index>(a_transposed ? 0 : 1,
                                     b_transposed ? 1 : 0)};
  if (accumulate) {
    result.device(device) += lhs.contract(rhs, dims);
  } else {
    result.device(device) = lhs.contract(rhs, dims);
  }
}

}  // namespace

template <typename T>
void BatchedGemm(const Eigen::ThreadPoolDevice* device, int64_t batch,
                 int64_t m, int64_t n, int64_t k, const T* a, bool a_transposed,
                 const T* b, bool b_transposed, T* out, bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) std::fill(out, out + batch * m * n, T(0));
    return;
  }
  const int64_t threads = device == nullptr ? 1 : device->numThreads();
  // Many small products: one per thread beats splitting each one.
  const bool per_batch_threads =
      threads > 1 && batch >= threads && m * n * k <= 128 * 128 * 128;
  if (device == nullptr || per_batch_threads) {
    auto run = [&](int64_t begin, int64_t end) {
      Eigen::DefaultDevice single;
      for (int64_t i = begin; i < end; ++i) {
        OneGemm(single, m, n, k, a + i * m * k, a_transposed, b + i * k * n,
                b_transposed, out + i * m * n, accumulate);
      }
    };
    if (device == nullptr) {
      run(0, batch);
    } else {
      device->parallelFor(batch, Eigen::TensorOpCost(0, 0, 2.0 * m * n * k),
                          [&](Eigen::Index s, Eigen::Index e) { run(s, e); });
    }
    return;
  }
  for (int64_t i = 0; i < batch; ++i) {
    OneGemm(*device, m, n, k, a + i * m * k, a_transposed, b + i * k * n,
            b_transposed, out + i * m * n, accumulate);
  }
}

#define TPU_INSTANTIATE_GEMM(T)                                           \
  template void BatchedGemm<T>(const Eigen::ThreadPoolDevice*, int64_t,   \
                               int64_t, int64_t, int64_t, const T*, bool, \
                               const T*, bool, T*, bool);
TPU_INSTANTIATE_GEMM(float)
TPU_INSTANTIATE_GEMM(double)
TPU_INSTANTIATE_GEMM(std::complex<float>)
TPU_INSTANTIATE_GEMM(std::complex<double>)
TPU_INSTANTIATE_GEMM(int32_t)
TPU_INSTANTIATE_GEMM(int64_t)
#undef TPU_INSTANTIATE_GEMM

}  // namespace interpreter
}  // namespace tpu
