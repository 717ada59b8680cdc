// TpuBuffer: a value on one device. Reads come back as numpy arrays that
// view the host copy (see numpy_conversion.h).

#include <memory>

#include "client/tpu_buffer.h"
#include "pybind11/pybind11.h"
#include "python/extension/bindings.h"
#include "python/extension/deferred_release.h"
#include "python/extension/gil.h"
#include "python/extension/numpy_conversion.h"
#include "python/extension/status.h"

namespace tpu::python {
namespace py = pybind11;
using client::TpuBuffer;
using client::TpuDevice;

void DefineBuffer(py::module_& m) {
  py::class_<TpuBuffer>(m, "TpuBuffer")
      .def_property_readonly("client", &TpuBuffer::client)
      .def_property_readonly(
          "shape",
          [](const TpuBuffer& b) { return DimensionsTree(b.on_host_shape()); },
          "Dimensions as a tuple; for a tuple buffer, a tuple of its "
          "elements' shapes.")
      .def_property_readonly(
          "dtype",
          [](const TpuBuffer& b) { return DtypeTree(b.on_host_shape()); },
          "The numpy dtype (softtpu.bfloat16 for bf16); for a tuple "
          "buffer, a tuple of its elements' dtypes.")
      .def("xla_shape",
           [](const TpuBuffer& b) { return b.on_host_shape().ToString(); })
      .def("device", &TpuBuffer::device)
      .def("platform", [](const TpuBuffer&) { return "tpu"; })
      .def(
          "to_py",
          [](TpuBuffer& b, bool bfloat16_as_float32) {
            CollectReleased();
            Literal literal =
                ValueOrThrow(CallWithoutGil([&b] { return b.ToLiteral(); }));
            return LiteralToPython(literal, bfloat16_as_float32);
          },
          py::kw_only(), py::arg("bfloat16_as_float32") = false,
          "The value as numpy arrays (read-only views of the host copy) "
          "nested in tuples.")
      .def("copy_to_host_async",
           [](TpuBuffer& b) {
             ThrowIfError(CallWithoutGil([&b] { return b.CopyToHostAsync(); }));
           })
      .def("block_host_until_ready",
           [](TpuBuffer& b) {
             CollectReleased();
             ThrowIfError(
                 CallWithoutGil([&b] { return b.BlockHostUntilReady(); }));
           })
      .def(
          "copy_to_device",
          [](TpuBuffer& b, const std::shared_ptr<TpuDevice>& device) {
            return ValueOrThrow(
                CallWithoutGil([&] { return b.CopyToDevice(device->id()); }));
          },
          py::arg("device"))
      .def("delete",
           [](TpuBuffer& b) {
             CollectReleased();
             CallWithoutGil([&b] { b.Delete(); });
           })
      .def("is_deleted", &TpuBuffer::IsDeleted);
  m.attr("PyTpuBuffer") = m.attr("TpuBuffer");
}

}  // namespace tpu::python
