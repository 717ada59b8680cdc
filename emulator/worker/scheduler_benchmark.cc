// Cost per operation of the scheduler's event graph, as chains grow.
//
//   bazel run -c opt //emulator:scheduler_benchmark
//
// BM_Chain/N: N operations, each waiting for the previous one, all registered
// while the first is still running; then the first completes and the chain
// runs through (each op completing inside its own start, via the
// trampoline). With reverse edges the time per op stays flat from 10k to
// 100k operations. The baseline is the bare bookkeeping one op needs anyway
// (a hash-map insert and erase per op), measured in the same run; the
// `ratio` counter is scheduler time per op over that baseline.

#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "emulator/worker/scheduler.h"

namespace tpu::emulator {
namespace {

double BaselineNanosPerOp(int64_t n) {
  absl::flat_hash_map<uint64_t, int64_t> map;
  const absl::Time start = absl::Now();
  for (int64_t i = 1; i <= n; ++i) map[i] = i;
  for (int64_t i = 1; i <= n; ++i) map.erase(i);
  return absl::ToDoubleNanoseconds(absl::Now() - start) / n;
}

void BM_Chain(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto timers = std::make_shared<TimerQueue>();
  double scheduler_ns = 0;
  for (auto _ : state) {
    auto scheduler = Scheduler::Create(1, timers, absl::Seconds(60));
    Scheduler* s = scheduler.get();
    const absl::Time start = absl::Now();
    s->Submit(1, {}, [](absl::Status) {});  // held until Complete(1) below
    for (int64_t i = 2; i <= n; ++i) {
      const uint64_t dep = i - 1;
      s->Submit(i, {&dep, 1}, [s, i](absl::Status st) {
        if (st.ok()) s->Complete(i, absl::OkStatus());
      });
    }
    s->Complete(1, absl::OkStatus());
    scheduler_ns += absl::ToDoubleNanoseconds(absl::Now() - start);
    if (s->live_nodes() != 0) state.SkipWithError("chain did not finish");
  }
  const double per_op = scheduler_ns / state.iterations() / n;
  state.counters["ns_per_op"] = per_op;
  state.counters["baseline_ns_per_op"] = BaselineNanosPerOp(n);
  state.counters["ratio"] = per_op / state.counters["baseline_ns_per_op"];
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Chain)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpu::emulator
