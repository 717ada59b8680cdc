#ifndef SOFTWARE_TPU_DRIVER_GRPC_GRPC_TRANSPORT_H_
#define SOFTWARE_TPU_DRIVER_GRPC_GRPC_TRANSPORT_H_

// Transport over gRPC to a worker serving tpu_driver.CloudTpuDriver.
//
// Channel settings follow the reference client: message limits lifted to
// INT_MAX (a 64 MiB transfer is one message), keepalive pings every
// keepalive_timeout / 20 (1.5 s by default) even without calls, a 64 MB HTTP/2
// write buffer. A StreamExecute stream's Write is the blocking gRPC write and
// it reads on demand (ReadsOnDemand): whoever waits for a response reads it.
//
// Thread safety: see transport.h.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "driver/grpc/grpc_address.h"
#include "driver/transport.h"
#include "grpcpp/channel.h"
#include "proto/tpu_driver.pb.h"

namespace tpu::driver {

// StreamExecute messages this process's grpc:// streams wrote and read
// since it started: how well entries and responses are batched (a
// benchmark's round trip divides their growth by its iterations).
struct GrpcStreamMessageCounts {
  int64_t requests_written = 0;
  int64_t responses_read = 0;
};
GrpcStreamMessageCounts GrpcStreamMessagesSoFar();

class GrpcTransport : public Transport {
 public:
  // `config.worker()` is an address of grpc_address.h (grpc://host:port,
  // grpc://unix:PATH, grpcs://host:port?ca=...). Creating the channel does
  // not connect; Open does. Errors: those of ParseGrpcAddress and of reading
  // the TLS files. Open fails at once when the worker refuses the
  // connection, unless config.grpc().connect_timeout_ms asks to wait for it
  // (retrying) that long.
  static absl::StatusOr<std::unique_ptr<GrpcTransport>> Create(
      const tpu_driver::TpuDriverConfig& config);

  std::string address() const override { return address_; }
  absl::StatusOr<tpu_driver::OpenResponse> Open(
      const tpu_driver::OpenRequest& request, absl::Duration timeout) override;
  absl::Status Close(const tpu_driver::CloseRequest& request) override;
  absl::Status Reset(const tpu_driver::ResetRequest& request) override;
  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override;
  absl::StatusOr<tpu_emulator::WaitReport> GetWaitReport() override;
  std::unique_ptr<TransportStream> OpenStream(
      StreamCallbacks callbacks) override;

 private:
  GrpcTransport(std::string address, GrpcAddress parsed,
                absl::Duration connect_timeout,
                std::shared_ptr<grpc::Channel> channel);

  // Constant after construction.
  const std::string address_;
  const GrpcAddress parsed_;
  // How long Open waits for a worker that refuses connections.
  const absl::Duration connect_timeout_;
  const std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_GRPC_GRPC_TRANSPORT_H_
