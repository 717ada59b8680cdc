#ifndef SOFTWARE_TPU_DRIVER_BENCHMARK_SERVERS_H_
#define SOFTWARE_TPU_DRIVER_BENCHMARK_SERVERS_H_

// What driver_benchmark measures against.
//
// grpc:// is served by tpu_emulator, and the bare-stream baseline by the ack
// server (driver/ack_server_main.cc), as child processes on loopback: that
// is how users run the emulator, and a server inside the benchmark's own
// process would share gRPC's pollers and executor threads with the client,
// which costs a third of the large-transfer throughput on two cores.
// local:// is opened through the driver registry, as TpuClient does.
//
// The tpu_emulator child also listens on a Unix socket, measured as
// grpc://unix:PATH beside its TCP port.
//
// Flags, removed from argv before the benchmark library sees them:
//   --grpc_target=grpc://H:P    measure a running worker (real or emulated;
//                               it needs 2 cores with 1 GiB of HBM free)
//   --unix_target=grpc://unix:PATH  its Unix socket, if it has one (without
//                               it, the Unix benchmarks of a --grpc_target
//                               are skipped)
//
// Thread safety: call once, from main.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tpu::driver {

// The emulated worker the benchmark measures, in-process (local://) and in
// tpu_emulator alike.
struct BenchmarkTopology {
  int chips = 1;
  int cores_per_chip = 2;
  int64_t hbm_bytes_per_core = int64_t{4} << 30;
};

struct BenchmarkTargets {
  std::string worker;       // grpc://host:port
  std::string unix_worker;  // grpc://unix:PATH, the same worker; may be empty
  std::string ack_server;   // host:port
  std::string ack_server_unix;  // unix:PATH, the same server
  std::string local;            // local://?chips=...
  // The tpu_emulator child serving `worker`; 0 for --grpc_target.
  int worker_pid = 0;
};

// Starts the child processes the flags ask for; they live until this
// process exits (and die with it).
absl::StatusOr<BenchmarkTargets> StartBenchmarkServers(
    int* argc, char** argv, const BenchmarkTopology& topology);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_BENCHMARK_SERVERS_H_
