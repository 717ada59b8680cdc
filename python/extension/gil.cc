#include "python/extension/gil.h"

#include <cstdio>
#include <string>

namespace tpu::python {
namespace {

// The state PyEval_SaveThread handed out on this thread; null while the
// thread holds the GIL or never released it through GilRelease.
thread_local PyThreadState* t_released = nullptr;

// Holds the GIL for its lifetime on a thread inside GilRelease.
// REQUIRES: t_released != nullptr.
class GilReacquire {
 public:
  GilReacquire() : state_(t_released) {
    t_released = nullptr;
    PyEval_RestoreThread(state_);
  }
  ~GilReacquire() { t_released = PyEval_SaveThread(); }
  GilReacquire(const GilReacquire&) = delete;
  GilReacquire& operator=(const GilReacquire&) = delete;

 private:
  PyThreadState* state_;
};

}  // namespace

GilRelease::GilRelease() { t_released = PyEval_SaveThread(); }

GilRelease::~GilRelease() {
  PyThreadState* state = t_released;
  t_released = nullptr;
  PyEval_RestoreThread(state);
}

absl::Status CheckPythonSignals() {
  if (t_released == nullptr) return absl::OkStatus();
  GilReacquire gil;
  if (PyErr_CheckSignals() == 0) return absl::OkStatus();
  return absl::CancelledError("interrupted by a Python signal handler");
}

void WarnThroughPython(absl::string_view message) {
  if (t_released == nullptr) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()),
                 message.data());
    return;
  }
  GilReacquire gil;
  // Keep any exception raised meanwhile (a pending KeyboardInterrupt) for
  // CallWithoutGil; logging must not clobber or swallow it.
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  try {
    pybind11::module_::import("logging").attr("getLogger")("softtpu").attr(
        "warning")(std::string(message));
  } catch (pybind11::error_already_set& e) {
    e.discard_as_unraisable("softtpu execute warning");
  }
  PyErr_Restore(type, value, traceback);
}

}  // namespace tpu::python
