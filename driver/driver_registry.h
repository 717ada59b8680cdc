#ifndef SOFTWARE_TPU_DRIVER_DRIVER_REGISTRY_H_
#define SOFTWARE_TPU_DRIVER_DRIVER_REGISTRY_H_

// Opens a TpuDriver from an address, choosing the backend by its scheme:
// "grpc://host:port", "grpc+pod://h1:p1,h2:p2", "local://[?chips=N&...]".
// Each backend registers itself from its own target (link it to enable it),
// so only the local driver pulls in the emulator.
//
// Thread safety: Open and Register may be called concurrently.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "driver/tpu_driver.h"
#include "proto/tpu_driver.pb.h"

namespace tpu::driver {

using DriverFactory = std::function<absl::StatusOr<std::unique_ptr<TpuDriver>>(
    const tpu_driver::TpuDriverConfig& config)>;

class DriverRegistry {
 public:
  // Opens the driver whose scheme prefixes config.worker(). An unknown scheme
  // is INVALID_ARGUMENT naming it and listing the registered ones.
  static absl::StatusOr<std::unique_ptr<TpuDriver>> Open(
      const tpu_driver::TpuDriverConfig& config);

  // Convenience: Open with only the worker address set.
  static absl::StatusOr<std::unique_ptr<TpuDriver>> Open(
      absl::string_view address);

  // Registers `factory` for addresses starting with `prefix` (e.g. "grpc://").
  // The longest matching prefix wins, so "grpc+pod://" and "grpc://" coexist.
  // Returns a dummy value so it can initialize a static.
  static int Register(absl::string_view prefix, DriverFactory factory);

  // The registered prefixes, sorted.
  static std::vector<std::string> Prefixes();
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_DRIVER_REGISTRY_H_
