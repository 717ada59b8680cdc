// Convolution through the interpreter vs a raw Eigen GEMM of the same FLOPs.
//
// The convolution is the reference case: NHWC f32, batch 8,
// 56x56x64 -> 64 features, 3x3 kernel, stride 1, SAME padding. Its FLOP count
// is 2 * (8*56*56) * (3*3*64) * 64, exactly the GEMM m=25088, k=576, n=64
// that BM_EigenGemm runs through Eigen's tensor contraction on the same
// thread pool. BM_Convolution reports GFLOP/s and `ratio_vs_gemm`, its
// GFLOP/s divided by the GEMM's (measured in the same process, best of a few
// runs). Target: ratio_vs_gemm >= 0.5.
//
// Run:
//   bazel run -c opt //emulator/interpreter:conv_benchmark
// (the repo's .bazelrc already builds with -O2 -march=native).

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "benchmark/benchmark.h"
#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/test_util.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

constexpr int64_t kBatch = 8, kSize = 56, kIn = 64, kOut = 64, kK = 3;
constexpr int64_t kM = kBatch * kSize * kSize, kDepth = kK * kK * kIn;
constexpr double kFlops = 2.0 * kM * kDepth * kOut;

struct Pool {
  Pool()
      : threads(std::max(1u, std::thread::hardware_concurrency())),
        pool(threads),
        device(&pool, threads) {}
  int threads;
  Eigen::ThreadPool pool;
  Eigen::ThreadPoolDevice device;
};

Pool& GetPool() {
  static Pool* pool = new Pool();
  return *pool;
}

using Matrix = Eigen::Tensor<float, 2, Eigen::RowMajor>;

void RunGemm(const Matrix& a, const Matrix& b, Matrix& c) {
  Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
      Eigen::IndexPair<Eigen::Index>(1, 0)};
  c.device(GetPool().device) = a.contract(b, dims);
}

// Best-of-N GFLOP/s of the baseline GEMM.
double BaselineGflops() {
  static double gflops = [] {
    Matrix a(kM, kDepth), b(kDepth, kOut), c(kM, kOut);
    a.setRandom();
    b.setRandom();
    RunGemm(a, b, c);
    double best = 1e30;
    for (int i = 0; i < 5; ++i) {
      const auto start = std::chrono::steady_clock::now();
      RunGemm(a, b, c);
      const double s = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      best = std::min(best, s);
    }
    return kFlops / best / 1e9;
  }();
  return gflops;
}

void BM_EigenGemm(benchmark::State& state) {
  Matrix a(kM, kDepth), b(kDepth, kOut), c(kM, kOut);
  a.setRandom();
  b.setRandom();
  for (auto _ : state) {
    RunGemm(a, b, c);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      kFlops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_EigenGemm)->Unit(benchmark::kMillisecond)->UseRealTime();

xla::HloModuleProto ConvModule() {
  testing::HloModuleBuilder m("conv_benchmark");
  testing::ComputationBuilder& e = m.Entry();
  const int64_t x = e.Param(testing::S(xla::F32, {kBatch, kSize, kSize, kIn}));
  const int64_t w = e.Param(testing::S(xla::F32, {kK, kK, kIn, kOut}));
  e.Op("convolution", testing::S(xla::F32, {kBatch, kSize, kSize, kOut}),
       {x, w}, [](xla::HloInstructionProto& i) {
         xla::ConvolutionDimensionNumbers* dn =
             i.mutable_convolution_dimension_numbers();
         dn->set_input_batch_dimension(0);
         dn->add_input_spatial_dimensions(1);
         dn->add_input_spatial_dimensions(2);
         dn->set_input_feature_dimension(3);
         dn->add_kernel_spatial_dimensions(0);
         dn->add_kernel_spatial_dimensions(1);
         dn->set_kernel_input_feature_dimension(2);
         dn->set_kernel_output_feature_dimension(3);
         dn->set_output_batch_dimension(0);
         dn->add_output_spatial_dimensions(1);
         dn->add_output_spatial_dimensions(2);
         dn->set_output_feature_dimension(3);
         for (int d = 0; d < 2; ++d) {
           xla::WindowDimension* wd = i.mutable_window()->add_dimensions();
           wd->set_size(kK);
           wd->set_stride(1);
           wd->set_padding_low(1);
           wd->set_padding_high(1);
           wd->set_window_dilation(1);
           wd->set_base_dilation(1);
         }
         i.set_feature_group_count(1);
         i.set_batch_group_count(1);
       });
  return m.Build();
}

void BM_Convolution(benchmark::State& state) {
  const double baseline = BaselineGflops();
  absl::StatusOr<std::unique_ptr<Executable>> exe =
      Executable::Compile(ConvModule(), CompileOptions());
  if (!exe.ok()) {
    state.SkipWithError(std::string(exe.status().message()).c_str());
    return;
  }
  Literal x = Literal::Zeros(testing::S(xla::F32, {kBatch, kSize, kSize, kIn}));
  Literal w = Literal::Zeros(testing::S(xla::F32, {kK, kK, kIn, kOut}));
  {
    auto xs = x.mutable_data<float>();
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = (i % 17) * 0.25f - 2;
    auto ws = w.mutable_data<float>();
    for (size_t i = 0; i < ws.size(); ++i) ws[i] = (i % 13) * 0.125f - 0.75f;
  }
  ExecutionContext context;
  context.device = &GetPool().device;
  double best = 1e30;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<Literal> out = (*exe)->Execute({x, w}, context, nullptr);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = std::min(best, s);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out->untyped_data());
  }
  const double gflops = kFlops / best / 1e9;
  state.counters["GFLOP/s"] = gflops;
  state.counters["gemm_GFLOP/s"] = baseline;
  state.counters["ratio_vs_gemm"] = gflops / baseline;
}
BENCHMARK(BM_Convolution)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tpu::emulator::interpreter

BENCHMARK_MAIN();
