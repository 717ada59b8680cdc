#ifndef SOFTWARE_TPU_DRIVER_LOCAL_LOCAL_DRIVER_H_
#define SOFTWARE_TPU_DRIVER_LOCAL_LOCAL_DRIVER_H_

// The local:// driver: an emulator Worker in this process, driven by the same
// StreamDriver as grpc://, so it has the same semantics without a network.
// Linking //driver/local:local_driver registers it for "local://".
//
// Address: local://[?param=value&...] with parameters
//   chips, cores_per_chip, hbm_bytes_per_core, tpu_numerics (0/1),
//   compute_threads, unknown_handle_wait_ms
// (see WorkerOptions). Each Open through the registry creates its own Worker.
//
// Thread safety: the functions may be called concurrently.

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "driver/stream_driver.h"
#include "emulator/worker/worker.h"
#include "proto/tpu_driver.pb.h"

namespace tpu::driver {

// The WorkerOptions a local:// address asks for. INVALID_ARGUMENT naming the
// parameter for an unknown parameter or a bad value.
absl::StatusOr<emulator::WorkerOptions> ParseLocalAddress(
    absl::string_view address);

// Creates a Worker as `config.worker()` says and opens a driver on it. The
// Worker lives as long as the driver.
absl::StatusOr<std::unique_ptr<StreamDriver>> OpenLocalDriver(
    const tpu_driver::TpuDriverConfig& config,
    StreamDriverOptions options = StreamDriverOptions());

// Opens a driver (a new client session) on an existing `worker`, which may
// serve other drivers too.
absl::StatusOr<std::unique_ptr<StreamDriver>> OpenLocalDriver(
    std::shared_ptr<emulator::Worker> worker,
    StreamDriverOptions options = StreamDriverOptions());

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_LOCAL_LOCAL_DRIVER_H_
