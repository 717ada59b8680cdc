#include "driver/benchmark_servers.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tools/lib/subprocess.h"

namespace tpu::driver {
namespace {

// Starts a server child with its files in `dir`; returns its "host:port"
// (and its pid in `pid`, if not null). It is kept (and killed with this
// process) until the process exits.
absl::StatusOr<std::string> StartChild(std::vector<std::string> argv,
                                       const std::string& dir,
                                       const std::string& name,
                                       int* pid = nullptr) {
  static auto* children =
      new std::vector<std::unique_ptr<tools::ServerProcess>>();
  absl::StatusOr<std::unique_ptr<tools::ServerProcess>> child =
      tools::ServerProcess::Start(std::move(argv), dir, name,
                                  absl::Seconds(30));
  if (!child.ok()) return child.status();
  children->push_back(*std::move(child));
  if (pid != nullptr) *pid = children->back()->process().pid();
  return children->back()->address();
}

}  // namespace

absl::StatusOr<BenchmarkTargets> StartBenchmarkServers(
    int* argc, char** argv, const BenchmarkTopology& topology) {
  std::string external;
  std::string external_unix;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    if (absl::StartsWith(argv[i], "--grpc_target=")) {
      external = argv[i] + std::strlen("--grpc_target=");
    } else if (absl::StartsWith(argv[i], "--unix_target=")) {
      external_unix = argv[i] + std::strlen("--unix_target=");
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;

  BenchmarkTargets targets;
  targets.local =
      absl::StrCat("local://?chips=", topology.chips,
                   "&cores_per_chip=", topology.cores_per_chip,
                   "&hbm_bytes_per_core=", topology.hbm_bytes_per_core);
  // The children's port files and output.
  char dir[] = "/tmp/driver_benchmark.XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    return absl::InternalError("cannot create a temporary directory");
  }
  if (!external.empty()) {
    targets.worker = external;
    targets.unix_worker = external_unix;
  } else {
    const std::string socket = absl::StrCat(dir, "/tpu.sock");
    absl::StatusOr<std::string> emulator = StartChild(
        {tools::RunfilePath("tools/tpu_emulator/tpu_emulator", argv[0]),
         "--port=0", absl::StrCat("--unix_socket=", socket),
         absl::StrCat("--chips=", topology.chips),
         absl::StrCat("--cores_per_chip=", topology.cores_per_chip),
         absl::StrCat("--hbm_bytes_per_core=", topology.hbm_bytes_per_core)},
        dir, "tpu_emulator", &targets.worker_pid);
    if (!emulator.ok()) return emulator.status();
    targets.worker = absl::StrCat("grpc://", *emulator);
    targets.unix_worker = absl::StrCat("grpc://unix:", socket);
  }
  const std::string ack_socket = absl::StrCat(dir, "/ack.sock");
  absl::StatusOr<std::string> ack =
      StartChild({tools::RunfilePath("driver/ack_server", argv[0]),
                  absl::StrCat("--unix_socket=", ack_socket)},
                 dir, "ack_server");
  if (!ack.ok()) return ack.status();
  targets.ack_server = *ack;
  targets.ack_server_unix = absl::StrCat("unix:", ack_socket);
  return targets;
}

}  // namespace tpu::driver
