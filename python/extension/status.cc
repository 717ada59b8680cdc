#include "python/extension/status.h"

#include "absl/strings/str_cat.h"

namespace tpu::python {
namespace {

// The TpuError class; a strong reference kept for the life of the process.
// Deliberately leaked: destroying a Python object after the interpreter
// finalized would crash at exit.
PyObject* g_error_type = nullptr;

}  // namespace

StatusError::StatusError(absl::Status status)
    : status_(std::move(status)),
      what_(absl::StrCat(absl::StatusCodeToString(status_.code()), ": ",
                         status_.message())) {}

void ThrowError(absl::Status status) { throw StatusError(std::move(status)); }

void RegisterStatusTranslator(pybind11::handle error_type) {
  g_error_type = error_type.inc_ref().ptr();
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      const absl::Status& status = e.status();
      pybind11::object error = pybind11::handle(g_error_type)(
          absl::StatusCodeToString(status.code()),
          std::string(status.message()));
      PyErr_SetObject(g_error_type, error.ptr());
    }
  });
}

}  // namespace tpu::python
