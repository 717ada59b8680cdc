// Scaling of the pod driver's event layer: N chained operations (each waits
// for the previous one) issued at once through grpc+pod:// over two workers,
// then awaited. Completing an operation must cost O(its dependents), so the
// time per operation must stay flat from 10,000 to 100,000 operations (the
// reference scanned every operation in flight on each completion: O(N^2)).
//
// Backends: local:// workers (in-process emulators) when the local driver is
// linked, and the in-memory fake workers (driver/testing) always. The
// baseline, measured in the same run, is the same chain issued directly on
// one worker driver, without the pod layer.
//
// Run:
//   bazel run -c opt //driver/pod:pod_driver_benchmark
// It prints Google Benchmark's table, then a summary: time per operation for
// 10k, 30k and 100k operations, the flatness ratio (100k / 10k) and the pod
// layer's cost relative to the direct chain.

#include <time.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "driver/driver_registry.h"
#include "driver/pod/pod_driver.h"
#include "driver/testing/fake_driver.h"

namespace tpu::driver {
namespace {

constexpr auto HBM = tpu_driver::HBM;

enum Backend { kFake = 0, kLocal = 1 };

bool HaveLocal() {
  for (const std::string& prefix : DriverRegistry::Prefixes()) {
    if (prefix == "local://") return true;
  }
  return false;
}

// Process CPU time (all threads): unlike wall time, it does not count the
// time other processes of a busy machine take from us.
absl::Duration ProcessCpuTime() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return absl::DurationFromTimespec(ts);
}

struct PerOp {
  double wall_ns = 0;
  double cpu_ns = 0;
};

// Per-operation figures, by (backend, pod?, N), for the summary.
absl::Mutex results_mu;
std::map<std::tuple<int, bool, int64_t>, PerOp>& Results() {
  static auto* results = new std::map<std::tuple<int, bool, int64_t>, PerOp>;
  return *results;
}

// Keeps fake workers alive as long as their drivers.
struct Opened {
  std::unique_ptr<TpuDriver> driver;
  testing::FakeCluster cluster;
};

std::unique_ptr<Opened> OpenPod(Backend backend) {
  auto opened = std::make_unique<Opened>();
  tpu_driver::TpuDriverConfig config;
  absl::StatusOr<std::unique_ptr<PodDriver>> pod;
  if (backend == kLocal) {
    config.set_worker(
        "grpc+pod://local://?chips=1&cores_per_chip=1&compute_threads=1,"
        "local://?chips=1&cores_per_chip=1&compute_threads=1");
    pod = PodDriver::Open(config);
  } else {
    testing::FakeWorkerOptions options;
    options.chips = 1;
    opened->cluster.Add(options);
    opened->cluster.Add(options);
    config.set_worker(opened->cluster.pod_address());
    PodDriverOptions pod_options;
    pod_options.open_worker = opened->cluster.OpenWorker();
    pod_options.shutdown_timeout = absl::Seconds(5);
    pod = PodDriver::Open(config, std::move(pod_options));
  }
  if (!pod.ok()) {
    std::fprintf(stderr, "cannot open the pod: %s\n",
                 pod.status().ToString().c_str());
    return nullptr;
  }
  opened->driver = *std::move(pod);
  return opened;
}

std::unique_ptr<Opened> OpenDirect(Backend backend) {
  auto opened = std::make_unique<Opened>();
  if (backend == kLocal) {
    auto driver = DriverRegistry::Open(
        "local://?chips=1&cores_per_chip=1&compute_threads=1");
    if (!driver.ok()) return nullptr;
    opened->driver = *std::move(driver);
  } else {
    testing::FakeWorkerOptions options;
    options.chips = 1;
    opened->driver = opened->cluster.Add(options)->NewDriver();
  }
  return opened;
}

// Issues `n` chained 8-byte transfers alternating over `buffers`, then
// waits for the last one. Returns false on any failure.
bool RunChain(TpuDriver* driver, const std::vector<BufferHandle*>& buffers,
              int64_t n, const uint64_t* data) {
  std::shared_ptr<Event> last;
  for (int64_t i = 0; i < n; ++i) {
    BufferHandle* target = buffers[i % buffers.size()];
    if (last == nullptr) {
      last = driver->TransferToDevice(data, target, {});
    } else {
      Event* wait[] = {last.get()};
      last = driver->TransferToDevice(data, target, wait);
    }
  }
  std::optional<absl::Status> status = last->AwaitWithTimeout(absl::Minutes(5));
  return status.has_value() && status->ok();
}

void BM_Chain(benchmark::State& state) {
  const Backend backend = static_cast<Backend>(state.range(0));
  const bool pod = state.range(1) != 0;
  const int64_t n = state.range(2);
  if (backend == kLocal && !HaveLocal()) {
    state.SkipWithError("local:// driver not linked");
    return;
  }
  std::unique_ptr<Opened> opened = pod ? OpenPod(backend) : OpenDirect(backend);
  if (opened == nullptr) {
    state.SkipWithError("cannot open the driver");
    return;
  }
  TpuDriver* driver = opened->driver.get();
  // The pod chain alternates between a core of each worker.
  std::vector<std::unique_ptr<BufferHandle>> owned;
  owned.push_back(driver->Allocate(0, HBM, 8, {}));
  if (pod) owned.push_back(driver->Allocate(1, HBM, 8, {}));
  std::vector<BufferHandle*> buffers;
  for (auto& b : owned) {
    if (!b->OnReady()->Await().ok()) {
      state.SkipWithError("allocation failed");
      return;
    }
    buffers.push_back(b.get());
  }
  const uint64_t data = 42;
  int64_t ops = 0;
  absl::Duration elapsed, cpu;
  for (auto _ : state) {
    const absl::Time start = absl::Now();
    const absl::Duration cpu_start = ProcessCpuTime();
    if (!RunChain(driver, buffers, n, &data)) {
      state.SkipWithError("chain failed");
      return;
    }
    elapsed += absl::Now() - start;
    cpu += ProcessCpuTime() - cpu_start;
    ops += n;
  }
  PerOp per_op{absl::ToDoubleNanoseconds(elapsed) / ops,
               absl::ToDoubleNanoseconds(cpu) / ops};
  state.counters["wall_ns_per_op"] = per_op.wall_ns;
  state.counters["cpu_ns_per_op"] = per_op.cpu_ns;
  state.SetItemsProcessed(ops);
  absl::MutexLock lock(&results_mu);
  Results()[{backend, pod, n}] = per_op;
}

void Args(benchmark::internal::Benchmark* b) {
  for (int backend : {kLocal, kFake}) {
    for (int pod : {1, 0}) {
      for (int64_t n : {10000, 30000, 100000}) b->Args({backend, pod, n});
    }
  }
  b->ArgNames({"local", "pod", "ops"});
  b->Unit(benchmark::kMillisecond);
  b->Iterations(1);
  b->Repetitions(2);
  b->ReportAggregatesOnly(false);
  b->UseRealTime();
}
BENCHMARK(BM_Chain)->Apply(Args);

void PrintSummary() {
  absl::MutexLock lock(&results_mu);
  const auto& r = Results();
  for (int backend : {kLocal, kFake}) {
    const char* name = backend == kLocal ? "local://" : "fake";
    for (bool wall : {true, false}) {
      auto get = [&](bool pod, int64_t n) -> double {
        auto it = r.find({backend, pod, n});
        if (it == r.end()) return 0;
        return (wall ? it->second.wall_ns : it->second.cpu_ns) / 1e3;
      };
      if (get(true, 10000) == 0) continue;
      const char* what = wall ? "wall" : "cpu ";
      std::printf(
          "%s workers, %s time per op: pod chain 10k %.2f us, 30k %.2f us, "
          "100k %.2f us; flatness 100k/10k = %.2f",
          name, what, get(true, 10000), get(true, 30000), get(true, 100000),
          get(true, 100000) / get(true, 10000));
      if (get(false, 100000) > 0) {
        std::printf(
            " | direct (baseline) 10k %.2f us, 100k %.2f us; "
            "pod/direct at 100k = %.2f",
            get(false, 10000), get(false, 100000),
            get(true, 100000) / get(false, 100000));
      }
      std::printf("\n");
    }
  }
}

}  // namespace
}  // namespace tpu::driver

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  tpu::driver::PrintSummary();
  return 0;
}
