#ifndef SOFTWARE_TPU_PROTO_CONTROL_CALL_H_
#define SOFTWARE_TPU_PROTO_CONTROL_CALL_H_

// One call into a worker's control service (proto/control.proto) by method
// name, with the request and the response as JSON (the proto3 JSON mapping
// with the proto's own field names). Language bindings use it so that every
// RPC the service gains is callable without new binding code.
//
// Thread safety: thread-compatible; each call opens its own channel.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace tpu::wire {

// Calls tpu_emulator.Control/`method` on the worker at `target`
// ("HOST:PORT", "grpc://HOST:PORT" or "grpc://unix:PATH") with
// `request_json` ("" or "{}" for an empty request) and returns the response
// as JSON. Errors: INVALID_ARGUMENT for an unknown method, a target of
// another scheme or a request that does not parse; the worker's own status
// otherwise (UNAVAILABLE naming the target when nothing answers).
absl::StatusOr<std::string> CallControl(absl::string_view target,
                                        absl::string_view method,
                                        absl::string_view request_json,
                                        absl::Duration timeout);

// The wait report in `report_json` (a GetWaitReport response) as the text
// tpu_ctl prints.
absl::StatusOr<std::string> FormatWaitReportJson(absl::string_view report_json);

}  // namespace tpu::wire

#endif  // SOFTWARE_TPU_PROTO_CONTROL_CALL_H_
