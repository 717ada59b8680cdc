// Driver throughput and latency, each against a baseline measured in the same
// run: grpc:// against raw loopback TCP, grpc://unix: (the local fast path)
// against grpc:// over loopback TCP to the same worker, local:// against
// memcpy.
//
//   bazel run //driver:driver_benchmark
//   bazel run //driver:driver_benchmark -- --benchmark_filter=Unix
//   bazel-bin/driver/driver_benchmark --grpc_target=grpc://10.0.0.2:8470
//
// grpc:// and grpc://unix: are measured against tpu_emulator in a child
// process, local:// through the driver registry (driver/benchmark_servers.h
// has the flags).
//
// Counters: GBps (the driver), baseline_GBps, ratio (driver / baseline);
// for grpc:// also bare_grpc_GBps, the same messages on a bare gRPC stream
// (driver/transfer_baselines.h), and of_bare_grpc (driver / bare stream);
// for grpc://unix: raw_unix_over_tcp, the kernel's own ratio, and
// bare_grpc_unix_over_tcp, bare gRPC's own (the floor under ours); p50_us /
// p99_us for the round trip, bare_grpc_p50_us for one message and its answer
// on the bare stream (interleaved), tcp_p50_us and ratio for grpc://unix:;
// ops_per_s for pipelined small ops.
// Goals (issue 3): H2D/D2H >= 50% of loopback TCP; round trip p50 < 250 us;
// pipelined >= 20,000 ops/s. Issue 16: over the Unix socket, round trip p50
// <= 0.6 of TCP's, 256 MiB transfers >= 1.5x TCP's.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "driver/benchmark_servers.h"
#include "driver/driver_registry.h"
#include "driver/grpc/grpc_transport.h"
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

// grpc:// over loopback TCP, over the same worker's Unix socket, and local://.
enum class Backend { kGrpc, kUnix, kLocal };

// Null for kUnix when the worker measured has no Unix socket.
TpuDriver* DriverFor(Backend backend) {
  static TpuDriver* grpc = OpenOnce(targets->worker);
  static TpuDriver* unix_socket =
      targets->unix_worker.empty() ? nullptr : OpenOnce(targets->unix_worker);
  static TpuDriver* local = OpenOnce(targets->local);
  switch (backend) {
    case Backend::kGrpc:
      return grpc;
    case Backend::kUnix:
      return unix_socket;
    case Backend::kLocal:
      break;
  }
  return local;
}

void Check(absl::Status status, benchmark::State& state) {
  if (!status.ok()) state.SkipWithError(status.ToString().c_str());
}

// The driver of `backend`, or null after skipping the benchmark.
TpuDriver* DriverOrSkip(Backend backend, benchmark::State& state) {
  TpuDriver* driver = DriverFor(backend);
  if (driver == nullptr) {
    state.SkipWithError("no Unix socket to measure (see --unix_target)");
  }
  return driver;
}

// --- Transfers -------------------------------------------------------------

// Transfers of `bytes` with up to `in_flight` of them in flight, each slot
// with a buffer and host memory of its own. One in flight measures what a
// caller that waits for every transfer sees; several, what an input
// pipeline that keeps the link busy sees. Each slot's first transfers,
// untimed, pay the page faults of fresh memory; later ones measure the
// steady state a training loop sees.
class TransferRig {
 public:
  TransferRig(TpuDriver* driver, int64_t bytes, int in_flight, bool to_device)
      : driver_(driver),
        to_device_(to_device),
        host_(in_flight, std::vector<char>(bytes, 5)),
        pending_(in_flight) {
    for (int i = 0; i < in_flight; ++i) {
      buffers_.push_back(driver->Allocate(0, tpu_driver::HBM, bytes, {}));
      // Twice: a transfer_to fills fresh contents while the old ones are
      // still the buffer's, so the steady state recycles two blocks.
      for (int warm_up = 0; warm_up < 2; ++warm_up) {
        Note(driver->TransferToDevice(host_[i].data(), buffers_[i].get(), {})
                 ->Await());
      }
    }
  }
  ~TransferRig() {
    Drain().IgnoreError();  // Reported by the caller's own Drain.
    for (auto& buffer : buffers_) {
      driver_->Deallocate(std::move(buffer), {})->Await().IgnoreError();
    }
  }

  // Issues the next transfer, first waiting for its slot's previous one.
  void Next() {
    const size_t slot = issued_++ % pending_.size();
    if (pending_[slot] != nullptr) Note(pending_[slot]->Await());
    pending_[slot] = to_device_
                         ? driver_->TransferToDevice(host_[slot].data(),
                                                     buffers_[slot].get(), {})
                         : driver_->TransferFromDevice(buffers_[slot].get(),
                                                       host_[slot].data(), {});
  }

  // Waits for every transfer issued; returns the first failure of any.
  absl::Status Drain() {
    for (auto& event : pending_) {
      if (event != nullptr) Note(event->Await());
      event = nullptr;
    }
    return status_;
  }

 private:
  void Note(absl::Status status) { status_.Update(status); }

  TpuDriver* const driver_;
  const bool to_device_;
  std::vector<std::vector<char>> host_;
  std::vector<std::unique_ptr<BufferHandle>> buffers_;
  std::vector<std::shared_ptr<Event>> pending_;
  int64_t issued_ = 0;
  absl::Status status_;
};

// Bytes per second of `count` transfers through `driver`, untimed set-up
// aside; 0 on failure.
double DriverBytesPerSecond(TpuDriver* driver, int64_t bytes, int in_flight,
                            bool to_device, int64_t count) {
  TransferRig rig(driver, bytes, in_flight, to_device);
  const auto start = Clock::now();
  for (int64_t i = 0; i < count; ++i) rig.Next();
  if (!rig.Drain().ok()) return 0;
  return bytes * static_cast<double>(count) / Seconds(Clock::now() - start);
}

// Counters: GBps and, against the backend's baseline, baseline_GBps and
// ratio. The baseline is raw loopback TCP for grpc://, memcpy for local://,
// and for grpc://unix: the grpc:// driver over loopback TCP to the same
// worker, with the same transfers (what the fast path is measured against).
void ReportThroughput(benchmark::State& state, Backend backend, bool to_device,
                      int64_t bytes, double seconds) {
  const int in_flight = static_cast<int>(state.range(1));
  const double rate = bytes * static_cast<double>(state.iterations()) / seconds;
  double baseline = 0;
  switch (backend) {
    case Backend::kGrpc:
      baseline = LoopbackTcpBytesPerSecond(bytes);
      break;
    case Backend::kUnix:
      baseline = DriverBytesPerSecond(DriverFor(Backend::kGrpc), bytes,
                                      in_flight, to_device, state.iterations());
      // The kernel's own ratio: the most the fast path could gain.
      state.counters["raw_unix_over_tcp"] =
          UnixSocketBytesPerSecond(bytes) / LoopbackTcpBytesPerSecond(bytes);
      {
        // gRPC's own: the same messages on a bare gRPC stream to the ack
        // server, over its Unix socket and over loopback TCP.
        const int messages = std::max<int>(4, (int64_t{1} << 30) / bytes);
        const double unix_bare =
            BareGrpcBytesPerSecond(targets->ack_server_unix, bytes, in_flight,
                                   messages, /*to_server=*/to_device);
        const double tcp_bare =
            BareGrpcBytesPerSecond(targets->ack_server, bytes, in_flight,
                                   messages, /*to_server=*/to_device);
        state.counters["bare_grpc_unix_over_tcp"] =
            tcp_bare > 0 ? unix_bare / tcp_bare : 0;
      }
      break;
    case Backend::kLocal:
      baseline = MemcpyBytesPerSecond(bytes);
      break;
  }
  state.SetBytesProcessed(bytes * state.iterations());
  state.counters["GBps"] = rate / 1e9;
  state.counters["baseline_GBps"] = baseline / 1e9;
  state.counters["ratio"] = rate / baseline;
  if (backend == Backend::kGrpc) {
    // Where the gap to TCP lies: the same messages on a bare gRPC stream.
    const double bare =
        BareGrpcBytesPerSecond(targets->ack_server, bytes, in_flight,
                               std::max<int>(4, (int64_t{1} << 30) / bytes),
                               /*to_server=*/to_device);
    state.counters["bare_grpc_GBps"] = bare / 1e9;
    state.counters["of_bare_grpc"] = rate / bare;
  }
}

// Transfers of range(0) bytes with up to range(1) of them in flight.
void RunTransfers(benchmark::State& state, Backend backend, bool to_device) {
  TpuDriver* driver = DriverOrSkip(backend, state);
  if (driver == nullptr) return;
  const int64_t bytes = state.range(0);
  double seconds = 0;
  {
    TransferRig rig(driver, bytes, static_cast<int>(state.range(1)), to_device);
    const auto start = Clock::now();
    for (auto _ : state) rig.Next();
    Check(rig.Drain(), state);
    seconds = Seconds(Clock::now() - start);
  }  // Its memory is returned before the baseline runs.
  ReportThroughput(state, backend, to_device, bytes, seconds);
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

// (x + x) on a loaded TinyAdd: allocate, transfer in, execute, transfer out,
// as one caller-visible round trip.
class TinyProgramRunner {
 public:
  explicit TinyProgramRunner(TpuDriver* driver) : driver_(driver) {
    program_ = driver->CompileProgram(TinyAdd(), 1, {});
    loaded_ = driver->LoadProgram(0, program_.get(), {});
    status_ = loaded_->OnReady()->Await();
    assignment_.set_replica_count(1);
    assignment_.set_computation_count(1);
    assignment_.add_computation_devices()->add_replica_device_ids(0);
  }
  ~TinyProgramRunner() {
    Release();
    driver_->UnloadProgram(std::move(loaded_), {})->Await().IgnoreError();
  }

  // Microseconds of one round trip. The previous round trip's buffers are
  // deallocated first, timed, as a loop that runs one program after the
  // other does: the deallocations ride with this round trip's entries.
  // (Deallocating them right after the previous round trip instead would
  // put the benchmark's own interleaved measurements between them and this
  // round trip, longer than the driver's coalescing window: they would
  // leave alone, and their answer would be read inside this round trip.)
  double RunOnce() {
    const auto start = Clock::now();
    Release();
    x_ = driver_->Allocate(0, tpu_driver::HBM, F32(4), {});
    y_ = driver_->Allocate(0, tpu_driver::HBM, F32(4), {});
    auto to = driver_->TransferToDevice(in_, x_.get(), {});
    auto run = driver_->ExecuteProgram(loaded_.get(), {x_.get(), x_.get()},
                                       {y_.get()}, assignment_, {to.get()});
    status_.Update(
        driver_->TransferFromDevice(y_.get(), out_, {run.get()})->Await());
    const double micros = Seconds(Clock::now() - start) * 1e6;
    if (status_.ok() && out_[3] != 8) {
      status_ = absl::InternalError("wrong result");
    }
    return micros;
  }

  const absl::Status& status() const { return status_; }

 private:
  // Deallocates the last round trip's buffers, if any.
  void Release() {
    if (x_ != nullptr) driver_->Deallocate(std::move(x_), {});
    if (y_ != nullptr) driver_->Deallocate(std::move(y_), {});
  }

  TpuDriver* const driver_;
  std::unique_ptr<BufferHandle> x_, y_;
  std::unique_ptr<CompiledProgramHandle> program_;
  std::unique_ptr<LoadedProgramHandle> loaded_;
  xla::DeviceAssignmentProto assignment_;
  const float in_[4] = {1, 2, 3, 4};
  float out_[4] = {};
  absl::Status status_;
};

double Percentile(std::vector<double> values, int percent) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() * percent / 100];
}

// A bare gRPC stream to the ack server at `address`, or null after skipping
// the benchmark.
std::unique_ptr<BareGrpcStream> BareOrSkip(const std::string& address,
                                           benchmark::State& state) {
  std::unique_ptr<BareGrpcStream> bare = BareGrpcStream::Open(address);
  if (bare == nullptr) {
    state.SkipWithError(
        absl::StrCat("cannot open a bare gRPC stream to ", address).c_str());
  }
  return bare;
}

// Counters: p50_us, p99_us. For grpc:// and grpc://unix:, measured
// interleaved with the round trips so that both see the same machine: one
// 16-byte message and its answer on a bare gRPC stream over the same kind of
// socket (bare_grpc_p50_us, gRPC's own floor) and of_bare_grpc = p50_us /
// bare_grpc_p50_us; for grpc:// also the messages each way per round trip
// (requests_per_rtt, responses_per_rtt). For grpc://unix:, also the same
// round trip over loopback TCP to the same worker (tcp_p50_us), ratio =
// p50_us / tcp_p50_us, and bare_grpc_ratio, the bare stream's Unix / TCP
// p50 (gRPC's own floor for that ratio).
void BM_TinyProgramRoundTrip(benchmark::State& state, Backend backend) {
  TpuDriver* driver = DriverOrSkip(backend, state);
  if (driver == nullptr) return;
  TinyProgramRunner runner(driver);
  std::unique_ptr<TinyProgramRunner> tcp;
  std::unique_ptr<BareGrpcStream> bare, bare_tcp;
  if (backend != Backend::kLocal) {
    bare = BareOrSkip(backend == Backend::kUnix ? targets->ack_server_unix
                                                : targets->ack_server,
                      state);
    if (bare == nullptr) return;
  }
  if (backend == Backend::kUnix) {
    tcp = std::make_unique<TinyProgramRunner>(DriverFor(Backend::kGrpc));
    bare_tcp = BareOrSkip(targets->ack_server, state);
    if (bare_tcp == nullptr) return;
  }
  std::vector<double> latencies, tcp_latencies, bare_latencies,
      bare_tcp_latencies;
  const GrpcStreamMessageCounts before = GrpcStreamMessagesSoFar();
  for (auto _ : state) {
    latencies.push_back(runner.RunOnce());
    if (bare == nullptr) continue;
    state.PauseTiming();
    bare_latencies.push_back(bare->RoundTripMicros());
    if (tcp != nullptr) {
      tcp_latencies.push_back(tcp->RunOnce());
      bare_tcp_latencies.push_back(bare_tcp->RoundTripMicros());
    }
    state.ResumeTiming();
  }
  Check(runner.status(), state);
  if (backend == Backend::kGrpc) {
    // How well the round trip's seven operations are batched: each way, one
    // message per round trip is the least (the deallocations ride with the
    // next round trip's entries).
    const GrpcStreamMessageCounts after = GrpcStreamMessagesSoFar();
    const double n = static_cast<double>(state.iterations());
    state.counters["requests_per_rtt"] =
        (after.requests_written - before.requests_written) / n;
    state.counters["responses_per_rtt"] =
        (after.responses_read - before.responses_read) / n;
  }
  const double p50 = Percentile(latencies, 50);
  state.counters["p50_us"] = p50;
  state.counters["p99_us"] = Percentile(latencies, 99);
  if (bare == nullptr) return;
  const double bare_p50 = Percentile(bare_latencies, 50);
  if (Percentile(bare_latencies, 0) < 0) {
    state.SkipWithError("the bare gRPC stream broke");
    return;
  }
  state.counters["bare_grpc_p50_us"] = bare_p50;
  state.counters["of_bare_grpc"] = p50 / bare_p50;
  if (tcp != nullptr) {
    Check(tcp->status(), state);
    const double tcp_p50 = Percentile(tcp_latencies, 50);
    state.counters["tcp_p50_us"] = tcp_p50;
    state.counters["ratio"] = p50 / tcp_p50;
    state.counters["bare_grpc_ratio"] =
        bare_p50 / Percentile(bare_tcp_latencies, 50);
  }
}

// --- Pipelined small operations ----------------------------------------------

// CPU seconds (user + system) process `pid` used so far; 0 if unknown.
double ProcessCpuSeconds(int pid) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (pid <= 0 || !std::getline(file, line)) return 0;
  // Fields after the command (which may hold spaces): state is field 3,
  // utime and stime are fields 14 and 15, in clock ticks.
  const size_t end_of_command = line.rfind(')');
  if (end_of_command == std::string::npos) return 0;
  std::vector<std::string> fields =
      absl::StrSplit(line.substr(end_of_command + 2), ' ');
  if (fields.size() < 13) return 0;
  double utime = 0, stime = 0;
  if (!absl::SimpleAtod(fields[11], &utime) ||
      !absl::SimpleAtod(fields[12], &stime)) {
    return 0;
  }
  return (utime + stime) / sysconf(_SC_CLK_TCK);
}

// Many independent 64-byte transfers in flight at once; the issuing thread
// never waits until the end of the batch.
//
// Counters: ops_per_s; for grpc:// and grpc://unix: also the entries per
// message each way, and the CPU each side spends per operation
// (client_cpu_us_per_op; worker_cpu_us_per_op, when the benchmark started
// the worker): with two cores shared by both processes, ops_per_s cannot
// exceed 1e6 / max(client, worker) nor 2e6 / (client + worker).
void BM_PipelinedSmallOps(benchmark::State& state, Backend backend) {
  TpuDriver* driver = DriverOrSkip(backend, state);
  if (driver == nullptr) return;
  const int kOps = 2000;
  std::vector<char> data(64, 9);
  auto buffer = driver->Allocate(0, tpu_driver::HBM, 64, {});
  Check(buffer->OnReady()->Await(), state);
  Clock::duration total{};
  std::vector<std::shared_ptr<Event>> events(kOps);
  const GrpcStreamMessageCounts before = GrpcStreamMessagesSoFar();
  const double client_cpu_before = ProcessCpuSeconds(getpid());
  const double worker_cpu_before = ProcessCpuSeconds(targets->worker_pid);
  for (auto _ : state) {
    const auto start = Clock::now();
    for (int i = 0; i < kOps; ++i) {
      events[i] = driver->TransferToDevice(data.data(), buffer.get(), {});
    }
    for (auto& event : events) Check(event->Await(), state);
    total += Clock::now() - start;
  }
  Check(driver->Deallocate(std::move(buffer), {})->Await(), state);
  const double ops = kOps * static_cast<double>(state.iterations());
  state.counters["ops_per_s"] = ops / Seconds(total);
  const double client_cpu = ProcessCpuSeconds(getpid()) - client_cpu_before;
  state.counters["client_cpu_us_per_op"] = client_cpu / ops * 1e6;
  if (backend != Backend::kLocal && targets->worker_pid > 0) {
    state.counters["worker_cpu_us_per_op"] =
        (ProcessCpuSeconds(targets->worker_pid) - worker_cpu_before) / ops *
        1e6;
  }
  if (backend != Backend::kLocal) {
    // Entries per StreamRequest and per StreamResponse: the batching.
    const GrpcStreamMessageCounts after = GrpcStreamMessagesSoFar();
    state.counters["ops_per_request"] =
        ops /
        std::max<int64_t>(1, after.requests_written - before.requests_written);
    state.counters["ops_per_response"] =
        ops /
        std::max<int64_t>(1, after.responses_read - before.responses_read);
  }
}

// {bytes, transfers in flight}.
void TransferArgs(benchmark::internal::Benchmark* b) {
  b->Args({1 << 20, 1})->Args({1 << 20, 8})->UseRealTime();
}
void LargeTransferArgs(benchmark::internal::Benchmark* b) {
  b->Args({256 << 20, 1})->Iterations(8)->UseRealTime();
}

// Every benchmark, once per backend: BM_<name>/<backend>/...
void RegisterBenchmarks() {
  const std::pair<const char*, Backend> backends[] = {
      {"Grpc", Backend::kGrpc},
      {"Unix", Backend::kUnix},
      {"Local", Backend::kLocal}};
  for (const auto& [name, backend] : backends) {
    auto named = [name = std::string(name)](const char* benchmark) {
      return absl::StrCat(benchmark, "/", name);
    };
    for (bool to_device : {true, false}) {
      const std::string which =
          named(to_device ? "BM_HostToDevice" : "BM_DeviceToHost");
      for (auto* args : {&TransferArgs, &LargeTransferArgs}) {
        benchmark::RegisterBenchmark(which.c_str(), RunTransfers, backend,
                                     to_device)
            ->Apply(args);
      }
    }
    benchmark::RegisterBenchmark(named("BM_TinyProgramRoundTrip").c_str(),
                                 BM_TinyProgramRoundTrip, backend)
        ->UseRealTime();
    benchmark::RegisterBenchmark(named("BM_PipelinedSmallOps").c_str(),
                                 BM_PipelinedSmallOps, backend)
        ->UseRealTime();
  }
}

}  // namespace
}  // namespace tpu::driver

int main(int argc, char** argv) {
  // As tpu_emulator, tpu_run and the Python client: without absl's debug
  // lock-order graph, which Debian's absl keeps on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
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
  tpu::driver::RegisterBenchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
