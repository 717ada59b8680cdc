// TpuClient: the connection, its devices, buffer creation and compilation.
// The Python-facing compile() (options in any of the reference's forms)
// lives in softtpu/_compile.py and calls _compile here.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/client_options.h"
#include "client/compile_options.h"
#include "client/tpu_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_executable.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"
#include "python/extension/bindings.h"
#include "python/extension/deferred_release.h"
#include "python/extension/gil.h"
#include "python/extension/numpy_conversion.h"
#include "python/extension/status.h"
#include "tools/tpu_run/module_file.h"

namespace tpu::python {
namespace py = pybind11;
using client::TpuBuffer;
using client::TpuClient;
using client::TpuDevice;
using client::TpuExecutable;

namespace {

std::shared_ptr<TpuClient> Get(const std::string& worker,
                               double execute_warn_interval,
                               double execute_max_time,
                               double connection_timeout) {
  client::ClientOptions options;
  options.execute_warn_interval = absl::Seconds(execute_warn_interval);
  options.execute_max_time = absl::Seconds(execute_max_time);
  options.connection_timeout = absl::Seconds(connection_timeout);
  options.warning_handler = WarnThroughPython;
  options.wait_interrupt_check = CheckPythonSignals;
  return ValueOrThrow(
      CallWithoutGil([&] { return TpuClient::Get(worker, options); }));
}

// The reference's one-argument form returns a flat list of devices; with
// num_partitions, a [replica][partition] list of lists.
py::list DefaultDeviceAssignment(const TpuClient& client, int num_replicas,
                                 std::optional<int> num_partitions) {
  client::DeviceAssignment assignment =
      ValueOrThrow(client.GetDefaultDeviceAssignment(
          num_replicas, num_partitions.value_or(1)));
  auto device = [&client](int id) {
    return ValueOrThrow(
        client.LookupDevice(id, "get_default_device_assignment"));
  };
  py::list result;
  for (int r = 0; r < assignment.replica_count(); ++r) {
    if (!num_partitions.has_value()) {
      result.append(device(assignment(r, 0)));
      continue;
    }
    py::list row;
    for (int p = 0; p < assignment.computation_count(); ++p) {
      row.append(device(assignment(r, p)));
    }
    result.append(std::move(row));
  }
  return result;
}

std::unique_ptr<TpuBuffer> BufferFromPyval(
    const std::shared_ptr<TpuClient>& client, py::handle argument,
    std::shared_ptr<TpuDevice> device, bool force_copy) {
  CollectReleased();
  if (device == nullptr) device = client->local_devices().front();
  absl::StatusOr<std::shared_ptr<TpuDevice>> own =
      client->LookupDevice(device->id(), "buffer_from_pyval");
  if (!own.ok() || *own != device) {
    ThrowError(absl::InvalidArgumentError(
        absl::StrFormat("Cannot copy value to device '%s' with '%s' backend",
                        device->DebugString(), "tpu")));
  }
  LentValue lent = ValueOrThrow(LendPythonValue(argument, force_copy));
  // The arrays go back through the deferred queue: the last transfer
  // returns them on a driver thread, which must not wait for the GIL.
  std::vector<PyObject*> owners;
  for (py::object& owner : lent.owners) owners.push_back(owner.release().ptr());
  auto give_back = [owners]() { ReleaseLater(owners); };
  absl::StatusOr<std::unique_ptr<TpuBuffer>> buffer = CallWithoutGil([&] {
    return TpuBuffer::FromHostBuffers(lent.shape, lent.leaf_data, give_back,
                                      client, device->id());
  });
  CollectReleased();
  return ValueOrThrow(std::move(buffer));
}

// `module` is HLO text or a serialized HloProto / HloModuleProto;
// `device_assignment`, if given, is [replica][partition] device ids.
std::unique_ptr<TpuExecutable> Compile(
    const std::shared_ptr<TpuClient>& client, const py::bytes& module,
    int num_replicas, int num_partitions,
    std::optional<std::vector<std::vector<int>>> device_assignment,
    bool tuple_arguments) {
  client::CompileOptions options;
  options.num_replicas = num_replicas;
  options.num_partitions = num_partitions;
  options.tuple_arguments = tuple_arguments;
  if (device_assignment.has_value()) {
    const int replicas = static_cast<int>(device_assignment->size());
    const int partitions =
        replicas == 0 ? 0 : static_cast<int>((*device_assignment)[0].size());
    client::DeviceAssignment assignment(replicas, partitions);
    for (int r = 0; r < replicas; ++r) {
      if (static_cast<int>((*device_assignment)[r].size()) != partitions) {
        ThrowError(absl::InvalidArgumentError(absl::StrFormat(
            "device_assignment row %d names %d devices but row 0 names %d", r,
            (*device_assignment)[r].size(), partitions)));
      }
      for (int p = 0; p < partitions; ++p) {
        assignment(r, p) = (*device_assignment)[r][p];
      }
    }
    options.device_assignment = std::move(assignment);
  }
  const std::string contents = module;
  return ValueOrThrow(
      CallWithoutGil([&]() -> absl::StatusOr<std::unique_ptr<TpuExecutable>> {
        absl::StatusOr<xla::HloModuleProto> proto = ParseModule(contents);
        if (!proto.ok()) return proto.status();
        return TpuExecutable::Compile(*proto, options, client);
      }));
}

}  // namespace

void DefineClient(py::module_& m) {
  py::class_<TpuClient, std::shared_ptr<TpuClient>>(m, "TpuClient")
      .def_static("Get", &Get, py::arg("worker"), py::kw_only(),
                  py::arg("execute_warn_interval") = 10.0,
                  py::arg("execute_max_time") = 120.0,
                  py::arg("connection_timeout") = 30.0,
                  "Connects to grpc://host:port, local://[?chips=N...] or "
                  "grpc+pod://a,b,...; times are in seconds.")
      .def_property_readonly("platform", [](const TpuClient&) { return "tpu"; })
      .def_property_readonly(
          "platform_version",
          [](const TpuClient&) { return "software TPU (softtpu)"; })
      .def_property_readonly(
          "execute_warn_interval",
          [](const TpuClient& c) {
            return absl::ToDoubleSeconds(c.options().execute_warn_interval);
          })
      .def_property_readonly(
          "execute_max_time",
          [](const TpuClient& c) {
            return absl::ToDoubleSeconds(c.options().execute_max_time);
          })
      .def("device_count", &TpuClient::device_count)
      .def("local_device_count", &TpuClient::local_device_count)
      .def("devices", &TpuClient::devices)
      .def("local_devices", &TpuClient::local_devices)
      .def("host_id", &TpuClient::host_id)
      .def("process_index", &TpuClient::host_id)
      .def("task_id", &TpuClient::host_id)
      .def("get_default_device_assignment", &DefaultDeviceAssignment,
           py::arg("num_replicas"), py::arg("num_partitions") = py::none())
      .def("buffer_from_pyval", &BufferFromPyval, py::arg("argument"),
           py::arg("device") = nullptr, py::arg("force_copy") = false,
           "Copies numpy arrays (nested in tuples) to `device` (default: "
           "the first local device). Without force_copy the arrays are read "
           "in place: leave them unchanged until block_host_until_ready().")
      .def("_compile", &Compile, py::arg("module"), py::arg("num_replicas"),
           py::arg("num_partitions"), py::arg("device_assignment"),
           py::arg("tuple_arguments"));
}

}  // namespace tpu::python
