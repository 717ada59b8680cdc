#ifndef SOFTWARE_TPU_DRIVER_LOCAL_LOCAL_TRANSPORT_H_
#define SOFTWARE_TPU_DRIVER_LOCAL_LOCAL_TRANSPORT_H_

// Transport to an emulator Worker in this process: the same calls and stream
// semantics as over gRPC, without a network. Several transports may share one
// Worker (several clients of one emulator).
//
// Thread safety: see transport.h.

#include <memory>
#include <string>

#include "driver/transport.h"
#include "emulator/worker/worker.h"

namespace tpu::driver {

class LocalTransport : public Transport {
 public:
  // `address` names the worker in error messages.
  LocalTransport(std::shared_ptr<emulator::Worker> worker, std::string address);

  std::string address() const override { return address_; }
  absl::StatusOr<tpu_driver::OpenResponse> Open(
      const tpu_driver::OpenRequest& request, absl::Duration timeout) override;
  absl::Status Close(const tpu_driver::CloseRequest& request) override;
  absl::Status Reset(const tpu_driver::ResetRequest& request) override;
  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override;
  absl::StatusOr<tpu_emulator::WaitReport> GetWaitReport() override {
    return worker_->WaitReport(/*history=*/0);
  }
  std::unique_ptr<TransportStream> OpenStream(
      StreamCallbacks callbacks) override;

 private:
  // Constant after construction.
  const std::shared_ptr<emulator::Worker> worker_;
  const std::string address_;
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_LOCAL_LOCAL_TRANSPORT_H_
