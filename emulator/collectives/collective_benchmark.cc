// Collectives on one worker, reported as nccl-tests does: algorithm
// bandwidth = bytes / time, bus bandwidth = algbw * 2(n-1)/n for all-reduce;
// beside memcpy of the same bytes measured in the same run.
//
//   bazel build //emulator/collectives:collective_benchmark
//   bazel-bin/emulator/collectives/collective_benchmark
//
// BM_AllReduce64MiB: 64 MiB of f32 across 8 cores (one thread per core, as
// the worker runs them); counters busbw_GBps and busbw_over_memcpy.
// BM_SmallAllReduceInLoop: a 4-byte all-reduce inside a while loop of 1000
// iterations across 8 cores; counter us_per_collective. The Threads variant
// runs each core on an OS thread of its own (the worker before fibers, the
// baseline), the Fibers one on fibers over min(8, CPUs) OS threads, as the
// worker runs cores now.
// BM_LoopWithoutCollective: the same loop without the all-reduce, the
// interpreter's own per-iteration cost; counter us_per_iteration.
// Both also count CPU time (all threads) and context switches per loop step,
// which a shared machine's load disturbs less than wall time.
// BM_BareMeetingOf8Threads: 8 threads meeting 1000 times at a bare barrier
// (atomic count + WakeWord), the floor of a meeting with one OS thread per
// core; counter us_per_meeting. BM_BareMeetingOf8Fibers: the same on fibers
// over min(8, CPUs) OS threads.

#include <sys/resource.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "emulator/collectives/collective_hub.h"
#include "emulator/fiber/fiber.h"
#include "emulator/fiber/wake_word.h"
#include "emulator/interpreter/executable.h"
#include "hlo/aligned_buffer.h"
#include "hlo/host_memory.h"
#include "hlo/text/hlo_parser.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator {
namespace {

constexpr int kCores = 8;

std::unique_ptr<interpreter::Executable> Compile(const std::string& text) {
  auto module = hlo::ParseHloModule(text);
  if (!module.ok()) return nullptr;
  interpreter::CompileOptions options;
  options.num_replicas = kCores;
  auto executable = interpreter::Executable::Compile(*module, options);
  return executable.ok() ? *std::move(executable) : nullptr;
}

// OS threads for the cores' fibers, as the worker has.
int FiberThreads() {
  return std::max(
      1,
      std::min(kCores, static_cast<int>(std::thread::hardware_concurrency())));
}

// Runs one launch per core on its own thread (or, with `fibers`, its own
// fiber); returns the wall time.
double RunOnAllCores(const interpreter::Executable& executable,
                     CollectiveHub& hub, const std::vector<Literal>& inputs,
                     const Eigen::ThreadPoolDevice* device,
                     fiber::Scheduler* fibers = nullptr) {
  std::vector<int> devices;
  for (int c = 0; c < kCores; ++c) devices.push_back(c);
  interpreter::DeviceAssignment assignment;
  assignment.num_replicas = kCores;
  assignment.devices = devices;
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<fiber::Fiber>> core_fibers;
  for (int c = 0; c < kCores; ++c) {
    auto run = [&, c] {
      LaunchInfo info;
      info.core = c;
      info.program = "bench";
      info.fingerprint = "bench";
      info.assignment = devices;
      auto launch = hub.BeginLaunch(info);
      interpreter::ExecutionContext context;
      context.replica_id = c;
      context.assignment = &assignment;
      context.collectives = launch->get();
      context.device = device;
      auto result = executable.Execute({inputs[c]}, context, nullptr);
      if (!result.ok()) std::abort();
    };
    if (fibers != nullptr) {
      core_fibers.push_back(fibers->Start(run));
    } else {
      threads.emplace_back(run);
    }
  }
  for (auto& t : threads) t.join();
  for (auto& f : core_fibers) f->Join();
  return absl::ToDoubleSeconds(absl::Now() - start);
}

struct ProcessUsage {
  double cpu_seconds = 0;
  double switches = 0;
};

ProcessUsage Usage() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return {seconds(usage.ru_utime) + seconds(usage.ru_stime),
          static_cast<double>(usage.ru_nvcsw + usage.ru_nivcsw)};
}

double MemcpySeconds(int64_t bytes) {
  auto src = AlignedBuffer::Allocate(bytes);
  auto dst = AlignedBuffer::Allocate(bytes);
  std::memset(src->data(), 1, bytes);
  std::memcpy(dst->data(), src->data(), bytes);  // fault the pages in
  const absl::Time start = absl::Now();
  std::memcpy(dst->data(), src->data(), bytes);
  benchmark::DoNotOptimize(dst->data());
  return absl::ToDoubleSeconds(absl::Now() - start);
}

void BM_AllReduce64MiB(benchmark::State& state) {
  const int64_t elements = (int64_t{64} << 20) / 4;
  auto executable = Compile(
      absl::StrCat(R"(
HloModule allreduce
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  p = f32[)",
                   elements, R"(] parameter(0)
  ROOT s = f32[)",
                   elements, R"(] all-reduce(p), replica_groups={}, to_apply=sum
})"));
  if (executable == nullptr) {
    state.SkipWithError("compile failed");
    return;
  }
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  std::vector<Literal> inputs;
  for (int c = 0; c < kCores; ++c) {
    Literal input = Literal::Uninitialized(Shape::Array(xla::F32, {elements}));
    float* data = input.mutable_data<float>().data();
    for (int64_t i = 0; i < elements; ++i)
      data[i] = static_cast<float>(c + i % 7);
    inputs.push_back(std::move(input));
  }
  CollectiveHubOptions options;
  for (int c = 0; c < kCores; ++c) options.cores.push_back(c);
  options.report_waits_after = absl::ZeroDuration();
  CollectiveHub hub(options);
  // Untimed: faults in the heap pages the outputs use, as MemcpySeconds
  // does for its buffers.
  RunOnAllCores(*executable, hub, inputs, &device);
  double collective = 0, copy = 0;
  for (auto _ : state) {
    const double seconds = RunOnAllCores(*executable, hub, inputs, &device);
    state.SetIterationTime(seconds);
    collective += seconds;
    copy += MemcpySeconds(elements * 4);
  }
  const double bytes = elements * 4.0 * state.iterations();
  const double busbw = bytes / collective * 2.0 * (kCores - 1) / kCores;
  state.counters["algbw_GBps"] = bytes / collective / 1e9;
  state.counters["busbw_GBps"] = busbw / 1e9;
  state.counters["memcpy_GBps"] = bytes / copy / 1e9;
  state.counters["busbw_over_memcpy"] = busbw / (bytes / copy);
}
BENCHMARK(BM_AllReduce64MiB)->UseManualTime()->Unit(benchmark::kMillisecond);

// A while loop of 1000 iterations across 8 cores; with `collective`, each
// iteration all-reduces a 4-byte scalar, otherwise it only scales it (the
// loop's own cost, the baseline).
std::string LoopModule(bool collective) {
  return absl::StrCat(R"(
HloModule loop
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
cond {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(1000)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
)",
                      collective
                          ? "  r = f32[] all-reduce(v), replica_groups={}, "
                            "to_apply=sum\n"
                          : "  r = f32[] add(v, v)\n",
                      R"(  eighth = f32[] constant(0.125)
  v2 = f32[] multiply(r, eighth)
  ROOT t = (s32[], f32[]) tuple(i2, v2)
}
ENTRY e {
  p = f32[] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], f32[]) tuple(zero, p)
  w = (s32[], f32[]) while(t), condition=cond, body=body
  ROOT v = f32[] get-tuple-element(w), index=1
})");
}

// Microseconds per loop iteration (per collective) on 8 cores.
void RunLoop(benchmark::State& state, bool collective, bool on_fibers) {
  auto executable = Compile(LoopModule(collective));
  if (executable == nullptr) {
    state.SkipWithError("compile failed");
    return;
  }
  std::vector<Literal> inputs;
  for (int c = 0; c < kCores; ++c) {
    const float v = static_cast<float>(c);
    inputs.push_back(
        Literal::FromVector<float>(xla::F32, {}, absl::MakeConstSpan(&v, 1)));
  }
  CollectiveHubOptions options;
  for (int c = 0; c < kCores; ++c) options.cores.push_back(c);
  options.report_waits_after = absl::ZeroDuration();
  CollectiveHub hub(options);
  std::unique_ptr<fiber::Scheduler> fibers;
  if (on_fibers) {
    fibers = std::make_unique<fiber::Scheduler>("bench", FiberThreads());
  }
  double total = 0;
  const ProcessUsage before = Usage();
  for (auto _ : state) {
    const double seconds =
        RunOnAllCores(*executable, hub, inputs, nullptr, fibers.get());
    state.SetIterationTime(seconds);
    total += seconds;
  }
  const ProcessUsage after = Usage();
  const double steps = state.iterations() * 1000.0;
  state.counters[collective ? "us_per_collective" : "us_per_iteration"] =
      total / steps * 1e6;
  // What the wall time hides on a shared machine: CPU time (all threads)
  // and context switches per loop step.
  state.counters["cpu_us_per_step"] =
      (after.cpu_seconds - before.cpu_seconds) / steps * 1e6;
  state.counters["switches_per_step"] =
      (after.switches - before.switches) / steps;
}

void BM_SmallAllReduceInLoopThreads(benchmark::State& state) {
  RunLoop(state, true, false);
}
BENCHMARK(BM_SmallAllReduceInLoopThreads)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_SmallAllReduceInLoopFibers(benchmark::State& state) {
  RunLoop(state, true, true);
}
BENCHMARK(BM_SmallAllReduceInLoopFibers)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The baseline: the same loop without the collective.
void BM_LoopWithoutCollectiveThreads(benchmark::State& state) {
  RunLoop(state, false, false);
}
BENCHMARK(BM_LoopWithoutCollectiveThreads)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_LoopWithoutCollectiveFibers(benchmark::State& state) {
  RunLoop(state, false, true);
}
BENCHMARK(BM_LoopWithoutCollectiveFibers)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The floor under BM_SmallAllReduceInLoop with one OS thread per core: 8
// threads meeting 1000 times at a bare barrier (an atomic count and the
// hub's WakeWord, no interpreter, no hub bookkeeping). On 2 CPUs every
// meeting needs each thread to be switched in once, so its cost is
// dominated by context switches and the futex calls around them.
void BareMeeting(benchmark::State& state, bool on_fibers) {
  std::unique_ptr<fiber::Scheduler> fibers;
  if (on_fibers) {
    fibers = std::make_unique<fiber::Scheduler>("bench", FiberThreads());
  }
  constexpr int kMeetings = 1000;
  double total = 0;
  const ProcessUsage before = Usage();
  for (auto _ : state) {
    std::atomic<int> arrived{0};
    std::atomic<uint32_t> generation{0};
    fiber::WakeWord wake;
    const absl::Time start = absl::Now();
    std::vector<std::thread> threads;
    std::vector<std::unique_ptr<fiber::Fiber>> core_fibers;
    for (int c = 0; c < kCores; ++c) {
      auto meet = [&] {
        for (int m = 0; m < kMeetings; ++m) {
          if (arrived.fetch_add(1) + 1 == kCores) {
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
      };
      if (on_fibers) {
        core_fibers.push_back(fibers->Start(meet));
      } else {
        threads.emplace_back(meet);
      }
    }
    for (auto& t : threads) t.join();
    for (auto& f : core_fibers) f->Join();
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    state.SetIterationTime(seconds);
    total += seconds;
  }
  const ProcessUsage after = Usage();
  const double steps = state.iterations() * static_cast<double>(kMeetings);
  state.counters["us_per_meeting"] = total / steps * 1e6;
  state.counters["cpu_us_per_step"] =
      (after.cpu_seconds - before.cpu_seconds) / steps * 1e6;
  state.counters["switches_per_step"] =
      (after.switches - before.switches) / steps;
}

void BM_BareMeetingOf8Threads(benchmark::State& state) {
  BareMeeting(state, false);
}
BENCHMARK(BM_BareMeetingOf8Threads)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_BareMeetingOf8Fibers(benchmark::State& state) {
  BareMeeting(state, true);
}
BENCHMARK(BM_BareMeetingOf8Fibers)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpu::emulator

int main(int argc, char** argv) {
  // As tpu_emulator: without absl's debug lock-order graph, which Debian's
  // absl keeps on and which costs every lock of the hub and the fibers.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  tpu::ConfigureHostMemoryForLargeBuffers();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
