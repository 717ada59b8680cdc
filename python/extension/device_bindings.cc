// TpuDevice: one core, as the reference extension shows it.

#include "absl/strings/str_format.h"
#include "client/tpu_device.h"
#include "pybind11/pybind11.h"
#include "python/extension/bindings.h"

namespace tpu::python {
namespace py = pybind11;
using client::TpuDevice;

void DefineDevice(py::module_& m) {
  py::class_<TpuDevice, std::shared_ptr<TpuDevice>>(m, "TpuDevice")
      .def_property_readonly("id", &TpuDevice::id)
      .def_property_readonly("process_index", &TpuDevice::host_id)
      .def_property_readonly("host_id", &TpuDevice::host_id)
      .def_property_readonly("task_id", &TpuDevice::host_id)
      .def_property_readonly("coords",
                             [](const TpuDevice& d) {
                               return py::make_tuple(
                                   d.coords()[0], d.coords()[1], d.coords()[2]);
                             })
      .def_property_readonly("core_on_chip", &TpuDevice::core_on_chip)
      .def_property_readonly("platform", [](const TpuDevice&) { return "tpu"; })
      .def_property_readonly(
          "device_kind",
          [](const TpuDevice& d) { return std::string(d.device_kind()); })
      .def("__str__", &TpuDevice::ToString)
      .def("__repr__", [](const TpuDevice& d) {
        return absl::StrFormat(
            "TpuDevice(id=%i, process_index=%i, coords=(%i,%i,%i), "
            "core_on_chip=%i)",
            d.id(), d.host_id(), d.coords()[0], d.coords()[1], d.coords()[2],
            d.core_on_chip());
      });
}

}  // namespace tpu::python
