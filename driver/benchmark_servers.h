#ifndef SOFTWARE_TPU_DRIVER_BENCHMARK_SERVERS_H_
#define SOFTWARE_TPU_DRIVER_BENCHMARK_SERVERS_H_

// The servers driver_benchmark's grpc:// figures are measured against.
//
// By default tpu_emulator and the bare ack server (driver/ack_server_main.cc)
// run as child processes on loopback, as users run the emulator: a server in
// the benchmark's own process would share gRPC's pollers and executor threads
// with the client, which costs a third of the large-transfer throughput on
// two cores and is not what anyone deploys.
//
// Flags, removed from argv before the benchmark library sees them:
//   --in_process_servers        serve both from this process instead
//   --grpc_target=grpc://H:P    measure a running worker (real or emulated;
//                               it needs 2 cores with 1 GiB of HBM free)
//
// Thread safety: call once, from main.

#include <string>

#include "absl/status/statusor.h"
#include "emulator/worker/worker.h"

namespace tpu::driver {

struct BenchmarkTargets {
  std::string worker;      // grpc://host:port
  std::string ack_server;  // host:port
};

// Starts what the flags ask for; the servers live until the process exits.
absl::StatusOr<BenchmarkTargets> StartBenchmarkServers(
    int* argc, char** argv, const emulator::WorkerOptions& worker);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_BENCHMARK_SERVERS_H_
