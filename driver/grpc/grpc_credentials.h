#ifndef SOFTWARE_TPU_DRIVER_GRPC_GRPC_CREDENTIALS_H_
#define SOFTWARE_TPU_DRIVER_GRPC_GRPC_CREDENTIALS_H_

// The channel credentials for a worker address (grpc_address.h):
//  - grpc://localhost...: local credentials (LOCAL_TCP), as the reference
//    client; they interoperate with plaintext servers (no handshake);
//  - other grpc:// addresses, Unix sockets included: plaintext;
//  - grpcs://: TLS with the ca=, cert= and key= files, read now so that a
//    missing file is reported at once rather than as a failed handshake.
//
// Thread safety: reentrant.

#include <memory>

#include "absl/status/statusor.h"
#include "driver/grpc/grpc_address.h"
#include "grpcpp/security/credentials.h"

namespace tpu::driver {

// Errors: those of ReadPemFile (proto/pem_file.h), naming the parameter.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFor(
    const GrpcAddress& address);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_GRPC_GRPC_CREDENTIALS_H_
