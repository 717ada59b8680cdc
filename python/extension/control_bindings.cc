// softtpu.control's transport: one generic call into the worker's control
// service. Requests and responses cross as JSON, so each RPC that
// proto/control.proto gains is reachable from softtpu/control.py without
// new code here.

#include <string>

#include "absl/time/time.h"
#include "proto/control_call.h"
#include "pybind11/pybind11.h"
#include "python/extension/bindings.h"
#include "python/extension/gil.h"
#include "python/extension/status.h"

namespace tpu::python {

void DefineControl(pybind11::module_& m) {
  namespace py = pybind11;
  m.def(
      "_control_call",
      [](const std::string& target, const std::string& method,
         const std::string& request_json, double timeout_seconds) {
        if (!(timeout_seconds > 0)) {
          ThrowError(absl::InvalidArgumentError(
              "the control timeout must be a positive number of seconds"));
        }
        return ValueOrThrow(CallWithoutGil([&] {
          return wire::CallControl(target, method, request_json,
                                   absl::Seconds(timeout_seconds));
        }));
      },
      py::arg("target"), py::arg("method"), py::arg("request_json"),
      py::arg("timeout_seconds"),
      "Calls tpu_emulator.Control/<method>; JSON in, JSON out.");
  m.def(
      "_format_wait_report",
      [](const std::string& report_json) {
        return ValueOrThrow(wire::FormatWaitReportJson(report_json));
      },
      py::arg("report_json"),
      "A GetWaitReport response (JSON) as the text tpu_ctl prints.");
}

}  // namespace tpu::python
