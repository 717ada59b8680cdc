// Driver throughput and latency, each against a baseline measured in the same
// run: grpc:// against raw loopback TCP, local:// against memcpy.
//
//   bazel run //driver:driver_benchmark
//   bazel run //driver:driver_benchmark -- --benchmark_filter=Grpc
//   bazel-bin/driver/driver_benchmark --grpc_target=grpc://10.0.0.2:8470
//
// grpc:// is measured against tpu_emulator in a child process, local://
// through the driver registry (driver/benchmark_servers.h has the flags).
//
// Counters: GBps (the driver), baseline_GBps, ratio (driver / baseline);
// for grpc:// also bare_grpc_GBps, the same messages on a bare gRPC stream
// (driver/transfer_baselines.h), and of_bare_grpc (driver / bare stream);
// p50_us / p99_us for the round trip, bare_grpc_rtt_us for one message and
// its answer on the bare stream; ops_per_s for pipelined small ops.
// Goals (issue 3): H2D/D2H >= 50% of loopback TCP; round trip p50 < 250 us;
// pipelined >= 20,000 ops/s.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "driver/benchmark_servers.h"
#include "driver/driver_registry.h"
#include "driver/transfer_baselines.h"
#include "hlo/host_memory.h"

namespace tpu::driver {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// --- Baselines -------------------------------------------------------------

double MemcpyBytesPerSecond(int64_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const auto start = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::DoNotOptimize(b.data());
    best = std::max(best, bytes / Seconds(Clock::now() - start));
  }
  return best;
}

// --- Backends --------------------------------------------------------------

// Set by main before any benchmark runs.
const BenchmarkTargets* targets = nullptr;

// One driver per address for the whole run, opened as TpuClient opens it.
TpuDriver* OpenOnce(const std::string& address) {
  auto opened = DriverRegistry::Open(address);
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    std::exit(1);
  }
  return opened->release();
}

TpuDriver* GrpcDriver() {
  static TpuDriver* driver = OpenOnce(targets->worker);
  return driver;
}

TpuDriver* LocalDriver() {
  static TpuDriver* driver = OpenOnce(targets->local);
  return driver;
}

enum class Backend { kGrpc, kLocal };

TpuDriver* DriverFor(Backend backend) {
  return backend == Backend::kGrpc ? GrpcDriver() : LocalDriver();
}

double BaselineFor(Backend backend, int64_t bytes) {
  return backend == Backend::kGrpc ? LoopbackTcpBytesPerSecond(bytes)
                                   : MemcpyBytesPerSecond(bytes);
}

void Check(absl::Status status, benchmark::State& state) {
  if (!status.ok()) state.SkipWithError(status.ToString().c_str());
}

// --- Transfers -------------------------------------------------------------

void ReportThroughput(benchmark::State& state, Backend backend, bool to_device,
                      int64_t bytes, double seconds) {
  const double rate = bytes * static_cast<double>(state.iterations()) / seconds;
  const double baseline = BaselineFor(backend, bytes);
  state.SetBytesProcessed(bytes * state.iterations());
  state.counters["GBps"] = rate / 1e9;
  state.counters["baseline_GBps"] = baseline / 1e9;
  state.counters["ratio"] = rate / baseline;
  if (backend == Backend::kGrpc) {
    // Where the gap to TCP lies: the same messages on a bare gRPC stream.
    const int in_flight = static_cast<int>(state.range(1));
    const double bare =
        BareGrpcBytesPerSecond(targets->ack_server, bytes, in_flight,
                               std::max<int>(4, (int64_t{1} << 30) / bytes),
                               /*to_server=*/to_device);
    state.counters["bare_grpc_GBps"] = bare / 1e9;
    state.counters["of_bare_grpc"] = rate / bare;
  }
}

// Transfers of range(0) bytes with up to range(1) of them in flight, each
// slot with a buffer and host memory of its own. One in flight measures what
// a caller that waits for every transfer sees; several, what an input
// pipeline that keeps the link busy sees.
void RunTransfers(benchmark::State& state, Backend backend, bool to_device) {
  TpuDriver* driver = DriverFor(backend);
  const int64_t bytes = state.range(0);
  const int in_flight = static_cast<int>(state.range(1));
  std::vector<std::vector<char>> host(in_flight, std::vector<char>(bytes, 5));
  std::vector<std::unique_ptr<BufferHandle>> buffers;
  for (int i = 0; i < in_flight; ++i) {
    buffers.push_back(driver->Allocate(0, tpu_driver::HBM, bytes, {}));
    // Twice: a transfer_to fills fresh contents while the old ones are
    // still the buffer's, so the steady state recycles two blocks.
    for (int warm_up = 0; warm_up < 2; ++warm_up) {
      Check(driver->TransferToDevice(host[i].data(), buffers[i].get(), {})
                ->Await(),
            state);
    }
  }
  std::vector<std::shared_ptr<Event>> pending(in_flight);
  int64_t issued = 0;
  const auto start = Clock::now();
  for (auto _ : state) {
    const int slot = static_cast<int>(issued++ % in_flight);
    if (pending[slot] != nullptr) Check(pending[slot]->Await(), state);
    pending[slot] = to_device ? driver->TransferToDevice(
                                    host[slot].data(), buffers[slot].get(), {})
                              : driver->TransferFromDevice(
                                    buffers[slot].get(), host[slot].data(), {});
  }
  for (auto& event : pending) {
    if (event != nullptr) Check(event->Await(), state);
  }
  const double seconds = Seconds(Clock::now() - start);
  for (auto& buffer : buffers) {
    Check(driver->Deallocate(std::move(buffer), {})->Await(), state);
  }
  ReportThroughput(state, backend, to_device, bytes, seconds);
}

void BM_HostToDevice(benchmark::State& state, Backend backend) {
  RunTransfers(state, backend, /*to_device=*/true);
}

void BM_DeviceToHost(benchmark::State& state, Backend backend) {
  RunTransfers(state, backend, /*to_device=*/false);
}

// --- A tiny program's round trip ---------------------------------------------

xla::ShapeProto F32(int64_t n) {
  xla::ShapeProto shape;
  shape.set_element_type(xla::F32);
  shape.add_dimensions(n);
  shape.mutable_layout()->add_minor_to_major(0);
  return shape;
}

// (p0: f32[4], p1: f32[4]) -> p0 + p1
xla::HloProto TinyAdd() {
  xla::HloProto proto;
  auto* module = proto.mutable_hlo_module();
  module->set_name("tiny");
  module->set_entry_computation_name("main");
  module->set_entry_computation_id(1);
  auto* computation = module->add_computations();
  computation->set_name("main");
  computation->set_id(1);
  computation->set_root_id(3);
  for (int i = 0; i < 3; ++i) {
    auto* instruction = computation->add_instructions();
    instruction->set_id(i + 1);
    *instruction->mutable_shape() = F32(4);
    if (i < 2) {
      instruction->set_name(absl::StrCat("p", i));
      instruction->set_opcode("parameter");
      instruction->set_parameter_number(i);
      *computation->mutable_program_shape()->add_parameters() = F32(4);
      computation->mutable_program_shape()->add_parameter_names(
          absl::StrCat("p", i));
    } else {
      instruction->set_name("sum");
      instruction->set_opcode("add");
      instruction->add_operand_ids(1);
      instruction->add_operand_ids(2);
    }
  }
  *computation->mutable_program_shape()->mutable_result() = F32(4);
  *module->mutable_host_program_shape() = computation->program_shape();
  return proto;
}

void BM_TinyProgramRoundTrip(benchmark::State& state, Backend backend) {
  TpuDriver* driver = DriverFor(backend);
  auto program = driver->CompileProgram(TinyAdd(), 1, {});
  auto loaded = driver->LoadProgram(0, program.get(), {});
  Check(loaded->OnReady()->Await(), state);
  xla::DeviceAssignmentProto assignment;
  assignment.set_replica_count(1);
  assignment.set_computation_count(1);
  assignment.add_computation_devices()->add_replica_device_ids(0);
  const float in[4] = {1, 2, 3, 4};
  float out[4];
  std::vector<double> latencies;
  for (auto _ : state) {
    const auto start = Clock::now();
    auto x = driver->Allocate(0, tpu_driver::HBM, F32(4), {});
    auto y = driver->Allocate(0, tpu_driver::HBM, F32(4), {});
    auto to = driver->TransferToDevice(in, x.get(), {});
    auto run = driver->ExecuteProgram(loaded.get(), {x.get(), x.get()},
                                      {y.get()}, assignment, {to.get()});
    Check(driver->TransferFromDevice(y.get(), out, {run.get()})->Await(),
          state);
    latencies.push_back(Seconds(Clock::now() - start) * 1e6);
    driver->Deallocate(std::move(x), {});
    driver->Deallocate(std::move(y), {});
  }
  if (out[3] != 8) state.SkipWithError("wrong result");
  Check(driver->UnloadProgram(std::move(loaded), {})->Await(), state);
  std::sort(latencies.begin(), latencies.end());
  if (!latencies.empty()) {
    state.counters["p50_us"] = latencies[latencies.size() / 2];
    state.counters["p99_us"] = latencies[latencies.size() * 99 / 100];
  }
  if (backend == Backend::kGrpc) {
    // The floor: one 16-byte message and its answer on a bare gRPC stream.
    const int kPings = 2000;
    const double rate =
        BareGrpcBytesPerSecond(targets->ack_server, 16, 1, kPings,
                               /*to_server=*/true);
    if (rate > 0) state.counters["bare_grpc_rtt_us"] = 16 / rate * 1e6;
  }
}

// --- Pipelined small operations ----------------------------------------------

// Many independent 64-byte transfers in flight at once; the issuing thread
// never waits until the end of the batch.
void BM_PipelinedSmallOps(benchmark::State& state, Backend backend) {
  TpuDriver* driver = DriverFor(backend);
  const int kOps = 2000;
  std::vector<char> data(64, 9);
  auto buffer = driver->Allocate(0, tpu_driver::HBM, 64, {});
  Check(buffer->OnReady()->Await(), state);
  Clock::duration total{};
  std::vector<std::shared_ptr<Event>> events(kOps);
  for (auto _ : state) {
    const auto start = Clock::now();
    for (int i = 0; i < kOps; ++i) {
      events[i] = driver->TransferToDevice(data.data(), buffer.get(), {});
    }
    for (auto& event : events) Check(event->Await(), state);
    total += Clock::now() - start;
  }
  Check(driver->Deallocate(std::move(buffer), {})->Await(), state);
  state.counters["ops_per_s"] =
      kOps * static_cast<double>(state.iterations()) / Seconds(total);
}

// {bytes, transfers in flight}. Each slot's first transfers, untimed, pay
// the page faults of fresh memory; the timed ones measure the steady state a
// training loop sees.
void TransferArgs(benchmark::internal::Benchmark* b) {
  b->Args({1 << 20, 1})->Args({1 << 20, 8})->UseRealTime();
}
void LargeTransferArgs(benchmark::internal::Benchmark* b) {
  b->Args({256 << 20, 1})->Iterations(8)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_HostToDevice, Grpc, Backend::kGrpc)->Apply(TransferArgs);
BENCHMARK_CAPTURE(BM_HostToDevice, Grpc, Backend::kGrpc)
    ->Apply(LargeTransferArgs);
BENCHMARK_CAPTURE(BM_DeviceToHost, Grpc, Backend::kGrpc)->Apply(TransferArgs);
BENCHMARK_CAPTURE(BM_DeviceToHost, Grpc, Backend::kGrpc)
    ->Apply(LargeTransferArgs);
BENCHMARK_CAPTURE(BM_TinyProgramRoundTrip, Grpc, Backend::kGrpc)->UseRealTime();
BENCHMARK_CAPTURE(BM_PipelinedSmallOps, Grpc, Backend::kGrpc)->UseRealTime();

BENCHMARK_CAPTURE(BM_HostToDevice, Local, Backend::kLocal)->Apply(TransferArgs);
BENCHMARK_CAPTURE(BM_HostToDevice, Local, Backend::kLocal)
    ->Apply(LargeTransferArgs);
BENCHMARK_CAPTURE(BM_DeviceToHost, Local, Backend::kLocal)->Apply(TransferArgs);
BENCHMARK_CAPTURE(BM_DeviceToHost, Local, Backend::kLocal)
    ->Apply(LargeTransferArgs);
BENCHMARK_CAPTURE(BM_TinyProgramRoundTrip, Local, Backend::kLocal)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_PipelinedSmallOps, Local, Backend::kLocal)->UseRealTime();

}  // namespace
}  // namespace tpu::driver

int main(int argc, char** argv) {
  tpu::ConfigureHostMemoryForLargeBuffers();  // as tpu_emulator and tpu_run
  absl::StatusOr<tpu::driver::BenchmarkTargets> targets =
      tpu::driver::StartBenchmarkServers(&argc, argv,
                                         tpu::driver::BenchmarkTopology());
  if (!targets.ok()) {
    std::fprintf(stderr,
                 "driver_benchmark: cannot start the servers to measure: %s\n"
                 "Run it with bazel run or from bazel-bin (it finds "
                 "tpu_emulator in its runfiles), or pass "
                 "--grpc_target=grpc://host:port.\n",
                 targets.status().ToString().c_str());
    return 1;
  }
  tpu::driver::targets = &*targets;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
