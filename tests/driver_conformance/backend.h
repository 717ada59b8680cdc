#ifndef SOFTWARE_TPU_TESTS_DRIVER_CONFORMANCE_BACKEND_H_
#define SOFTWARE_TPU_TESTS_DRIVER_CONFORMANCE_BACKEND_H_

// Backends of the driver conformance suite. The suite (conformance_test.cc)
// is written against the TpuDriver API only; each backend registers a factory
// from its own file (local_backend.cc, grpc_backend.cc, and the pod driver's),
// and a test binary links the suite plus the backends it wants to run.
//
// A factory returning UNAVAILABLE skips the backend's tests (e.g. a server
// that cannot start here); any other error fails them.
//
// Thread safety: register from static initializers; everything else is used
// from the test thread.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "driver/fault_injection_transport.h"
#include "driver/tpu_driver.h"
#include "driver/transport.h"

namespace tpu {
namespace conformance {

// One worker (or pod) that drivers can be opened on; fresh for every test.
class BackendInstance {
 public:
  virtual ~BackendInstance() = default;

  // The address TpuClient would open ("grpc://127.0.0.1:1234", "local://").
  virtual std::string address() = 0;

  // A new driver (a new client session) on this instance's worker(s), built
  // the way TpuClient builds it. Several drivers share the worker's HBM.
  virtual absl::StatusOr<std::unique_ptr<driver::TpuDriver>> OpenDriver() = 0;

  // A driver whose transport runs through `faults`, for tests of corrupted
  // responses and broken streams. UNIMPLEMENTED if the backend has no single
  // transport to wrap.
  virtual absl::StatusOr<std::unique_ptr<driver::TpuDriver>> OpenFaultyDriver(
      std::shared_ptr<driver::FaultInjectionTransport::Faults> faults) {
    return absl::UnimplementedError("no fault injection on this backend");
  }

  // Makes the worker go away for real (stops its server), with drivers still
  // connected. Returns false if the backend cannot.
  virtual bool StopWorker() { return false; }
};

struct Backend {
  // gtest-friendly name: letters, digits and '_' ("local", "grpc").
  std::string name;
  // Capability tags, e.g. "local://", "grpc://", "network".
  std::vector<std::string> tags;
  std::function<absl::StatusOr<std::unique_ptr<BackendInstance>>()> create;
  // Test names (without the parameter suffix) this backend does not run,
  // each with the reason it is skipped.
  std::map<std::string, std::string> unsupported;
};

// Returns a dummy value so it can initialize a static.
int RegisterBackend(Backend backend);
std::vector<Backend> RegisteredBackends();

}  // namespace conformance
}  // namespace tpu

#endif  // SOFTWARE_TPU_TESTS_DRIVER_CONFORMANCE_BACKEND_H_
