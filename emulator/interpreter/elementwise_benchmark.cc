// Memory-bound kernels vs. memcpy bandwidth measured in the same run. Run:
//   bazel run -c opt //emulator/interpreter:elementwise_benchmark
// Counters: GBps = bytes the operation must read + write per second, and
// ratio = GBps / memcpy GB/s (read + write).
//   fma_broadcast: (a * broadcast(b) + c) on f32[4096,4096] (16M elements);
//                  also ratio_vs_eigen = Eigen's fused tensor expression's
//                  time / ours (goal >= 0.9)
//   row_reduce:    sum over rows of f32[16384,4096] (64M elements); goal
//                  ratio >= 0.8

#include <cstring>

#include "benchmark/benchmark.h"
#include "emulator/interpreter/benchmark_util.h"

namespace tpu::emulator::interpreter {
namespace {

// memcpy of 256 MiB, split over the pool's threads like the kernels are.
// Returns the bytes it reads + writes.
double Memcpy() {
  static const int64_t bytes = int64_t{256} << 20;
  static const std::shared_ptr<AlignedBuffer> src =
      AlignedBuffer::AllocateZeroed(bytes);
  static const std::shared_ptr<AlignedBuffer> dst =
      AlignedBuffer::AllocateZeroed(bytes);
  const int64_t chunks = 64, chunk = bytes / chunks;
  bench::Device()->parallelFor(
      chunks, Eigen::TensorOpCost(chunk, chunk, 0),
      [&](Eigen::Index b, Eigen::Index e) {
        std::memcpy(static_cast<char*>(dst->data()) + b * chunk,
                    static_cast<const char*>(src->data()) + b * chunk,
                    (e - b) * chunk);
      });
  return 2.0 * bytes;
}

// Reports GBps of `run` (which moves `bytes`), memcpy's GBps measured in
// alternation with it, and their ratio.
void Report(benchmark::State& state, const std::function<void()>& run,
            double bytes) {
  double memcpy_bytes = 0;
  auto [seconds, memcpy_seconds] =
      bench::BestSecondsInterleaved(run, [&] { memcpy_bytes = Memcpy(); });
  const double gbps = bytes / seconds / 1e9;
  const double memcpy_gbps = memcpy_bytes / memcpy_seconds / 1e9;
  state.counters["GBps"] = gbps;
  state.counters["memcpy_GBps"] = memcpy_gbps;
  state.counters["ratio"] = gbps / memcpy_gbps;
}

Literal Filled(std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  Literal l = Literal::Uninitialized(Shape::Array(xla::F32, dims));
  float* p = l.mutable_data<float>().data();
  for (int64_t i = 0; i < n; ++i) p[i] = 0.5f + 0.001f * (i % 1000);
  return l;
}

void BM_FmaWithBroadcast(benchmark::State& state) {
  std::unique_ptr<Executable> exe = bench::MustCompile(R"(
ENTRY e {
  a = f32[4096,4096] parameter(0)
  b = f32[4096] parameter(1)
  c = f32[4096,4096] parameter(2)
  bb = f32[4096,4096] broadcast(b), dimensions={1}
  m = f32[4096,4096] multiply(a, bb)
  ROOT r = f32[4096,4096] add(m, c)
})");
  Literal a = Filled({4096, 4096}), b = Filled({4096}),
          c = Filled({4096, 4096});
  auto run = [&] {
    Literal out = bench::MustExecute(*exe, {a, b, c});
    benchmark::DoNotOptimize(out.untyped_data());
  };
  for (auto _ : state) run();
  Report(state, run, 4.0 * (3.0 * 4096 * 4096 + 4096));
  // Eigen's fused tensor expression of the same computation on the same
  // pool, into a fresh output as the interpreter's, measured alternately.
  using Matrix = Eigen::Tensor<float, 2, Eigen::RowMajor>;
  using Vector = Eigen::Tensor<float, 1, Eigen::RowMajor>;
  auto eigen = [&] {
    Literal out = Literal::Uninitialized(Shape::Array(xla::F32, {4096, 4096}));
    Eigen::TensorMap<const Matrix> A(a.data<float>().data(), 4096, 4096);
    Eigen::TensorMap<const Matrix> C(c.data<float>().data(), 4096, 4096);
    Eigen::TensorMap<const Vector> B(b.data<float>().data(), 4096);
    Eigen::TensorMap<Matrix> O(out.mutable_data<float>().data(), 4096, 4096);
    Eigen::array<Eigen::Index, 2> row{1, 4096}, rows{4096, 1};
    O.device(*bench::Device()) = A * B.reshape(row).broadcast(rows) + C;
    benchmark::DoNotOptimize(out.untyped_data());
  };
  auto [seconds, eigen_seconds] = bench::BestSecondsInterleaved(run, eigen);
  state.counters["ratio_vs_eigen"] = eigen_seconds / seconds;
}
BENCHMARK(BM_FmaWithBroadcast)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_RowReduce(benchmark::State& state) {
  std::unique_ptr<Executable> exe = bench::MustCompile(R"(
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[16384,4096] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[16384] reduce(a, z), dimensions={1}, to_apply=add
})");
  Literal a = Filled({16384, 4096});
  auto run = [&] {
    Literal out = bench::MustExecute(*exe, {a});
    benchmark::DoNotOptimize(out.untyped_data());
  };
  for (auto _ : state) run();
  Report(state, run, 4.0 * (16384.0 * 4096 + 16384));
}
BENCHMARK(BM_RowReduce)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tpu::emulator::interpreter

BENCHMARK_MAIN();
