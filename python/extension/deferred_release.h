#ifndef SOFTWARE_TPU_PYTHON_EXTENSION_DEFERRED_RELEASE_H_
#define SOFTWARE_TPU_PYTHON_EXTENSION_DEFERRED_RELEASE_H_

// Python objects whose C++ owner lets go of them on a thread that must not
// wait for the GIL: numpy arrays lent to a transfer are given back from the
// driver's completion thread, where blocking is forbidden. The references are
// queued and dropped by the next binding call that holds the GIL, as XLA's
// Python client does with its reference manager.
//
// Thread safety: safe for concurrent use.

#include <vector>

#include "pybind11/pybind11.h"

namespace tpu::python {

// Owned references, dropped later. Needs no GIL.
void ReleaseLater(std::vector<PyObject*> references);

// Drops every queued reference. REQUIRES: the GIL is held.
void CollectReleased();

}  // namespace tpu::python

#endif  // SOFTWARE_TPU_PYTHON_EXTENSION_DEFERRED_RELEASE_H_
