// Dot through the interpreter vs. a direct Eigen tensor contraction of the
// same f32 product on the same thread pool, measured alternately in the same
// run (best of 10 each). Run:
//   bazel run //emulator/interpreter:dot_benchmark
// Counters: GFLOPS, eigen_GFLOPS and ratio = GFLOPS / eigen_GFLOPS.
// Goals (issue 16): f32 1024^3 and 2048^3 ratio >= 1.2; bf16 x bf16 -> f32
// ratio (against Eigen's f32 product) >= 1.1. The other cases cover the
// other shape classes gemm_routine.h routes: tall-skinny, the im2col GEMM of
// a 3x3 convolution, transposed operands, batched small products (baseline:
// one contraction per batch element) and a matrix-vector product.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "emulator/interpreter/benchmark_util.h"

namespace tpu::emulator::interpreter {
namespace {

struct DotCase {
  int64_t batch, m, n, k;
  bool lhs_transposed = false;  // lhs stored [k, m]
  const char* type = "f32";     // operand type; the result is f32
};

std::string Dims(const DotCase& c, int64_t rows, int64_t cols) {
  return c.batch > 1 ? absl::StrCat(c.batch, ",", rows, ",", cols)
                     : absl::StrCat(rows, ",", cols);
}

std::string DotHlo(const DotCase& c) {
  const std::string lhs =
      c.lhs_transposed ? Dims(c, c.k, c.m) : Dims(c, c.m, c.k);
  const int64_t offset = c.batch > 1 ? 1 : 0;
  std::string batch_dims =
      c.batch > 1 ? "lhs_batch_dims={0}, rhs_batch_dims={0}, " : "";
  return absl::StrCat("ENTRY e {\n  a = ", c.type, "[", lhs,
                      "] parameter(0)\n  b = ", c.type, "[", Dims(c, c.k, c.n),
                      "] parameter(1)\n  ROOT d = f32[", Dims(c, c.m, c.n),
                      "] dot(a, b), ", batch_dims, "lhs_contracting_dims={",
                      offset + (c.lhs_transposed ? 0 : 1),
                      "}, rhs_contracting_dims={", offset, "}\n}\n");
}

Literal Filled(const char* type, std::vector<int64_t> dims) {
  Literal l = Literal::Uninitialized(
      Shape::Array(std::string(type) == "f32" ? xla::F32 : xla::BF16, dims));
  const int64_t n = l.shape().element_count();
  for (int64_t i = 0; i < n; ++i) {
    const float v = 0.001f * static_cast<float>(i % 997) - 0.4f;
    if (std::string(type) == "f32") {
      l.mutable_data<float>()[i] = v;
    } else {
      l.mutable_data<Eigen::bfloat16>()[i] = Eigen::bfloat16(v);
    }
  }
  return l;
}

void RunDot(benchmark::State& state, const DotCase& c) {
  std::unique_ptr<Executable> exe = bench::MustCompile(DotHlo(c));
  std::vector<int64_t> lhs_dims = {c.lhs_transposed ? c.k : c.m,
                                   c.lhs_transposed ? c.m : c.k};
  std::vector<int64_t> rhs_dims = {c.k, c.n};
  if (c.batch > 1) {
    lhs_dims.insert(lhs_dims.begin(), c.batch);
    rhs_dims.insert(rhs_dims.begin(), c.batch);
  }
  Literal a = Filled(c.type, lhs_dims), b = Filled(c.type, rhs_dims);
  auto run = [&] {
    Literal out = bench::MustExecute(*exe, {a, b});
    benchmark::DoNotOptimize(out.untyped_data());
  };
  // The baseline: Eigen's f32 contraction of the same shape, per batch
  // element, on the same pool.
  Literal af = Filled("f32", lhs_dims), bf = Filled("f32", rhs_dims);
  std::vector<float> cf(c.batch * c.m * c.n);
  using Matrix = Eigen::Tensor<float, 2, Eigen::RowMajor>;
  auto eigen = [&] {
    for (int64_t i = 0; i < c.batch; ++i) {
      Eigen::TensorMap<const Matrix> A(af.data<float>().data() + i * c.m * c.k,
                                       lhs_dims[lhs_dims.size() - 2],
                                       lhs_dims.back());
      Eigen::TensorMap<const Matrix> B(bf.data<float>().data() + i * c.k * c.n,
                                       c.k, c.n);
      Eigen::TensorMap<Matrix> C(cf.data() + i * c.m * c.n, c.m, c.n);
      Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
          Eigen::IndexPair<Eigen::Index>(c.lhs_transposed ? 0 : 1, 0)};
      C.device(*bench::Device()) = A.contract(B, dims);
    }
  };
  for (auto _ : state) run();
  auto [seconds, eigen_seconds] = bench::BestSecondsInterleaved(run, eigen);
  const double flops = 2.0 * c.batch * c.m * c.n * c.k;
  state.counters["GFLOPS"] = flops / seconds / 1e9;
  state.counters["eigen_GFLOPS"] = flops / eigen_seconds / 1e9;
  state.counters["ratio"] = eigen_seconds / seconds;
}

void RegisterAll() {
  struct Named {
    const char* name;
    DotCase c;
  };
  const Named cases[] = {
      {"f32_1024^3", {1, 1024, 1024, 1024}},
      {"f32_2048^3", {1, 2048, 2048, 2048}},
      {"bf16_1024^3", {1, 1024, 1024, 1024, false, "bf16"}},
      {"bf16_2048^3", {1, 2048, 2048, 2048, false, "bf16"}},
      {"f32_1024^3_lhs_transposed", {1, 1024, 1024, 1024, true}},
      {"f32_mlp_256x512x1024", {1, 256, 1024, 512}},
      {"f32_tall_65536x256x16", {1, 65536, 16, 256}},
      {"f32_im2col_3x3_25088x576x64", {1, 25088, 64, 576}},
      {"f32_im2col_3x3_8192x288x64", {1, 8192, 64, 288}},
      {"f32_batch256_64^3", {256, 64, 64, 64}},
      {"f32_batch4096_8^3", {4096, 8, 8, 8}},
      {"f32_matvec_4096x4096", {1, 4096, 1, 4096}},
  };
  for (const Named& n : cases) {
    benchmark::RegisterBenchmark(
        n.name, [c = n.c](benchmark::State& state) { RunDot(state, c); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1);
  }
}

}  // namespace
}  // namespace tpu::emulator::interpreter

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tpu::emulator::interpreter::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
