// What a fiber switch and a meeting of 8 fibers cost, beside the same
// meeting of 8 OS threads (the worker's model before fibers), in one run.
//
//   bazel build //emulator/fiber:fiber_benchmark
//   bazel-bin/emulator/fiber/fiber_benchmark
//
// BM_FiberYield: two fibers on one thread yielding to each other; counter
// ns_per_switch. BM_MeetingOf8Fibers/K: 8 fibers on K threads meeting 1000
// times at an atomic count + WakeWord; BM_MeetingOf8Threads: the same with 8
// OS threads. Counter us_per_meeting; the thread figure over the fiber one
// is the speed-up.

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "emulator/fiber/fiber.h"
#include "emulator/fiber/wake_word.h"

namespace tpu::emulator::fiber {
namespace {

constexpr int kParticipants = 8;
constexpr int kMeetings = 1000;

void BM_FiberYield(benchmark::State& state) {
  constexpr int kSwitches = 100000;
  Scheduler scheduler("bench", 1);
  double total = 0;
  for (auto _ : state) {
    const absl::Time start = absl::Now();
    auto body = [] {
      for (int i = 0; i < kSwitches / 2; ++i) Fiber::Yield();
    };
    auto a = scheduler.Start(body);
    auto b = scheduler.Start(body);
    a->Join();
    b->Join();
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    state.SetIterationTime(seconds);
    total += seconds;
  }
  state.counters["ns_per_switch"] =
      total / state.iterations() / kSwitches * 1e9;
}
BENCHMARK(BM_FiberYield)->UseManualTime()->Unit(benchmark::kMillisecond);

// One participant's 1000 meetings at a bare barrier.
void Meet(std::atomic<int>& arrived, std::atomic<int>& generation,
          WakeWord& wake) {
  for (int m = 0; m < kMeetings; ++m) {
    if (arrived.fetch_add(1) + 1 == kParticipants) {
      arrived.store(0);
      generation.store(m + 1, std::memory_order_release);
      wake.WakeAll();
      continue;
    }
    while (true) {
      const uint32_t seen = wake.Load();
      if (generation.load(std::memory_order_acquire) > m) break;
      wake.Wait(seen, absl::Milliseconds(100));
    }
  }
}

// Times kParticipants meeting kMeetings times, each run by `run_all` (which
// starts them and returns once all have finished); counter us_per_meeting.
template <typename RunAll>
void TimeMeetings(benchmark::State& state, RunAll run_all) {
  double total = 0;
  for (auto _ : state) {
    std::atomic<int> arrived{0};
    std::atomic<int> generation{0};
    WakeWord wake;
    const absl::Time start = absl::Now();
    run_all([&] { Meet(arrived, generation, wake); });
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    state.SetIterationTime(seconds);
    total += seconds;
  }
  state.counters["us_per_meeting"] =
      total / state.iterations() / kMeetings * 1e6;
}

void BM_MeetingOf8Fibers(benchmark::State& state) {
  Scheduler scheduler("bench", static_cast<int>(state.range(0)));
  TimeMeetings(state, [&](const std::function<void()>& participant) {
    std::vector<std::unique_ptr<Fiber>> fibers;
    for (int i = 0; i < kParticipants; ++i) {
      fibers.push_back(scheduler.Start(participant));
    }
    for (auto& f : fibers) f->Join();
  });
}
BENCHMARK(BM_MeetingOf8Fibers)
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_MeetingOf8Threads(benchmark::State& state) {
  TimeMeetings(state, [](const std::function<void()>& participant) {
    std::vector<std::thread> threads;
    for (int i = 0; i < kParticipants; ++i) threads.emplace_back(participant);
    for (auto& t : threads) t.join();
  });
}
BENCHMARK(BM_MeetingOf8Threads)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpu::emulator::fiber
