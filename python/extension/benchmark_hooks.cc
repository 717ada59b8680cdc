// The C++ client's side of python/benchmarks/python_client_benchmark.py,
// run inside the same process as the Python side it is compared with: same
// threads, same memory, and other processes' load hits both alike when the
// two alternate in short batches.

#include <chrono>
#include <cstring>
#include <vector>

#include "client/tpu_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_executable.h"
#include "hlo/literal.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"
#include "python/extension/bindings.h"
#include "python/extension/gil.h"
#include "python/extension/status.h"

namespace tpu::python {
namespace py = pybind11;
using client::TpuBuffer;
using client::TpuClient;
using client::TpuExecutable;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Seconds for `count` Executes of `executable` with `arguments`, with a
// busy pause of `pause_ns` after each (subtracted from the result). Executes
// get slower when the caller does any work between them, as Python's loop
// does (measured here: a 1 us pause costs 4 us more per execute, presumably
// the driver's threads going idle); the pause shows that cost apart from the
// binding's own.
double ExecuteLoop(TpuExecutable& executable,
                   const std::vector<TpuBuffer*>& arguments, int count,
                   int64_t pause_ns) {
  return CallWithoutGil([&] {
    const auto pause = std::chrono::nanoseconds(pause_ns);
    const auto start = Clock::now();
    for (int i = 0; i < count; ++i) {
      ThrowIfError(executable.Execute(arguments).status());
      const auto resume = Clock::now() + pause;
      while (Clock::now() < resume) {
      }
    }
    return Seconds(Clock::now() - start - count * pause);
  });
}

// FromLiteral + ToLiteral of one f32 array, made once: like the Python side's
// numpy array, it stays allocated between rounds, so both sides see the same
// reuse of freed host memory.
class RoundTrip {
 public:
  RoundTrip(std::shared_ptr<TpuClient> client, int64_t bytes)
      : client_(std::move(client)),
        value_(Literal::Uninitialized(Shape::Array(xla::F32, {bytes / 4}))) {
    std::memset(value_.mutable_untyped_data(), 1, value_.size_bytes());
  }

  // Seconds for one round trip.
  double Run() {
    return CallWithoutGil([&] {
      const int device = client_->local_devices().front()->id();
      const auto start = Clock::now();
      std::unique_ptr<TpuBuffer> buffer =
          ValueOrThrow(TpuBuffer::FromLiteral(value_, client_, device));
      Literal back = ValueOrThrow(buffer->ToLiteral());
      return Seconds(Clock::now() - start);
    });
  }

 private:
  const std::shared_ptr<TpuClient> client_;
  Literal value_;
};

}  // namespace

void DefineBenchmarkHooks(py::module_& m) {
  m.def("_execute_loop_for_benchmark", &ExecuteLoop, py::arg("executable"),
        py::arg("arguments"), py::arg("count"), py::arg("pause_ns") = 0);
  py::class_<RoundTrip>(m, "_RoundTripForBenchmark")
      .def(py::init<std::shared_ptr<TpuClient>, int64_t>(), py::arg("client"),
           py::arg("bytes"))
      .def("run", &RoundTrip::Run);
}

}  // namespace tpu::python
