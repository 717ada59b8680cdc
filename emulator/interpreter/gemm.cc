#include "emulator/interpreter/gemm.h"

#include <algorithm>
#include <complex>
#include <type_traits>
#include <vector>

#include "Eigen/Core"
#include "unsupported/Eigen/CXX11/Tensor"

// Build-time note: Eigen's tensor contraction on a ThreadPoolDevice is by far
// the most expensive template in the project to compile (minutes per
// instantiation on this machine). It is instantiated exactly once, for the
// hot f32 product without accumulation; every other case uses Eigen's matrix
// product (cheap to compile, same kernels single-threaded), parallelized by
// splitting rows of the output across the pool.

namespace tpu::emulator::interpreter {
namespace {

template <typename T>
using RowMajorMatrix =
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMatrixMap = Eigen::Map<const RowMajorMatrix<T>, Eigen::Unaligned>;
template <typename T>
using MatrixMap = Eigen::Map<RowMajorMatrix<T>, Eigen::Unaligned>;

// out[rows begin..end) of one product, on the calling thread.
template <typename T>
void GemmRows(int64_t begin, int64_t end, int64_t m, int64_t n, int64_t k,
              const T* a, bool a_transposed, const T* b, bool b_transposed,
              T* out, bool accumulate) {
  const int64_t rows = end - begin;
  if (rows <= 0) return;
  MatrixMap<T> result(out + begin * n, rows, n);
  // B as a k x n matrix expression.
  auto multiply = [&](const auto& lhs) {
    if (b_transposed) {
      ConstMatrixMap<T> rhs(b, n, k);
      if (accumulate) {
        result.noalias() += lhs * rhs.transpose();
      } else {
        result.noalias() = lhs * rhs.transpose();
      }
    } else {
      ConstMatrixMap<T> rhs(b, k, n);
      if (accumulate) {
        result.noalias() += lhs * rhs;
      } else {
        result.noalias() = lhs * rhs;
      }
    }
  };
  if (a_transposed) {
    // A is stored k x m; rows [begin, end) of A are its columns.
    ConstMatrixMap<T> stored(a, k, m);
    multiply(stored.middleCols(begin, rows).transpose());
  } else {
    ConstMatrixMap<T> stored(a + begin * k, rows, k);
    multiply(stored);
  }
}

// One product, split by rows over the pool when it is large enough.
template <typename T>
void GemmParallelRows(const Eigen::ThreadPoolDevice* device, int64_t m,
                      int64_t n, int64_t k, const T* a, bool a_transposed,
                      const T* b, bool b_transposed, T* out, bool accumulate) {
  if (device == nullptr || device->numThreads() <= 1 ||
      m * n * k < int64_t{64} * 64 * 64) {
    GemmRows(0, m, m, n, k, a, a_transposed, b, b_transposed, out, accumulate);
    return;
  }
  const int64_t blocks = std::min<int64_t>(device->numThreads(), m);
  const int64_t rows_per_block = (m + blocks - 1) / blocks;
  device->parallelFor(
      blocks, Eigen::TensorOpCost(0, 0, 2.0 * rows_per_block * n * k),
      [&](Eigen::Index first, Eigen::Index last) {
        for (Eigen::Index blk = first; blk < last; ++blk) {
          const int64_t begin = blk * rows_per_block;
          GemmRows(begin, std::min(m, begin + rows_per_block), m, n, k, a,
                   a_transposed, b, b_transposed, out, accumulate);
        }
      });
}

// The hot path: f32 on the pool with Eigen's tensor contraction, whose
// blocking shares packed panels between threads.
void ContractF32(const Eigen::ThreadPoolDevice& device, int64_t m, int64_t n,
                 int64_t k, const float* a, bool a_transposed, const float* b,
                 bool b_transposed, float* out) {
  using Matrix = Eigen::Tensor<float, 2, Eigen::RowMajor>;
  Eigen::TensorMap<const Matrix> lhs(a, a_transposed ? k : m,
                                     a_transposed ? m : k);
  Eigen::TensorMap<const Matrix> rhs(b, b_transposed ? n : k,
                                     b_transposed ? k : n);
  Eigen::TensorMap<Matrix> result(out, m, n);
  Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
      Eigen::IndexPair<Eigen::Index>(a_transposed ? 0 : 1,
                                     b_transposed ? 1 : 0)};
  result.device(device) = lhs.contract(rhs, dims);
}

template <typename T>
void OneProduct(const Eigen::ThreadPoolDevice* device, int64_t m, int64_t n,
                int64_t k, const T* a, bool a_transposed, const T* b,
                bool b_transposed, T* out, bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    if (device != nullptr && device->numThreads() > 1 &&
        m * n * k >= int64_t{64} * 64 * 64) {
      if (!accumulate) {
        ContractF32(*device, m, n, k, a, a_transposed, b, b_transposed, out);
        return;
      }
      std::vector<float> product(static_cast<size_t>(m * n));
      ContractF32(*device, m, n, k, a, a_transposed, b, b_transposed,
                  product.data());
      for (int64_t i = 0; i < m * n; ++i) out[i] += product[i];
      return;
    }
  }
  GemmParallelRows(device, m, n, k, a, a_transposed, b, b_transposed, out,
                   accumulate);
}

template <typename T>
void BatchedGemmImpl(const Eigen::ThreadPoolDevice* device, int64_t batch,
                     int64_t m, int64_t n, int64_t k, const T* a,
                     bool a_transposed, const T* b, bool b_transposed, T* out,
                     bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) std::fill(out, out + batch * m * n, T(0));
    return;
  }
  const int64_t threads = device == nullptr ? 1 : device->numThreads();
  // Many small products: one per thread beats splitting each one.
  const bool per_batch_threads =
      threads > 1 && batch >= threads && m * n * k <= 128 * 128 * 128;
  if (per_batch_threads) {
    device->parallelFor(batch, Eigen::TensorOpCost(0, 0, 2.0 * m * n * k),
                        [&](Eigen::Index first, Eigen::Index last) {
                          for (Eigen::Index i = first; i < last; ++i) {
                            GemmRows(0, m, m, n, k, a + i * m * k, a_transposed,
                                     b + i * k * n, b_transposed,
                                     out + i * m * n, accumulate);
                          }
                        });
    return;
  }
  for (int64_t i = 0; i < batch; ++i) {
    OneProduct(device, m, n, k, a + i * m * k, a_transposed, b + i * k * n,
               b_transposed, out + i * m * n, accumulate);
  }
}

}  // namespace

template <typename T>
void BatchedGemm(const Eigen::ThreadPoolDevice* device, int64_t batch,
                 int64_t m, int64_t n, int64_t k, const T* a, bool a_transposed,
                 const T* b, bool b_transposed, T* out, bool accumulate) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    // XLA's signed integer products and sums wrap; in C++ a signed overflow
    // is undefined (UBSan caught Eigen's s32 GEMM at it). The same bits come
    // out of unsigned arithmetic, which wraps by definition.
    using U = std::make_unsigned_t<T>;
    BatchedGemmImpl<U>(device, batch, m, n, k, reinterpret_cast<const U*>(a),
                       a_transposed, reinterpret_cast<const U*>(b),
                       b_transposed, reinterpret_cast<U*>(out), accumulate);
  } else {
    BatchedGemmImpl<T>(device, batch, m, n, k, a, a_transposed, b, b_transposed,
                       out, accumulate);
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

}  // namespace tpu::emulator::interpreter
