#ifndef SOFTWARE_TPU_DRIVER_GRPC_GRPC_ADDRESS_H_
#define SOFTWARE_TPU_DRIVER_GRPC_GRPC_ADDRESS_H_

// The addresses the grpc:// driver dials:
//
//   grpc://HOST:PORT            plaintext TCP (local credentials for
//                               "localhost", as the reference client)
//   grpc://unix:PATH            plaintext over a Unix domain socket
//                               (gRPC's own form; unix:///abs/path also works)
//   grpcs://HOST:PORT[?PARAMS]  TLS; PARAMS, joined by '&':
//       ca=PEM           CAs that signed the worker's certificate (default:
//                        the system's roots)
//       cert=PEM&key=PEM this client's certificate chain and key, for a
//                        worker that requires them (mutual TLS)
//       server_name=NAME the name the worker's certificate must carry, when
//                        it is not HOST (e.g. dialing an IP address)
//
// Paths are taken literally (no %-decoding), so they cannot contain '&';
// in a grpc+pod:// list they cannot contain ',' either.
//
// Thread safety: pure functions.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tpu::driver {

struct GrpcAddress {
  // What gRPC dials: "host:port" or "unix:PATH".
  std::string target;
  // grpcs://: TLS, with the files below (empty: not given).
  bool tls = false;
  std::string ca_path;
  std::string cert_path;
  std::string key_path;
  std::string server_name;
};

// INVALID_ARGUMENT, naming the address, for another scheme, an empty target,
// parameters on grpc://, an unknown or repeated parameter, or a cert
// without its key (or the reverse).
absl::StatusOr<GrpcAddress> ParseGrpcAddress(absl::string_view address);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_GRPC_GRPC_ADDRESS_H_
