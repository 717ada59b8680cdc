#ifndef SOFTWARE_TPU_PYTHON_EXTENSION_BINDINGS_H_
#define SOFTWARE_TPU_PYTHON_EXTENSION_BINDINGS_H_

// The classes of the _softtpu module, one Define function per noun, in the
// order module.cc calls them (a class must be defined before signatures
// that mention it are documented).

#include "pybind11/pybind11.h"

namespace tpu::python {

void DefineDevice(pybind11::module_& m);
void DefineBuffer(pybind11::module_& m);
void DefineExecutable(pybind11::module_& m);
void DefineClient(pybind11::module_& m);
// softtpu.control's generic call into the worker's control service.
void DefineControl(pybind11::module_& m);
// The C++ baselines python/benchmarks/python_client_benchmark.py measures.
void DefineBenchmarkHooks(pybind11::module_& m);

}  // namespace tpu::python

#endif  // SOFTWARE_TPU_PYTHON_EXTENSION_BINDINGS_H_
