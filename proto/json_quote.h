#ifndef SOFTWARE_TPU_PROTO_JSON_QUOTE_H_
#define SOFTWARE_TPU_PROTO_JSON_QUOTE_H_

// A string as a JSON string literal, for the hand-written JSON the control
// service's readers print (wait reports, traces, requests).

#include <string>

#include "absl/strings/string_view.h"

namespace tpu::wire {

// `s` in double quotes with ", \ and control characters escaped.
std::string JsonQuote(absl::string_view s);

}  // namespace tpu::wire

#endif  // SOFTWARE_TPU_PROTO_JSON_QUOTE_H_
