#ifndef SOFTWARE_TPU_DRIVER_GRPC_GRPC_DRIVER_H_
#define SOFTWARE_TPU_DRIVER_GRPC_GRPC_DRIVER_H_

// The grpc:// driver: StreamDriver over GrpcTransport. Linking
// //driver/grpc:grpc_driver registers it with DriverRegistry for "grpc://"
// (TCP, or a Unix socket as grpc://unix:PATH) and "grpcs://" (TLS); the
// address forms are in grpc_address.h.
//
// Thread safety: the functions may be called concurrently.

#include <memory>

#include "absl/status/statusor.h"
#include "driver/grpc/grpc_transport.h"
#include "driver/stream_driver.h"
#include "proto/tpu_driver.pb.h"

namespace tpu::driver {

// Opens `config.worker()` ("grpc://host:port", ...). A worker that refuses the
// connection fails it at once, UNAVAILABLE naming the address and what to do,
// unless config.grpc().connect_timeout_ms asks to wait for it that long (a
// worker still starting). A worker that accepts but does not answer fails it
// UNAVAILABLE after config.grpc().connection_timeout_secs.
absl::StatusOr<std::unique_ptr<StreamDriver>> OpenGrpcDriver(
    const tpu_driver::TpuDriverConfig& config,
    StreamDriverOptions options = StreamDriverOptions());

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_GRPC_GRPC_DRIVER_H_
