#include "driver/grpc/grpc_address.h"

#include <map>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "driver/address_query.h"

namespace tpu::driver {
namespace {

constexpr char kPlainScheme[] = "grpc://";
constexpr char kTlsScheme[] = "grpcs://";

absl::Status Invalid(absl::string_view address, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("TPU worker address \"", address, "\": ", why));
}

}  // namespace

absl::StatusOr<GrpcAddress> ParseGrpcAddress(absl::string_view address) {
  const AddressQuery query = SplitAddressQuery(address);
  GrpcAddress parsed;
  absl::string_view target = query.base;
  if (absl::ConsumePrefix(&target, kTlsScheme)) {
    parsed.tls = true;
  } else if (!absl::ConsumePrefix(&target, kPlainScheme)) {
    return Invalid(address,
                   "expected grpc://host:port, grpc://unix:PATH or "
                   "grpcs://host:port");
  }
  if (target.empty()) {
    return Invalid(address,
                   absl::StrCat("no host:port after ",
                                parsed.tls ? kTlsScheme : kPlainScheme));
  }
  parsed.target = std::string(target);
  if (!parsed.tls && !query.params.empty()) {
    return Invalid(address,
                   "grpc:// takes no parameters; TLS options (ca=, cert=, "
                   "key=, server_name=) go with grpcs://");
  }
  const std::map<absl::string_view, std::string*> fields = {
      {"ca", &parsed.ca_path},
      {"cert", &parsed.cert_path},
      {"key", &parsed.key_path},
      {"server_name", &parsed.server_name}};
  for (const auto& [name, value] : query.params) {
    auto field = fields.find(name);
    if (field == fields.end()) {
      return Invalid(address, absl::StrCat("unknown parameter \"", name,
                                           "\"; known: ca, cert, key, "
                                           "server_name"));
    }
    if (value.empty() || !field->second->empty()) {
      return Invalid(address, absl::StrCat("parameter ", name,
                                           " must be given once, with a "
                                           "value"));
    }
    *field->second = std::string(value);
  }
  if (parsed.cert_path.empty() != parsed.key_path.empty()) {
    return Invalid(address,
                   "a client certificate (cert=) needs its private key (key=) "
                   "and the reverse");
  }
  return parsed;
}

}  // namespace tpu::driver
