#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_BENCHMARK_UTIL_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_BENCHMARK_UTIL_H_

// Helpers for interpreter benchmarks: one shared thread pool, best-of-N
// timing of a baseline measured in the same process, compiling HLO text.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/test_util.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace bench {

// The pool every benchmark (and its baseline) runs on: one thread per core.
inline const Eigen::ThreadPoolDevice* Device() {
  static const int threads = std::max(1u, std::thread::hardware_concurrency());
  static Eigen::ThreadPool* pool = new Eigen::ThreadPool(threads);
  static Eigen::ThreadPoolDevice* device =
      new Eigen::ThreadPoolDevice(pool, threads);
  return device;
}

// Seconds of the fastest of `reps` runs of fn (after one warm-up run).
inline double BestSeconds(const std::function<void()>& fn, int reps = 5) {
  fn();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
    best = std::min(best, d.count());
  }
  return best;
}

// Best-of-`reps` seconds of `fn` and of `baseline`, measured alternately so
// that both see the same machine: on a shared host memory bandwidth drifts by
// 2x within seconds, and a baseline measured once, earlier, makes the ratio
// meaningless.
inline std::pair<double, double> BestSecondsInterleaved(
    const std::function<void()>& fn, const std::function<void()>& baseline,
    int reps = 10) {
  fn();
  baseline();
  double best_fn = 1e30, best_baseline = 1e30;
  for (int i = 0; i < reps; ++i) {
    best_fn = std::min(best_fn, BestSeconds(fn, 1));
    best_baseline = std::min(best_baseline, BestSeconds(baseline, 1));
  }
  return {best_fn, best_baseline};
}

inline std::unique_ptr<Executable> MustCompile(
    const std::string& text, const CompileOptions& options = {}) {
  absl::StatusOr<std::unique_ptr<Executable>> exe =
      testing::CompileHlo(text, options);
  if (!exe.ok()) {
    std::fprintf(stderr, "compile failed: %s\n",
                 exe.status().ToString().c_str());
    std::abort();
  }
  return *std::move(exe);
}

inline Literal MustExecute(const Executable& exe, std::vector<Literal> args) {
  ExecutionContext context;
  context.device = Device();
  absl::StatusOr<Literal> out = exe.Execute(std::move(args), context, nullptr);
  if (!out.ok()) {
    std::fprintf(stderr, "execute failed: %s\n",
                 out.status().ToString().c_str());
    std::abort();
  }
  return *std::move(out);
}

}  // namespace bench
}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_BENCHMARK_UTIL_H_
