#ifndef SOFTWARE_TPU_EMULATOR_SERVICE_SERVER_SECURITY_H_
#define SOFTWARE_TPU_EMULATOR_SERVICE_SERVER_SECURITY_H_

// Who may reach the worker. Anyone who can open its TCP port can run
// programs and read every client's device memory, so plaintext is served
// only on loopback unless the operator says otherwise: another address needs
// TLS (a certificate and key, and optionally client CAs for mutual TLS) or an
// explicit allow_insecure_remote.
//
// Thread safety: pure functions (they read the PEM files named).

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/server_credentials.h"

namespace tpu::emulator {

// TLS for the worker's TCP port, as PEM files. Empty cert_path: plaintext.
struct TlsOptions {
  // The certificate chain the worker presents, and its private key.
  std::string cert_path;
  std::string key_path;
  // If set, clients must present a certificate signed by one of these CAs
  // (mutual TLS); otherwise any client may connect.
  std::string client_ca_path;
};

// True if `host` (a bind address) is reachable only from this machine:
// 127.0.0.0/8, ::1 (bracketed or not), ::ffff:127.x.y.z or "localhost". Any
// other name counts as remote, since it may resolve to any address.
bool IsLoopbackHost(absl::string_view host);

// The credentials of the TCP port bound to `bind`: TLS when tls.cert_path is
// set, else plaintext. Errors: INVALID_ARGUMENT for plaintext on a
// non-loopback address without allow_insecure_remote (the message says what
// to do), for a certificate without its key (or the reverse), client CAs
// without a certificate, or a file that is not PEM; NOT_FOUND (or another
// code from the OS) for a file that cannot be read. Messages name the file.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TcpPortCredentials(
    const std::string& bind, const TlsOptions& tls, bool allow_insecure_remote);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SERVICE_SERVER_SECURITY_H_
