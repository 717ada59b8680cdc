// The C++ TpuClient's figures that python_client_benchmark.py compares
// softtpu against, measured the same way over the same local:// backend:
//
//   execute_us  <median microseconds per Execute of a scalar x + 1>
//   execute_cpu_us  <median CPU microseconds per Execute, all threads>
//   transfer_gbps  <256 MiB FromLiteral + ToLiteral, GB/s of the one size>
//
// Run from the repository root:
//   bazel-bin/python/benchmarks/client_baseline [--rounds=N]
// The malloc policy is left at glibc's defaults, as in a Python process.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "client/tpu_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_executable.h"
#include "hlo/literal.h"
#include "tools/tpu_run/module_file.h"

ABSL_FLAG(std::string, module, "python/benchmarks/add_one.hlo",
          "the program whose executes are timed: a scalar f32 x + 1");
ABSL_FLAG(int, rounds, 5, "timed rounds per figure; the median is printed");
ABSL_FLAG(int, executes, 2000, "executes per round");
ABSL_FLAG(int64_t, transfer_bytes, int64_t{256} << 20, "bytes per transfer");

namespace tpu::client {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// CPU time of the whole process (every thread), which other processes
// competing for the cores inflate far less than wall time.
double ProcessCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <typename T>
T OrDie(absl::StatusOr<T> value) {
  if (!value.ok()) {
    std::fprintf(stderr, "client_baseline: %s\n",
                 value.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(value);
}

struct ExecuteCost {
  double wall_us;
  double cpu_us;
};

ExecuteCost ExecuteMicroseconds(const std::shared_ptr<TpuClient>& client) {
  auto executable = OrDie(
      TpuExecutable::Compile(OrDie(ReadModuleFile(absl::GetFlag(FLAGS_module))),
                             CompileOptions(), client));
  auto x = OrDie(TpuBuffer::FromLiteral(
      Literal::FromVector<float>(xla::F32, {}, {1.0f}), client, 0));
  std::vector<TpuBuffer*> arguments = {x.get()};
  const int executes = absl::GetFlag(FLAGS_executes);
  for (int i = 0; i < executes / 10; ++i) OrDie(executable->Execute(arguments));
  std::vector<double> wall, cpu;
  for (int r = 0; r < absl::GetFlag(FLAGS_rounds); ++r) {
    const double cpu_start = ProcessCpuSeconds();
    const auto start = Clock::now();
    for (int i = 0; i < executes; ++i) OrDie(executable->Execute(arguments));
    wall.push_back(Seconds(Clock::now() - start) / executes * 1e6);
    cpu.push_back((ProcessCpuSeconds() - cpu_start) / executes * 1e6);
  }
  return {Median(wall), Median(cpu)};
}

double TransferGigabytesPerSecond(const std::shared_ptr<TpuClient>& client) {
  const int64_t bytes = absl::GetFlag(FLAGS_transfer_bytes);
  Literal value = Literal::Zeros(Shape::Array(xla::F32, {bytes / 4}));
  std::memset(value.mutable_untyped_data(), 1, bytes);
  auto round_trip = [&] {
    auto buffer = OrDie(TpuBuffer::FromLiteral(value, client, 0));
    Literal back = OrDie(buffer->ToLiteral());
    if (back.size_bytes() != bytes) std::exit(1);
  };
  // Two untimed rounds warm the allocators, as a long-running program is.
  round_trip();
  round_trip();
  std::vector<double> rounds;
  for (int r = 0; r < absl::GetFlag(FLAGS_rounds); ++r) {
    const auto start = Clock::now();
    round_trip();
    rounds.push_back(bytes / Seconds(Clock::now() - start) / 1e9);
  }
  return Median(rounds);
}

}  // namespace
}  // namespace tpu::client

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  auto client = tpu::client::OrDie(tpu::client::TpuClient::Get("local://"));
  const tpu::client::ExecuteCost execute =
      tpu::client::ExecuteMicroseconds(client);
  std::printf("execute_us %.2f\n", execute.wall_us);
  std::printf("execute_cpu_us %.2f\n", execute.cpu_us);
  std::printf("transfer_gbps %.3f\n",
              tpu::client::TransferGigabytesPerSecond(client));
  return 0;
}
