#include "driver/grpc/grpc_credentials.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "proto/pem_file.h"

namespace tpu::driver {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFor(
    const GrpcAddress& address) {
  if (!address.tls) {
    if (absl::StartsWith(address.target, "localhost")) {
      return grpc::experimental::LocalCredentials(LOCAL_TCP);
    }
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions options;
  const struct {
    const std::string& path;
    const char* what;
    std::string* pem;
  } files[] = {
      {address.ca_path, "the worker's CA certificates (ca=)",
       &options.pem_root_certs},
      {address.cert_path, "the client certificate (cert=)",
       &options.pem_cert_chain},
      {address.key_path, "the client private key (key=)",
       &options.pem_private_key},
  };
  for (const auto& file : files) {
    if (file.path.empty()) continue;  // gRPC's default: system roots, no cert
    absl::StatusOr<std::string> pem = ReadPemFile(file.path, file.what);
    if (!pem.ok()) return pem.status();
    *file.pem = *std::move(pem);
  }
  return grpc::SslCredentials(options);
}

}  // namespace tpu::driver
