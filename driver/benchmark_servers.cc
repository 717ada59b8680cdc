#include "driver/benchmark_servers.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "driver/transfer_baselines.h"
#include "emulator/service/server.h"
#include "tests/e2e/subprocess.h"

namespace tpu::driver {
namespace {

// A binary of this build, found through the runfiles tree.
std::string Runfile(const char* argv0, const std::string& path) {
  const char* dir = std::getenv("RUNFILES_DIR");
  const std::string root =
      dir != nullptr ? dir : absl::StrCat(argv0, ".runfiles");
  return absl::StrCat(root, "/software_tpu/", path);
}

// Starts `argv` with --port_file and waits (bounded) for the port.
absl::StatusOr<int> StartChild(std::vector<std::string> argv) {
  static auto* children = new std::vector<std::unique_ptr<e2e::Subprocess>>();
  char dir_template[] = "/tmp/driver_benchmark.XXXXXX";
  if (mkdtemp(dir_template) == nullptr) {
    return absl::InternalError("cannot create a temporary directory");
  }
  const std::string dir = dir_template;
  const std::string port_file = dir + "/port";
  argv.push_back("--port_file=" + port_file);
  absl::StatusOr<std::unique_ptr<e2e::Subprocess>> child =
      e2e::Subprocess::Start(argv, dir + "/out", dir + "/err");
  if (!child.ok()) return child.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    int port = 0;
    const std::string text(
        absl::StripAsciiWhitespace(e2e::ReadFileOrEmpty(port_file)));
    if (absl::SimpleAtoi(text, &port) && port > 0) {
      children->push_back(*std::move(child));
      return port;
    }
    if ((*child)->Wait(absl::Milliseconds(20)).ok()) {
      return absl::UnavailableError(absl::StrCat(
          argv[0], " exited: ", e2e::ReadFileOrEmpty(dir + "/err")));
    }
  }
  return absl::DeadlineExceededError(
      absl::StrCat(argv[0], " wrote no port file within 30 s"));
}

}  // namespace

absl::StatusOr<BenchmarkTargets> StartBenchmarkServers(
    int* argc, char** argv, const emulator::WorkerOptions& worker) {
  bool in_process = false;
  std::string external;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    if (std::strcmp(argv[i], "--in_process_servers") == 0) {
      in_process = true;
    } else if (absl::StartsWith(argv[i], "--grpc_target=")) {
      external = argv[i] + std::strlen("--grpc_target=");
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;

  BenchmarkTargets targets;
  if (in_process) {
    emulator::ServerOptions options;
    options.port = 0;
    options.worker = worker;
    absl::StatusOr<std::unique_ptr<emulator::Server>> server =
        emulator::Server::Start(options);
    if (!server.ok()) return server.status();
    targets.worker = absl::StrCat("grpc://", (*server)->address());
    server->release();  // Serves until the process exits.
    int port = 0;
    std::unique_ptr<grpc::Server> ack = StartAckServer(&port);
    if (ack == nullptr) return absl::UnavailableError("ack server failed");
    targets.ack_server = absl::StrCat("127.0.0.1:", port);
    ack.release();
    return targets;
  }
  if (!external.empty()) {
    targets.worker = external;
  } else {
    absl::StatusOr<int> port = StartChild(
        {Runfile(argv[0], "tools/tpu_emulator/tpu_emulator"), "--port=0",
         absl::StrCat("--chips=", worker.chips),
         absl::StrCat("--cores_per_chip=", worker.cores_per_chip),
         absl::StrCat("--hbm_bytes_per_core=", worker.hbm_bytes_per_core)});
    if (!port.ok()) return port.status();
    targets.worker = absl::StrCat("grpc://127.0.0.1:", *port);
  }
  absl::StatusOr<int> ack_port =
      StartChild({Runfile(argv[0], "driver/ack_server")});
  if (!ack_port.ok()) return ack_port.status();
  targets.ack_server = absl::StrCat("127.0.0.1:", *ack_port);
  return targets;
}

}  // namespace tpu::driver
