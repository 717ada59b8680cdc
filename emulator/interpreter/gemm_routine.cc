#include "emulator/interpreter/gemm_routine.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

#include "emulator/interpreter/gemm.h"
#include "hlo/aligned_buffer.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

// Products at most this large (m*n*k) are "small": libxsmm's kernels keep
// them in registers and L1, where the GEMM libraries' packing costs more
// than the arithmetic.
constexpr int64_t kSmallProduct = int64_t{64} * 64 * 64;

// A oneDNN tile is worth its packing from about this many flops on.
constexpr double kMinTileFlops = 4e6;

// Runs fn(begin, end) over [0, n) on the pool with Eigen's cost model; cost
// is per item, in cycles.
template <typename Fn>
void Parallel(const Eigen::ThreadPoolDevice* device, int64_t n, double cost,
              Fn&& fn) {
  if (n <= 0) return;
  if (device == nullptr || device->numThreads() <= 1 || n == 1) {
    fn(0, n);
    return;
  }
  device->parallelFor(
      n, Eigen::TensorOpCost(0, 0, cost),
      [&fn](Eigen::Index begin, Eigen::Index end) { fn(begin, end); });
}

bool AllStayNormal(const Eigen::ThreadPoolDevice* device, const void* data,
                   int64_t n) {
  const auto* x = static_cast<const uint16_t*>(data);
  constexpr int64_t kChunk = 1 << 16;
  std::atomic<bool> ok{true};
  Parallel(device, (n + kChunk - 1) / kChunk, kChunk,
           [&](int64_t begin, int64_t end) {
             const int64_t first = begin * kChunk;
             const int64_t last = std::min(n, end * kChunk);
             if (!Bf16ProductsStayNormal(x + first, last - first)) {
               ok.store(false, std::memory_order_relaxed);
             }
           });
  return ok.load();
}

std::shared_ptr<AlignedBuffer> Bf16ToF32(const Eigen::ThreadPoolDevice* device,
                                         const void* data, int64_t n) {
  std::shared_ptr<AlignedBuffer> out = AlignedBuffer::Allocate(n * 4);
  const auto* x = static_cast<const uint16_t*>(data);
  auto* y = static_cast<uint32_t*>(out->data());
  Parallel(device, (n + 4095) / 4096, 4096 * 2.0,
           [&](int64_t begin, int64_t end) {
             for (int64_t i = begin * 4096; i < std::min(n, end * 4096); ++i) {
               y[i] = static_cast<uint32_t>(x[i]) << 16;  // exact
             }
           });
  return out;
}

}  // namespace

const char* GemmLibraryName(GemmLibrary library) {
  switch (library) {
    case GemmLibrary::kEigen:
      return "eigen";
    case GemmLibrary::kOneDnn:
      return "onednn";
    case GemmLibrary::kLibxsmm:
      return "libxsmm";
  }
  return "unknown";
}

GemmRoutine GemmRoutine::Choose(const GemmShape& shape, bool bf16_operands) {
  GemmRoutine r;
  r.shape_ = shape;
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  const bool transposed = shape.a_transposed || shape.b_transposed;
  if (m == 0 || n == 0 || k == 0 || shape.batch == 0) {
    r.library_ = GemmLibrary::kEigen;
  } else if (m == 1 || n == 1) {
    // Matrix-vector: memory-bound; Eigen's GEMV streams the matrix once
    // while the GEMM libraries pack it first (2-5x slower here).
    r.library_ = GemmLibrary::kEigen;
  } else if (m * n * k <= kSmallProduct) {
    if (!transposed) {
      r.xsmm_[0] = XsmmKernel::Dispatch(m, n, k, false);
      r.xsmm_[1] = XsmmKernel::Dispatch(m, n, k, true);
    }
    r.library_ = r.xsmm_[0].ok() && r.xsmm_[1].ok() ? GemmLibrary::kLibxsmm
                                                    : GemmLibrary::kEigen;
  } else {
    r.library_ = GemmLibrary::kOneDnn;
  }
  r.bf16_ = bf16_operands && r.library_ == GemmLibrary::kOneDnn;
  return r;
}

void GemmRoutine::Run(const Eigen::ThreadPoolDevice* device, const void* a,
                      const void* b, float* out, bool accumulate) const {
  const GemmShape& s = shape_;
  switch (library_) {
    case GemmLibrary::kEigen:
      BatchedGemm<float>(device, s.batch, s.m, s.n, s.k,
                         static_cast<const float*>(a), s.a_transposed,
                         static_cast<const float*>(b), s.b_transposed, out,
                         accumulate);
      return;
    case GemmLibrary::kLibxsmm:
      RunXsmm(device, static_cast<const float*>(a),
              static_cast<const float*>(b), out, accumulate);
      return;
    case GemmLibrary::kOneDnn:
      break;
  }
  if (!bf16_) {
    RunOneDnn(device, a, b, false, out, accumulate);
    return;
  }
  const int64_t a_size = s.batch * s.m * s.k, b_size = s.batch * s.k * s.n;
  if (!accumulate && AllStayNormal(device, a, a_size) &&
      AllStayNormal(device, b, b_size)) {
    RunOneDnn(device, a, b, true, out, accumulate);
    return;
  }
  // A denormal could flush to zero on the BF16 units: take the exact f32
  // product of the same (exactly converted) values instead.
  std::shared_ptr<AlignedBuffer> af = Bf16ToF32(device, a, a_size);
  std::shared_ptr<AlignedBuffer> bf = Bf16ToF32(device, b, b_size);
  RunOneDnn(device, af->data(), bf->data(), false, out, accumulate);
}

void GemmRoutine::RunRows(const Eigen::ThreadPoolDevice* device, const void* a,
                          const void* b, float* out,
                          const RowsDone& rows_done) const {
  const GemmShape& s = shape_;
  if (library_ != GemmLibrary::kOneDnn || s.batch != 1 || s.m < s.n) {
    Run(device, a, b, out, false);
    rows_done(0, s.m * s.batch);
    return;
  }
  if (bf16_) {
    if (AllStayNormal(device, a, s.m * s.k) &&
        AllStayNormal(device, b, s.k * s.n)) {
      RunOneDnn(device, a, b, true, out, false, &rows_done);
      return;
    }
    std::shared_ptr<AlignedBuffer> af = Bf16ToF32(device, a, s.m * s.k);
    std::shared_ptr<AlignedBuffer> bf = Bf16ToF32(device, b, s.k * s.n);
    RunOneDnn(device, af->data(), bf->data(), false, out, false, &rows_done);
    return;
  }
  RunOneDnn(device, a, b, false, out, false, &rows_done);
}

void GemmRoutine::RunXsmm(const Eigen::ThreadPoolDevice* device, const float* a,
                          const float* b, float* out, bool accumulate) const {
  const GemmShape& s = shape_;
  const XsmmKernel& kernel = xsmm_[accumulate ? 1 : 0];
  Parallel(
      device, s.batch, 2.0 * s.m * s.n * s.k, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          kernel.Run(a + i * s.m * s.k, b + i * s.k * s.n, out + i * s.m * s.n);
        }
      });
}

void GemmRoutine::RunOneDnn(const Eigen::ThreadPoolDevice* device,
                            const void* a, const void* b, bool bf16, float* out,
                            bool accumulate, const RowsDone* rows_done) const {
  const GemmShape& s = shape_;
  const int64_t width = bf16 ? 2 : 4;
  const int64_t threads = device == nullptr ? 1 : device->numThreads();
  // Tiles of rows (or of columns when n > m), several per thread: the pool's
  // cores are shared, and small tiles let an idle thread take over.
  const bool by_rows = s.m >= s.n;
  const int64_t extent = by_rows ? s.m : s.n;
  const double flops = 2.0 * s.m * s.n * s.k;
  int64_t tiles = threads > 1 ? (4 * threads + s.batch - 1) / s.batch : 1;
  tiles = std::min<int64_t>(tiles, std::max<int64_t>(1, extent / 32));
  tiles = std::min<int64_t>(
      tiles, std::max<int64_t>(1, static_cast<int64_t>(flops / kMinTileFlops)));
  if (rows_done != nullptr) {
    // Tiles whose output stays in L2 for the consumer.
    constexpr int64_t kConsumerTileBytes = 256 * 1024;
    tiles = std::max(tiles, s.m * s.n * 4 / kConsumerTileBytes);
    tiles = std::min<int64_t>(tiles, std::max<int64_t>(1, extent / 16));
  }
  int64_t step = (extent + tiles - 1) / tiles;
  step = std::min(extent, (step + 15) / 16 * 16);
  tiles = (extent + step - 1) / step;
  const auto* a_bytes = static_cast<const char*>(a);
  const auto* b_bytes = static_cast<const char*>(b);
  auto run = bf16 ? &OneDnnGemmBf16 : &OneDnnGemmF32;
  Parallel(device, s.batch * tiles, flops / tiles,
           [&](int64_t begin, int64_t end) {
             for (int64_t item = begin; item < end; ++item) {
               const int64_t batch = item / tiles;
               const int64_t lo = (item % tiles) * step;
               const int64_t hi = std::min(extent, lo + step);
               const int64_t m0 = by_rows ? lo : 0, m1 = by_rows ? hi : s.m;
               const int64_t n0 = by_rows ? 0 : lo, n1 = by_rows ? s.n : hi;
               GemmTile t;
               t.m = m1 - m0;
               t.n = n1 - n0;
               t.k = s.k;
               const char* a_batch = a_bytes + batch * s.m * s.k * width;
               const char* b_batch = b_bytes + batch * s.k * s.n * width;
               t.a_transposed = s.a_transposed;
               t.lda = s.a_transposed ? s.m : s.k;
               t.a = a_batch + (s.a_transposed ? m0 : m0 * s.k) * width;
               t.b_transposed = s.b_transposed;
               t.ldb = s.b_transposed ? s.k : s.n;
               t.b = b_batch + (s.b_transposed ? n0 * s.k : n0) * width;
               t.c = out + batch * s.m * s.n + m0 * s.n + n0;
               t.ldc = s.n;
               t.accumulate = accumulate;
               run(t);
               // RunRows calls with batch 1 and row tiles only.
               if (rows_done != nullptr) (*rows_done)(m0, m1);
             }
           });
}

}  // namespace tpu::emulator::interpreter
