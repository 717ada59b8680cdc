// Dot through the interpreter vs. a direct Eigen contraction on the same
// thread pool, measured in the same run. Run:
//   bazel run -c opt //emulator/interpreter:dot_benchmark
// Counters: GFLOPS (best of 5) and ratio = that / direct Eigen f32 GFLOP/s.
// Targets: f32 ratio >= 0.8; bf16 x bf16 -> f32 ratio >= 0.7.

#include "benchmark/benchmark.h"
#include "emulator/interpreter/benchmark_util.h"

namespace tpu::emulator::interpreter {
namespace {

constexpr int64_t kN = 1024;
constexpr double kFlops = 2.0 * kN * kN * kN;

std::vector<float> Filled(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = 0.001f * static_cast<float>(i % 997);
  return v;
}

// Direct Eigen contraction, the baseline (cached: measured once per run).
double EigenSeconds() {
  static const double seconds = [] {
    std::vector<float> a = Filled(kN * kN), b = Filled(kN * kN), c(kN * kN);
    using Matrix = Eigen::Tensor<float, 2, Eigen::RowMajor>;
    Eigen::TensorMap<const Matrix> A(a.data(), kN, kN), B(b.data(), kN, kN);
    Eigen::TensorMap<Matrix> C(c.data(), kN, kN);
    Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
        Eigen::IndexPair<Eigen::Index>(1, 0)};
    return bench::BestSeconds(
        [&] { C.device(*bench::Device()) = A.contract(B, dims); });
  }();
  return seconds;
}

void BM_EigenContractionF32(benchmark::State& state) {
  for (auto _ : state) {
    state.SetIterationTime(EigenSeconds());
  }
  state.counters["GFLOPS"] = kFlops / EigenSeconds() / 1e9;
}
BENCHMARK(BM_EigenContractionF32)->UseManualTime()->Iterations(1);

void RunDot(benchmark::State& state, const std::string& type) {
  const std::string text =
      "ENTRY e {\n  a = " + type + "[1024,1024] parameter(0)\n  b = " + type +
      "[1024,1024] parameter(1)\n  ROOT d = f32[1024,1024] dot(a, b), "
      "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  std::unique_ptr<Executable> exe = bench::MustCompile(text);
  std::vector<float> values = Filled(kN * kN);
  Literal a;
  if (type == "f32") {
    a = testing::Vec<float>(xla::F32, {kN, kN}, values);
  } else {
    std::vector<Eigen::bfloat16> v(values.begin(), values.end());
    a = testing::Vec<Eigen::bfloat16>(xla::BF16, {kN, kN}, v);
  }
  auto run = [&] {
    Literal out = bench::MustExecute(*exe, {a, a});
    benchmark::DoNotOptimize(out.untyped_data());
  };
  for (auto _ : state) run();
  const double seconds = bench::BestSeconds(run);
  state.counters["GFLOPS"] = kFlops / seconds / 1e9;
  state.counters["ratio"] = EigenSeconds() / seconds;
}

void BM_InterpreterDotF32(benchmark::State& state) { RunDot(state, "f32"); }
void BM_InterpreterDotBf16(benchmark::State& state) { RunDot(state, "bf16"); }
BENCHMARK(BM_InterpreterDotF32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_InterpreterDotBf16)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tpu::emulator::interpreter

BENCHMARK_MAIN();
