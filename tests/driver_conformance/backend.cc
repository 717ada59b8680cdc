#include "tests/driver_conformance/backend.h"

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tpu {
namespace conformance {
namespace {

struct Backends {
  absl::Mutex mu;
  std::vector<Backend> list ABSL_GUARDED_BY(mu);
};

Backends& GetBackends() {
  static Backends* backends = new Backends;
  return *backends;
}

}  // namespace

int RegisterBackend(Backend backend) {
  Backends& backends = GetBackends();
  absl::MutexLock lock(&backends.mu);
  backends.list.push_back(std::move(backend));
  return static_cast<int>(backends.list.size());
}

std::vector<Backend> RegisteredBackends() {
  Backends& backends = GetBackends();
  absl::MutexLock lock(&backends.mu);
  return backends.list;
}

}  // namespace conformance
}  // namespace tpu
