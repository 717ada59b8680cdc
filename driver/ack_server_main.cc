// A bare gRPC server for driver_benchmark's baseline: StreamExecute answers
// every message with one byte (driver/transfer_baselines.h). Runs as its own
// process so that, like tpu_emulator, it shares no gRPC threads with the
// client measuring it.
//
//   ack_server --port_file=PATH [--unix_socket=PATH]
//   # writes the port, serves (also on the socket) until SIGTERM

#include <signal.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "driver/transfer_baselines.h"
#include "hlo/host_memory.h"

int main(int argc, char** argv) {
  std::string port_file;
  std::string unix_socket;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--port_file=", 12) == 0) {
      port_file = argv[i] + 12;
    } else if (std::strncmp(argv[i], "--unix_socket=", 14) == 0) {
      unix_socket = argv[i] + 14;
    } else {
      std::fprintf(stderr,
                   "usage: ack_server --port_file=PATH [--unix_socket=PATH]\n");
      return 2;
    }
  }
  tpu::ConfigureHostMemoryForLargeBuffers();  // as tpu_emulator
  // Blocked before any gRPC thread starts, so only sigwait sees them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  int port = 0;
  std::unique_ptr<grpc::Server> server =
      tpu::driver::StartAckServer(&port, unix_socket);
  if (server == nullptr) {
    std::fprintf(stderr, "ack_server: cannot listen on 127.0.0.1\n");
    return 1;
  }
  if (!port_file.empty()) {
    std::ofstream(port_file + ".tmp") << port << "\n";
    std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  }
  int signal = 0;
  sigwait(&stop, &signal);
  server->Shutdown();
  return 0;
}
