#include "emulator/service/server.h"

#include <climits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "emulator/service/control_service.h"
#include "emulator/service/grpc_peer_link.h"
#include "emulator/service/peer_service.h"
#include "emulator/service/service.h"
#include "emulator/service/unix_socket.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/server_credentials.h"

namespace tpu::emulator {

std::string JoinHostPort(const std::string& host, int port) {
  if (absl::StrContains(host, ":") && !absl::StartsWith(host, "[")) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(
    const ServerOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Invalid port ", options.port, ": use 0 (pick a free one) to 65535."));
  }
  if (options.bind.empty()) {
    return absl::InvalidArgumentError("The bind address is empty.");
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      TcpPortCredentials(options.bind, options.tls,
                         options.allow_insecure_remote);
  if (!credentials.ok()) return credentials.status();
  if (!options.unix_socket.empty()) {
    absl::Status usable = CheckUnixSocketPath(options.unix_socket);
    if (!usable.ok()) return usable;
  }
  WorkerOptions worker_options = options.worker;
  if (!options.pod_addresses.empty()) {
    if (static_cast<int>(options.pod_addresses.size()) !=
        options.worker.pod_hosts) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--pod_addresses lists ", options.pod_addresses.size(),
          " workers but --pod_hosts=", options.worker.pod_hosts,
          ": list host:port of every host of the slice, in host id order"));
    }
    absl::StatusOr<std::shared_ptr<GrpcPeerLink>> peers =
        GrpcPeerLink::Create(options.pod_addresses, options.worker.host_id);
    if (!peers.ok()) return peers.status();
    worker_options.peers = *std::move(peers);
  }
  std::shared_ptr<RecordDirectory> record_dir;
  if (!options.record_dir.empty()) {
    absl::StatusOr<std::shared_ptr<RecordDirectory>> opened =
        RecordDirectory::Open(options.record_dir);
    if (!opened.ok()) return opened.status();
    record_dir = *std::move(opened);
  }
  absl::StatusOr<std::unique_ptr<Worker>> worker =
      Worker::Create(worker_options);
  if (!worker.ok()) return worker.status();

  std::unique_ptr<Server> server(new Server());
  server->bind_ = options.bind;
  server->worker_ = *std::move(worker);
  server->service_ = std::make_unique<CloudTpuDriverService>(
      server->worker_.get(), std::move(record_dir));
  server->control_ = std::make_unique<ControlService>(
      server->worker_.get(), options.pod_addresses, options.worker.host_id);
  server->peer_ = std::make_unique<PeerService>(
      &server->worker_->collective_hub(), options.worker.host_id);

  grpc::ServerBuilder builder;
  const std::string address = JoinHostPort(options.bind, options.port);
  int selected_port = 0;
  builder.AddListeningPort(address, *credentials, &selected_port);
  int unix_selected = 0;
  if (!options.unix_socket.empty()) {
    // Plaintext: only processes of this machine allowed to write the socket
    // file can connect (unix_socket.h).
    builder.AddListeningPort(absl::StrCat("unix:", options.unix_socket),
                             grpc::InsecureServerCredentials(), &unix_selected);
  }
  builder.RegisterService(server->service_.get());
  builder.RegisterService(server->control_.get());
  builder.RegisterService(server->peer_.get());
  builder.SetMaxReceiveMessageSize(INT_MAX);
  builder.SetMaxSendMessageSize(INT_MAX);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server->server_ = builder.BuildAndStart();
  if (!options.unix_socket.empty() && selected_port != 0 &&
      unix_selected == 0) {
    return absl::UnavailableError(
        absl::StrCat("Cannot listen on Unix socket \"", options.unix_socket,
                     "\": check that its directory exists and is writable."));
  }
  if (server->server_ == nullptr || selected_port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "Cannot listen on ", address,
        ": the address is not local or the port is in use",
        options.tls.cert_path.empty()
            ? ""
            : ", or the TLS certificate and key do not match",
        ". Pick another --bind/--port (--port=0 picks a free port)."));
  }
  server->port_ = selected_port;
  server->unix_socket_ = options.unix_socket;
  return server;
}

std::string Server::address() const { return JoinHostPort(bind_, port_); }

void Server::Shutdown(absl::Duration grace) {
  // Held throughout: a concurrent caller returns once shutdown is complete.
  absl::MutexLock lock(&shutdown_mu_);
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
}

Server::~Server() {
  Shutdown();
  server_.reset();
  service_.reset();
  control_.reset();
  peer_.reset();
  worker_.reset();
}

}  // namespace tpu::emulator
