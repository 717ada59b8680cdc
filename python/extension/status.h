#ifndef SOFTWARE_TPU_PYTHON_EXTENSION_STATUS_H_
#define SOFTWARE_TPU_PYTHON_EXTENSION_STATUS_H_

// The one place where an absl::Status becomes a Python exception: binding
// code calls ThrowIfError / ValueOrThrow, which throw StatusError, and the
// translator RegisterStatusTranslator installs turns every StatusError into
// softtpu.TpuError(code, message), with `code` the canonical code name
// ("INVALID_ARGUMENT") and str(error) "CODE: message", as XLA's Python
// client prints it.
//
// Thread safety: ThrowIfError and ValueOrThrow may run with or without the
// GIL; the translation runs with it.

#include <exception>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pybind11/pybind11.h"

namespace tpu::python {

// A failed status on its way to Python.
class StatusError : public std::exception {
 public:
  explicit StatusError(absl::Status status);
  const absl::Status& status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  absl::Status status_;
  std::string what_;
};

// REQUIRES: !status.ok().
[[noreturn]] void ThrowError(absl::Status status);

inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) ThrowError(status);
}

template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  if (!value.ok()) ThrowError(std::move(value).status());
  return *std::move(value);
}

// Installs the StatusError -> softtpu.TpuError translator. `error_type` is
// the Python class softtpu.errors.TpuError, constructed as
// error_type(code_name, message).
void RegisterStatusTranslator(pybind11::handle error_type);

}  // namespace tpu::python

#endif  // SOFTWARE_TPU_PYTHON_EXTENSION_STATUS_H_
