#ifndef SOFTWARE_TPU_EMULATOR_SERVER_H_
#define SOFTWARE_TPU_EMULATOR_SERVER_H_

// A running emulator: a Worker served over gRPC on one address. Used by the
// tpu_emulator binary and by tests that want a real server in-process.
//
// gRPC settings a real TPU client relies on:
// - message size limits lifted to INT_MAX both ways (the client sends 64 MiB
//   transfers as single messages);
// - client keepalive pings accepted every second even without calls or data
//   (the client pings every 1.5 s; gRPC's defaults answer "too many pings"
//   and drop the connection);
// - plain TCP on loopback by default. A client using local credentials
//   (LOCAL_TCP, what the real client picks for localhost) talks to this port
//   too: local credentials do no handshake on the wire, they only check that
//   the peer is on loopback, so an insecure port serves both
//   (tests/protocol/credentials_test.cc proves it). Any other bind address
//   needs TLS or allow_insecure_remote (server_security.h).
// - SO_REUSEPORT off, so a port already in use is an error, not a second
//   server silently sharing it.
//
// Thread safety: safe for concurrent use.

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "emulator/service/server_security.h"
#include "emulator/worker/worker.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace tpu::emulator {

class CloudTpuDriverService;
class ControlService;
class PeerService;

struct ServerOptions {
  // Address to listen on: an IPv4/IPv6 literal or a host name.
  std::string bind = "127.0.0.1";
  // 0 picks a free port (see Server::port()).
  int port = 8470;
  // TLS for the port; without it a non-loopback `bind` is refused unless
  // allow_insecure_remote is set.
  TlsOptions tls;
  bool allow_insecure_remote = false;
  // If set, also listen on this Unix domain socket (plaintext; the same
  // protocol; clients dial grpc://unix:PATH). See unix_socket.h.
  std::string unix_socket;
  // Pod-slice mode: "host:port" of every host of the slice, indexed by host
  // id (this worker's own entry included), for collectives across workers.
  // Empty: collectives stay within this worker.
  std::vector<std::string> pod_addresses;
  // If set, record every client's session in this existing directory
  // (session_recorder.h).
  std::string record_dir;
  WorkerOptions worker;
};

class Server {
 public:
  // INVALID_ARGUMENT for bad options (including plaintext on a non-loopback
  // address, see TcpPortCredentials, and unusable socket paths, see
  // CheckUnixSocketPath), NOT_FOUND for a TLS file that is missing,
  // UNAVAILABLE if the address or socket cannot be listened on (e.g. the
  // port is in use); INVALID_ARGUMENT for a record_dir that is not a
  // writable directory.
  static absl::StatusOr<std::unique_ptr<Server>> Start(
      const ServerOptions& options);
  // Shuts down (if not yet) and releases everything.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port actually listened on.
  int port() const { return port_; }
  // "HOST:PORT" as clients dial it ("[::1]:8470" for IPv6).
  std::string address() const;
  // The Unix socket path also listened on; empty if none.
  const std::string& unix_socket() const { return unix_socket_; }
  Worker* worker() const { return worker_.get(); }

  // Stops accepting calls; calls still open after `grace` are cancelled
  // (their clients are released and their programs stopped). Idempotent.
  void Shutdown(absl::Duration grace = absl::Milliseconds(500));

 private:
  Server() = default;

  std::string bind_;
  int port_ = 0;
  std::string unix_socket_;
  // Destroyed in reverse: the gRPC server first, then the service it
  // dispatches to, then the worker.
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<CloudTpuDriverService> service_;
  std::unique_ptr<ControlService> control_;
  std::unique_ptr<PeerService> peer_;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

// "host:port", bracketing IPv6 literals.
std::string JoinHostPort(const std::string& host, int port);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SERVER_H_
