#ifndef SOFTWARE_TPU_DRIVER_ADDRESS_QUERY_H_
#define SOFTWARE_TPU_DRIVER_ADDRESS_QUERY_H_

// Driver options ride in the address, as URI query parameters
// ("local://?chips=2&cores_per_chip=1", "grpcs://h:1?ca=/etc/ca.pem"), so an
// address alone says how to reach a system, wherever addresses are passed
// (TpuClient::Get, tpu_run --target, grpc+pod:// lists). Values are taken
// literally: no %-decoding.
//
// Thread safety: pure functions. Results view into the address.

#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace tpu::driver {

struct AddressQuery {
  // Everything before the first '?'.
  absl::string_view base;
  // name=value pairs after it, in order; a pair without '=' has an empty
  // value, and empty pairs ("a=1&&b=2") are skipped.
  std::vector<std::pair<absl::string_view, absl::string_view>> params;
};

AddressQuery SplitAddressQuery(absl::string_view address);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_ADDRESS_QUERY_H_
