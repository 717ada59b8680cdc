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

// Starts a server child with its files in `dir`; returns its "host:port".
// It is kept (and killed with this process) until the process exits.
absl::StatusOr<std::string> StartChild(std::vector<std::string> argv,
                                       const std::string& dir,
                                       const std::string& name) {
  static auto* children =
      new std::vector<std::unique_ptr<tools::ServerProcess>>();
  absl::StatusOr<std::unique_ptr<tools::ServerProcess>> child =
      tools::ServerProcess::Start(std::move(argv), dir, name,
                                  absl::Seconds(30));
  if (!child.ok()) return child.status();
  children->push_back(*std::move(child));
  return children->back()->address();
}

}  // namespace

absl::StatusOr<BenchmarkTargets> StartBenchmarkServers(
    int* argc, char** argv, const BenchmarkTopology& topology) {
  std::string external;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    if (absl::StartsWith(argv[i], "--grpc_target=")) {
      external = argv[i] + std::strlen("--grpc_target=");
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
  } else {
    absl::StatusOr<std::string> emulator = StartChild(
        {tools::RunfilePath("tools/tpu_emulator/tpu_emulator", argv[0]),
         "--port=0", absl::StrCat("--chips=", topology.chips),
         absl::StrCat("--cores_per_chip=", topology.cores_per_chip),
         absl::StrCat("--hbm_bytes_per_core=", topology.hbm_bytes_per_core)},
        dir, "tpu_emulator");
    if (!emulator.ok()) return emulator.status();
    targets.worker = absl::StrCat("grpc://", *emulator);
  }
  absl::StatusOr<std::string> ack = StartChild(
      {tools::RunfilePath("driver/ack_server", argv[0])}, dir, "ack_server");
  if (!ack.ok()) return ack.status();
  targets.ack_server = *ack;
  return targets;
}

}  // namespace tpu::driver
