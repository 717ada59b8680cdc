#include "driver/address_query.h"

#include "absl/strings/str_split.h"

namespace tpu::driver {

AddressQuery SplitAddressQuery(absl::string_view address) {
  AddressQuery query;
  const size_t mark = address.find('?');
  query.base = address.substr(0, mark);
  if (mark == absl::string_view::npos) return query;
  for (absl::string_view param :
       absl::StrSplit(address.substr(mark + 1), '&', absl::SkipEmpty())) {
    query.params.push_back(absl::StrSplit(param, absl::MaxSplits('=', 1)));
  }
  return query;
}

}  // namespace tpu::driver
