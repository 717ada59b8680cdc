// TpuExecutable: a compiled program. Executions wait with the GIL released
// and can be interrupted with Ctrl-C (gil.h).

#include <memory>
#include <vector>

#include "client/tpu_executable.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"
#include "python/extension/bindings.h"
#include "python/extension/deferred_release.h"
#include "python/extension/gil.h"
#include "python/extension/status.h"

namespace tpu::python {
namespace py = pybind11;
using client::TpuBuffer;
using client::TpuExecutable;

namespace {

std::vector<std::unique_ptr<TpuBuffer>> Execute(
    TpuExecutable& executable, const std::vector<TpuBuffer*>& arguments) {
  return ValueOrThrow(
      CallWithoutGil([&] { return executable.Execute(arguments); }));
}

std::vector<std::vector<std::unique_ptr<TpuBuffer>>> ExecuteOnLocalDevices(
    TpuExecutable& executable,
    const std::vector<std::vector<TpuBuffer*>>& arguments) {
  CollectReleased();
  return ValueOrThrow(
      CallWithoutGil([&] { return executable.ExecutePerReplica(arguments); }));
}

void Delete(TpuExecutable& executable) {
  CallWithoutGil([&executable] { executable.Delete(); });
}

}  // namespace

void DefineExecutable(py::module_& m) {
  py::class_<TpuExecutable>(m, "TpuExecutable")
      .def_property_readonly("client", &TpuExecutable::client)
      .def_property_readonly("num_replicas", &TpuExecutable::num_replicas)
      .def("local_devices", &TpuExecutable::local_devices)
      .def("execute", &Execute, py::arg("arguments"),
           "Runs the single replica; returns one buffer per result tuple "
           "element (or the one result).")
      .def("Execute", &Execute, py::arg("arguments"))
      .def("execute_on_local_devices", &ExecuteOnLocalDevices,
           py::arg("arguments"),
           "Runs every local replica, replica i with arguments[i]; returns "
           "the results per replica.")
      .def("ExecuteOnLocalDevices", &ExecuteOnLocalDevices,
           py::arg("arguments"))
      .def("delete", &Delete)
      .def("Delete", &Delete);
}

}  // namespace tpu::python
