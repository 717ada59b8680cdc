// Whole small models, reported as ms per step: an MLP training step
// (forward, backward, SGD) with batch 256, 512 -> 1024 -> 128, and a CNN
// inference step whose achieved GFLOP/s is compared with the best GEMM rate
// (goal: ratio >= 0.5). Run:
//   bazel run //emulator/interpreter:model_benchmark

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "benchmark/benchmark.h"
#include "emulator/interpreter/benchmark_util.h"
#include "hlo/hlo_module.h"
#include "hlo/host_memory.h"
#include "hlo/text/hlo_parser.h"

namespace tpu::emulator::interpreter {
namespace {

constexpr char kMlpStep[] = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY step {
  x = f32[%B,%I] parameter(0)
  y = f32[%B,%O] parameter(1)
  w1 = f32[%I,%H] parameter(2)
  b1 = f32[%H] parameter(3)
  w2 = f32[%H,%O] parameter(4)
  b2 = f32[%O] parameter(5)
  xw = f32[%B,%H] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b1b = f32[%B,%H] broadcast(b1), dimensions={1}
  z = f32[%B,%H] add(xw, b1b)
  zero = f32[] constant(0)
  zeros = f32[%B,%H] broadcast(zero), dimensions={}
  h = f32[%B,%H] maximum(z, zeros)
  hw = f32[%B,%O] dot(h, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b2b = f32[%B,%O] broadcast(b2), dimensions={1}
  o = f32[%B,%O] add(hw, b2b)
  diff = f32[%B,%O] subtract(o, y)
  sq = f32[%B,%O] multiply(diff, diff)
  loss = f32[] reduce(sq, zero), dimensions={0,1}, to_apply=add
  dw2 = f32[%H,%O] dot(h, diff), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  db2 = f32[%O] reduce(diff, zero), dimensions={0}, to_apply=add
  dh = f32[%B,%H] dot(diff, w2), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  pos = pred[%B,%H] compare(z, zeros), direction=GT
  dz = f32[%B,%H] select(pos, dh, zeros)
  dw1 = f32[%I,%H] dot(x, dz), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  db1 = f32[%H] reduce(dz, zero), dimensions={0}, to_apply=add
  lr = f32[] constant(0.001)
  l1 = f32[%I,%H] broadcast(lr), dimensions={}
  u1 = f32[%I,%H] multiply(dw1, l1)
  w1n = f32[%I,%H] subtract(w1, u1)
  l2 = f32[%H] broadcast(lr), dimensions={}
  v1 = f32[%H] multiply(db1, l2)
  b1n = f32[%H] subtract(b1, v1)
  l3 = f32[%H,%O] broadcast(lr), dimensions={}
  u2 = f32[%H,%O] multiply(dw2, l3)
  w2n = f32[%H,%O] subtract(w2, u2)
  l4 = f32[%O] broadcast(lr), dimensions={}
  v2 = f32[%O] multiply(db2, l4)
  b2n = f32[%O] subtract(b2, v2)
  ROOT out = (f32[], f32[%I,%H], f32[%H], f32[%H,%O], f32[%O]) tuple(loss, w1n, b1n, w2n, b2n)
}
)";

Literal Filled(std::vector<int64_t> dims) {
  Literal l = Literal::Uninitialized(Shape::Array(xla::F32, dims));
  auto p = l.mutable_data<float>();
  for (size_t i = 0; i < p.size(); ++i) p[i] = 0.01f * ((i * 7) % 13) - 0.06f;
  return l;
}

// With MODEL_PROFILE=1 in the environment, prints where a step's time goes:
// per top-level instruction, its opcode and shape, the best of a few steps.
class StepProfile : public InstructionObserver {
 public:
  explicit StepProfile(const HloModule& module) {
    for (const HloInstruction* i : module.entry()->instructions_in_order()) {
      shapes_[i->name()] = i->shape().ToString();
    }
  }
  void Started(const std::string&) override {
    start_ = std::chrono::steady_clock::now();
  }
  void Finished(const std::string& instruction, const std::string& opcode,
                int64_t) override {
    const double us = std::chrono::duration<double, std::micro>(
                          std::chrono::steady_clock::now() - start_)
                          .count();
    Entry& e = entries_[instruction];
    e.opcode = opcode;
    e.best_us = e.runs == 0 ? us : std::min(e.best_us, us);
    ++e.runs;
  }
  void Print(const char* title) const {
    std::vector<std::pair<double, std::string>> rows;
    double total = 0;
    for (const auto& [name, e] : entries_) {
      rows.push_back({e.best_us, name});
      total += e.best_us;
    }
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(stderr, "%s: sum of best per-instruction times %.0f us\n",
                 title, total);
    for (const auto& [us, name] : rows) {
      if (us < 0.005 * total) break;
      auto it = shapes_.find(name);
      std::fprintf(stderr, "  %8.0f us %5.1f%%  %-16s %-28s %s\n", us,
                   100 * us / total, entries_.at(name).opcode.c_str(),
                   name.c_str(), it == shapes_.end() ? "" : it->second.c_str());
    }
  }

 private:
  struct Entry {
    std::string opcode;
    double best_us = 0;
    int runs = 0;
  };
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> shapes_;
};

void MaybeProfile(const char* title, const std::string& text,
                  const Executable& exe, const std::vector<Literal>& args) {
  const char* env = std::getenv("MODEL_PROFILE");
  if (env == nullptr || std::string(env) != "1") return;
  absl::StatusOr<xla::HloModuleProto> proto = hlo::ParseHloModule(text);
  if (!proto.ok()) std::abort();
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      HloModule::FromProto(*proto);
  if (!module.ok()) std::abort();
  StepProfile profile(**module);
  for (int i = 0; i < 5; ++i) {
    ExecutionContext context;
    context.device = bench::Device();
    context.observer = &profile;
    if (!exe.Execute(args, context, nullptr).ok()) std::abort();
  }
  profile.Print(title);
}

// Runs `exe` as the benchmark's steps; reports the best step time and the
// peak of live intermediates.
void MeasureSteps(benchmark::State& state, const Executable& exe,
                  const std::vector<Literal>& args) {
  ExecutionStats stats;
  auto run = [&] {
    ExecutionContext context;
    context.device = bench::Device();
    absl::StatusOr<Literal> out = exe.Execute(args, context, &stats);
    if (!out.ok()) std::abort();
    benchmark::DoNotOptimize(out->shape());
  };
  for (auto _ : state) run();
  state.counters["ms_per_step"] = bench::BestSeconds(run) * 1e3;
  state.counters["peak_live_MB"] = stats.peak_live_bytes / 1e6;
}

void BM_MlpTrainingStep(benchmark::State& state) {
  const int64_t B = 256, I = 512, H = 1024, O = 128;
  const std::string text = absl::StrReplaceAll(
      kMlpStep, {{"%B", "256"}, {"%I", "512"}, {"%H", "1024"}, {"%O", "128"}});
  std::unique_ptr<Executable> exe = bench::MustCompile(text);
  std::vector<Literal> args = {Filled({B, I}), Filled({B, O}), Filled({I, H}),
                               Filled({H}),    Filled({H, O}), Filled({O})};
  MeasureSteps(state, *exe, args);
}
BENCHMARK(BM_MlpTrainingStep)->Unit(benchmark::kMillisecond)->UseRealTime();

// A CNN inference step on CIFAR-sized input: two 3x3 SAME convolutions with
// bias + relu and 2x2 max-pools, a dense layer and softmax.
const std::string kCnnStep =
    absl::StrCat("HloModule cnn_step\n", testing::kScalarMaxAndAdd, R"(
ENTRY step {
  x = f32[32,32,32,3] parameter(0)
  k1 = f32[3,3,3,32] parameter(1)
  c1 = f32[32] parameter(2)
  k2 = f32[3,3,32,64] parameter(3)
  c2 = f32[64] parameter(4)
  w = f32[4096,10] parameter(5)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  y1 = f32[32,32,32,32] convolution(x, k1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  c1b = f32[32,32,32,32] broadcast(c1), dimensions={3}
  z1 = f32[32,32,32,32] add(y1, c1b)
  zeros1 = f32[32,32,32,32] broadcast(zero), dimensions={}
  r1 = f32[32,32,32,32] maximum(z1, zeros1)
  p1 = f32[32,16,16,32] reduce-window(r1, ninf), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max
  y2 = f32[32,16,16,64] convolution(p1, k2), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  c2b = f32[32,16,16,64] broadcast(c2), dimensions={3}
  z2 = f32[32,16,16,64] add(y2, c2b)
  zeros2 = f32[32,16,16,64] broadcast(zero), dimensions={}
  r2 = f32[32,16,16,64] maximum(z2, zeros2)
  p2 = f32[32,8,8,64] reduce-window(r2, ninf), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max
  flat = f32[32,4096] reshape(p2)
  logits = f32[32,10] dot(flat, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  m = f32[32] reduce(logits, ninf), dimensions={1}, to_apply=max
  mb = f32[32,10] broadcast(m), dimensions={0}
  shifted = f32[32,10] subtract(logits, mb)
  e = f32[32,10] exponential(shifted)
  sum = f32[32] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[32,10] broadcast(sum), dimensions={0}
  ROOT p = f32[32,10] divide(e, sb)
}
)");

// The best GEMM rate of the interpreter: an f32 1024^3 dot (routed to the
// fastest library), as a runnable measurement.
std::function<void()> BestGemm() {
  static std::unique_ptr<Executable> exe = bench::MustCompile(R"(
ENTRY e {
  a = f32[1024,1024] parameter(0)
  b = f32[1024,1024] parameter(1)
  ROOT d = f32[1024,1024] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  static Literal a = Filled({1024, 1024});
  return [] {
    ExecutionContext context;
    context.device = bench::Device();
    absl::StatusOr<Literal> out = exe->Execute({a, a}, context, nullptr);
    if (!out.ok()) std::abort();
  };
}
constexpr double kBestGemmFlops = 2.0 * 1024 * 1024 * 1024;

// Reports the step's achieved GFLOP/s (its convolutions and dots) and the
// ratio to the best GEMM rate, measured alternately in the same run.
void ReportVsGemm(benchmark::State& state, const Executable& exe,
                  const std::vector<Literal>& args, double flops) {
  auto step = [&] {
    ExecutionContext context;
    context.device = bench::Device();
    absl::StatusOr<Literal> out = exe.Execute(args, context, nullptr);
    if (!out.ok()) std::abort();
  };
  auto [seconds, gemm_seconds] =
      bench::BestSecondsInterleaved(step, BestGemm());
  state.counters["GFLOPS"] = flops / seconds / 1e9;
  state.counters["gemm_GFLOPS"] = kBestGemmFlops / gemm_seconds / 1e9;
  state.counters["ratio"] = (flops / seconds) / (kBestGemmFlops / gemm_seconds);
}

void BM_CnnInferenceStep(benchmark::State& state) {
  std::unique_ptr<Executable> exe = bench::MustCompile(kCnnStep);
  std::vector<Literal> args = {
      Filled({32, 32, 32, 3}), Filled({3, 3, 3, 32}), Filled({32}),
      Filled({3, 3, 32, 64}),  Filled({64}),          Filled({4096, 10})};
  MaybeProfile("cnn_step", kCnnStep, *exe, args);
  MeasureSteps(state, *exe, args);
  // conv1 + conv2 + dense, 2 flops per multiply-add.
  const double flops = 2.0 * (32 * 32 * 32) * (27 * 32) +
                       2.0 * (32 * 16 * 16) * (288 * 64) + 2.0 * 32 * 4096 * 10;
  ReportVsGemm(state, *exe, args, flops);
}
BENCHMARK(BM_CnnInferenceStep)->Unit(benchmark::kMillisecond)->UseRealTime();

// Multiply-add FLOPs of the convolutions and dots of a module's entry.
double ProductFlops(const xla::HloModuleProto& proto) {
  absl::StatusOr<std::unique_ptr<HloModule>> module =
      HloModule::FromProto(proto);
  if (!module.ok()) std::abort();
  double flops = 0;
  for (const HloInstruction* i : (*module)->entry()->instructions_in_order()) {
    if (i->opcode() == "convolution") {
      const xla::ConvolutionDimensionNumbers& dn =
          i->proto().convolution_dimension_numbers();
      const Shape& kernel = i->operand(1)->shape();
      double taps = kernel.dimensions(dn.kernel_input_feature_dimension());
      for (int64_t d : dn.kernel_spatial_dimensions()) {
        taps *= kernel.dimensions(d);
      }
      flops += 2.0 * i->shape().element_count() * taps;
    } else if (i->opcode() == "dot") {
      double k = 1;
      for (int64_t d :
           i->proto().dot_dimension_numbers().lhs_contracting_dimensions()) {
        k *= i->operand(0)->shape().dimensions(d);
      }
      flops += 2.0 * i->shape().element_count() * k;
    }
  }
  return flops;
}

// The text of a data file of this binary (under `bazel run` or run from
// bazel-bin).
std::string ReadRunfile(const std::string& path) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  const std::string self(exe, n > 0 ? n : 0);
  for (const std::string& candidate :
       {path, self + ".runfiles/software_tpu/" + path}) {
    std::ifstream in(candidate);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      return text.str();
    }
  }
  std::fprintf(stderr, "cannot read %s\n", path.c_str());
  std::abort();
}

// SSD MobileNet (TensorFlow's, as dumped by XLA; elided weights are
// synthetic): depthwise and pointwise convolutions with bias and relu6 on a
// 300x300 image. Goal: step time <= 2x the time of its FLOPs at the best
// GEMM rate, i.e. ratio >= 0.5.
void BM_SsdMobilenetStep(benchmark::State& state) {
  const std::string text =
      ReadRunfile("hlo/text/testdata/ssd_mobilenet_tf.hlo");
  absl::StatusOr<xla::HloModuleProto> proto = hlo::ParseHloModule(text);
  if (!proto.ok()) std::abort();
  std::unique_ptr<Executable> exe = bench::MustCompile(text);
  std::vector<Literal> args = {Filled({1, 300, 300, 3})};
  MaybeProfile("ssd_mobilenet", text, *exe, args);
  MeasureSteps(state, *exe, args);
  ReportVsGemm(state, *exe, args, ProductFlops(*proto));
}
BENCHMARK(BM_SsdMobilenetStep)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tpu::emulator::interpreter

int main(int argc, char** argv) {
  // As tpu_emulator does: freed intermediates are reused, not refaulted.
  tpu::ConfigureHostMemoryForLargeBuffers();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
