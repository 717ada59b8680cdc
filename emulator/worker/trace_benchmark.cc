// What tracing costs on pipelined small operations.
//
//   bazel run -c opt //emulator/worker:trace_benchmark
//
// Each iteration submits two rounds of 1000 independent operations at once
// on one stream of an in-process Worker (500 transfers of 64 bytes and 500
// executes of a 16-element f32 add on core 0) and waits for every response:
// one round with tracing off, one with it on (instructions included). Both
// are measured in the same run (/0: programs, transfers and collectives;
// /1: also instructions), interleaved, so machine noise hits both
// alike. Counters: ops_per_s_off, ops_per_s_on, ratio = time with tracing
// on / time with it off, the median over iterations of adjacent rounds
// (issue 17's goal: <= 1.05), cpu_ratio the same with the process's CPU
// time, and ratio_of_totals for comparison.

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "emulator/worker/test_programs.h"
#include "emulator/worker/test_requests.h"
#include "emulator/worker/worker.h"
#include "emulator/worker/worker_test_util.h"

namespace tpu::emulator {
namespace {

using namespace test_requests;  // NOLINT: the request builders
using test_programs::AddF32;

constexpr int kPairsPerRound = 500;

struct Round {
  absl::Duration wall;
  double cpu_seconds = 0;
};

// CPU time of every thread of this process (the worker's included).
double ProcessCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return now.tv_sec + now.tv_nsec * 1e-9;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void BM_PipelinedSmallOpsTracing(benchmark::State& state) {
  WorkerOptions options;
  options.compute_threads = 1;
  auto worker = Worker::Create(options);
  if (!worker.ok()) return state.SkipWithError("cannot create the worker");
  auto opened = (*worker)->Open(tpu_driver::OpenRequest());
  if (!opened.ok()) return state.SkipWithError("cannot open a client");
  const uint32_t client = opened->client_id();
  TestStream stream(worker->get());
  uint64_t next = 1;
  auto id = [&]() { return Id(client, next++); };
  const Shape shape = Shape::Array(xla::F32, {16});
  const int64_t x = id(), y = id(), z = id(), compiled = id(), loaded = id();
  stream.Send({AllocShape(x, 0, shape), AllocShape(y, 0, shape),
               AllocShape(z, 0, shape), Compile(compiled, AddF32(16)),
               Load(loaded, 0, compiled)});
  if (stream.Code(loaded) != 0) return state.SkipWithError("setup failed");
  const std::string bytes(64, '\1');

  auto round = [&]() {
    std::vector<tpu_driver::StreamRequest::Entry> entries;
    std::vector<int64_t> ids;
    for (int i = 0; i < kPairsPerRound; ++i) {
      ids.push_back(id());
      entries.push_back(TransferTo(ids.back(), y, bytes));
      ids.push_back(id());
      entries.push_back(Execute(ids.back(), loaded, {x, y}, {z}, 0));
    }
    const absl::Time start = absl::Now();
    const double cpu_start = ProcessCpuSeconds();
    stream.Send(std::move(entries));
    for (int64_t op : ids) {
      if (stream.Code(op) < 0) state.SkipWithError("an operation hung");
    }
    return Round{absl::Now() - start, ProcessCpuSeconds() - cpu_start};
  };

  absl::Duration off, on;
  std::vector<double> ratios, cpu_ratios;
  bool on_first = false;
  for (auto _ : state) {
    // Alternate which round goes first, so that neither gains from order.
    on_first = !on_first;
    Round off_round;
    if (!on_first) off_round = round();
    if (!(*worker)->StartTrace(/*instructions=*/state.range(0) != 0).ok()) {
      return state.SkipWithError("cannot start tracing");
    }
    const Round on_round = round();
    state.PauseTiming();
    benchmark::DoNotOptimize((*worker)->StopTrace());
    state.ResumeTiming();
    if (on_first) off_round = round();
    off += off_round.wall;
    on += on_round.wall;
    ratios.push_back(absl::ToDoubleSeconds(on_round.wall) /
                     absl::ToDoubleSeconds(off_round.wall));
    cpu_ratios.push_back(on_round.cpu_seconds / off_round.cpu_seconds);
  }
  const double ops = 2.0 * kPairsPerRound * state.iterations();
  state.counters["ops_per_s_off"] = ops / absl::ToDoubleSeconds(off);
  state.counters["ops_per_s_on"] = ops / absl::ToDoubleSeconds(on);
  // Medians over iterations: on a shared machine a burst of other work lands
  // in one round and skews a ratio of totals; the median of adjacent pairs
  // ignores it. The CPU ratio (this process's CPU time) is the steadiest
  // when other processes load the machine.
  state.counters["ratio"] = Median(ratios);
  state.counters["cpu_ratio"] = Median(cpu_ratios);
  state.counters["ratio_of_totals"] =
      absl::ToDoubleSeconds(on) / absl::ToDoubleSeconds(off);
}
// Arg: whether the trace records instructions too.
BENCHMARK(BM_PipelinedSmallOpsTracing)
    ->Arg(0)
    ->Arg(1)
    ->Iterations(100)
    ->UseRealTime();

}  // namespace
}  // namespace tpu::emulator
