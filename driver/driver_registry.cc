#include "driver/driver_registry.h"

#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"

namespace tpu::driver {
namespace {

struct Registry {
  absl::Mutex mu;
  // Sorted by prefix, so Prefixes() is sorted for free.
  std::map<std::string, DriverFactory> factories ABSL_GUARDED_BY(mu);
};

// Never destroyed: registrations happen from static initializers of other
// translation units and drivers may be opened during static destruction.
Registry& GetRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TpuDriver>> DriverRegistry::Open(
    const tpu_driver::TpuDriverConfig& config) {
  DriverFactory factory;
  std::vector<std::string> known;
  {
    Registry& registry = GetRegistry();
    absl::MutexLock lock(&registry.mu);
    size_t best = 0;
    for (const auto& [prefix, candidate] : registry.factories) {
      known.push_back(prefix);
      if (prefix.size() > best && absl::StartsWith(config.worker(), prefix)) {
        best = prefix.size();
        factory = candidate;
      }
    }
  }
  if (!factory) {
    absl::string_view address = config.worker();
    size_t end = address.find("://");
    absl::string_view scheme =
        end == absl::string_view::npos ? address : address.substr(0, end + 3);
    return absl::InvalidArgumentError(absl::StrCat(
        "Unknown TPU driver scheme \"", scheme, "\" in address \"", address,
        "\". Known schemes: ",
        known.empty() ? std::string("(none; link a driver target such as "
                                    "//driver/grpc:grpc_driver)")
                      : absl::StrJoin(known, ", "),
        "."));
  }
  // Outside the lock: a factory may block (connecting) or open other drivers.
  return factory(config);
}

absl::StatusOr<std::unique_ptr<TpuDriver>> DriverRegistry::Open(
    absl::string_view address) {
  tpu_driver::TpuDriverConfig config;
  config.set_worker(std::string(address));
  return Open(config);
}

int DriverRegistry::Register(absl::string_view prefix, DriverFactory factory) {
  Registry& registry = GetRegistry();
  absl::MutexLock lock(&registry.mu);
  registry.factories[std::string(prefix)] = std::move(factory);
  return static_cast<int>(registry.factories.size());
}

std::vector<std::string> DriverRegistry::Prefixes() {
  Registry& registry = GetRegistry();
  absl::MutexLock lock(&registry.mu);
  std::vector<std::string> prefixes;
  for (const auto& entry : registry.factories) prefixes.push_back(entry.first);
  return prefixes;
}

}  // namespace tpu::driver
