// _softtpu: the C++ TpuClient for Python. The softtpu package wraps it; see
// python/README.md for the surface, which mirrors TensorFlow's
// tpu_client_extension so scripts need only their import changed.

#include <string>

#include "absl/synchronization/mutex.h"
#include "hlo/text/hlo_parser.h"
#include "proto/hlo.pb.h"
#include "pybind11/pybind11.h"
#include "python/extension/bindings.h"
#include "python/extension/numpy_conversion.h"
#include "python/extension/status.h"

PYBIND11_MODULE(_softtpu, m) {
  namespace py = pybind11;
  m.doc() =
      "softtpu's compiled core: TpuClient, TpuDevice, TpuBuffer, "
      "TpuExecutable over the software TPU's C++ client.";
  // Debian's absl is built with its debug checks: every lock would also
  // update a process-wide lock-order graph, which users' runs need not pay.
  // softtpu/__init__.py imports softtpu.errors before this module.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  tpu::python::RegisterStatusTranslator(
      py::module_::import("softtpu.errors").attr("TpuError"));
  m.attr("bfloat16") = tpu::python::BFloat16Dtype();
  tpu::python::DefineDevice(m);
  tpu::python::DefineBuffer(m);
  tpu::python::DefineExecutable(m);
  tpu::python::DefineClient(m);
  tpu::python::DefineControl(m);
  tpu::python::DefineBenchmarkHooks(m);
  // Tests need serialized protos and Debian's Python has no XLA to make them.
  m.def(
      "_hlo_text_to_proto_for_testing",
      [](const std::string& text, bool wrap_in_hlo_proto) {
        xla::HloModuleProto module =
            tpu::python::ValueOrThrow(tpu::hlo::ParseHloModule(text));
        if (!wrap_in_hlo_proto) return py::bytes(module.SerializeAsString());
        xla::HloProto hlo;
        *hlo.mutable_hlo_module() = std::move(module);
        return py::bytes(hlo.SerializeAsString());
      },
      py::arg("text"), py::arg("wrap_in_hlo_proto") = false);
}
