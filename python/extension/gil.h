#ifndef SOFTWARE_TPU_PYTHON_EXTENSION_GIL_H_
#define SOFTWARE_TPU_PYTHON_EXTENSION_GIL_H_

// Blocking calls into the client run with the GIL released, so other Python
// threads keep running while a program executes or a transfer moves bytes.
//
// Ctrl-C. Python runs signal handlers only on the main thread, and only
// between bytecodes, so a thread blocked in C++ would ignore SIGINT until the
// program finished. Clients are created with CheckPythonSignals as their
// wait_interrupt_check: while a thread that entered through
// CallWithoutGil waits for a program, it takes the GIL back every few
// milliseconds and runs the handlers. A handler's exception (usually
// KeyboardInterrupt) ends the wait, and CallWithoutGil raises it once the
// call returns; the program keeps running on its core, as after a deadline.
//
// Warnings (ClientOptions::warning_handler) go to the Python logger
// "softtpu" on the same terms.
//
// Thread safety: each function acts on the calling thread only.

#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "pybind11/pybind11.h"

namespace tpu::python {

// Releases the GIL for its lifetime and lets CheckPythonSignals and
// WarnThroughPython on this thread take it back briefly.
// REQUIRES: the GIL is held on construction; no nesting on one thread.
class GilRelease {
 public:
  GilRelease();
  // Takes the GIL back.
  ~GilRelease();
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;
};

// Runs fn() without the GIL, then raises the Python exception a signal
// handler raised meanwhile, if any; otherwise returns fn's result.
template <typename F>
auto CallWithoutGil(F&& fn) -> decltype(fn()) {
  if constexpr (std::is_void_v<decltype(fn())>) {
    {
      GilRelease release;
      std::forward<F>(fn)();
    }
    if (PyErr_Occurred() != nullptr) throw pybind11::error_already_set();
  } else {
    auto result = [&] {
      GilRelease release;
      return std::forward<F>(fn)();
    }();
    if (PyErr_Occurred() != nullptr) throw pybind11::error_already_set();
    return result;
  }
}

// ClientOptions::wait_interrupt_check: OK unless a Python signal handler
// raised on this thread, then CANCELLED (the handler's exception stays set
// for CallWithoutGil to raise). OK at once on threads that did not enter
// through CallWithoutGil.
absl::Status CheckPythonSignals();

// ClientOptions::warning_handler: logs `message` as a warning of the Python
// logger "softtpu" when called inside CallWithoutGil, else writes it to
// stderr (a thread that may not take the GIL).
void WarnThroughPython(absl::string_view message);

}  // namespace tpu::python

#endif  // SOFTWARE_TPU_PYTHON_EXTENSION_GIL_H_
