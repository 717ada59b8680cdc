#include "emulator/service/server_security.h"

#include <arpa/inet.h>

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "proto/pem_file.h"

namespace tpu::emulator {

bool IsLoopbackHost(absl::string_view host) {
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  std::string literal(host);
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    literal = std::string(host.substr(1, host.size() - 2));
  }
  in_addr v4;
  if (inet_pton(AF_INET, literal.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, literal.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TcpPortCredentials(
    const std::string& bind, const TlsOptions& tls,
    bool allow_insecure_remote) {
  if (tls.cert_path.empty() != tls.key_path.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both a certificate (--tls_cert) and its private key "
        "(--tls_key); only one was given.");
  }
  if (!tls.client_ca_path.empty() && tls.cert_path.empty()) {
    return absl::InvalidArgumentError(
        "Client CAs (--tls_client_ca) verify clients over TLS, which needs "
        "the worker's own certificate and key (--tls_cert, --tls_key).");
  }
  if (tls.cert_path.empty()) {
    if (!IsLoopbackHost(bind) && !allow_insecure_remote) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Refusing to serve plaintext on ", bind,
          ", which other machines may reach: anyone who can connect could "
          "run programs and read every client's device memory. Serve TLS "
          "(--tls_cert, --tls_key), bind loopback (--bind=127.0.0.1), or pass "
          "--allow_insecure_remote on a network you trust."));
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  absl::StatusOr<std::string> cert =
      ReadPemFile(tls.cert_path, "the TLS certificate (--tls_cert)");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key =
      ReadPemFile(tls.key_path, "the TLS private key (--tls_key)");
  if (!key.ok()) return key.status();
  pair.cert_chain = *std::move(cert);
  pair.private_key = *std::move(key);
  options.pem_key_cert_pairs.push_back(std::move(pair));
  if (!tls.client_ca_path.empty()) {
    absl::StatusOr<std::string> client_ca =
        ReadPemFile(tls.client_ca_path, "the client CAs (--tls_client_ca)");
    if (!client_ca.ok()) return client_ca.status();
    options.pem_root_certs = *std::move(client_ca);
    options.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace tpu::emulator
