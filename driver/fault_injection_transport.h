#ifndef SOFTWARE_TPU_DRIVER_FAULT_INJECTION_TRANSPORT_H_
#define SOFTWARE_TPU_DRIVER_FAULT_INJECTION_TRANSPORT_H_

// A Transport wrapper for tests, in the spirit of LevelDB's fault-injection
// Env: passes everything through to a real transport, except the faults a test
// switches on. Deterministic: no sleeps, no timing.
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "driver/transport.h"

namespace tpu::driver {

class FaultInjectionTransport : public Transport {
 public:
  // Shared with the test after the driver took ownership of the transport.
  struct Faults {
    // Drops the last byte of every transfer_from payload that arrives.
    std::atomic<bool> truncate_transfer_from{false};
    // Swallows responses instead of delivering them (operations stay pending
    // until the stream breaks).
    std::atomic<bool> drop_responses{false};
    // Fails the next Open with this status if not OK.
    absl::Mutex mu;
    absl::Status open_error ABSL_GUARDED_BY(mu);
    // Breaks every open stream, as a worker that went away: their on_done
    // runs with `status` and later writes fail.
    void BreakStreams(const absl::Status& status);

    struct Stream;
    std::vector<std::weak_ptr<Stream>> streams ABSL_GUARDED_BY(mu);
  };

  FaultInjectionTransport(std::unique_ptr<Transport> base,
                          std::shared_ptr<Faults> faults);

  std::string address() const override { return base_->address(); }
  absl::StatusOr<tpu_driver::OpenResponse> Open(
      const tpu_driver::OpenRequest& request, absl::Duration timeout) override;
  absl::Status Close(const tpu_driver::CloseRequest& request) override {
    return base_->Close(request);
  }
  absl::Status Reset(const tpu_driver::ResetRequest& request) override {
    return base_->Reset(request);
  }
  absl::StatusOr<tpu_emulator::WaitReport> GetWaitReport() override {
    return base_->GetWaitReport();
  }
  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override {
    return base_->QuerySystemInfo();
  }
  std::unique_ptr<TransportStream> OpenStream(
      StreamCallbacks callbacks) override;

 private:
  const std::unique_ptr<Transport> base_;
  const std::shared_ptr<Faults> faults_;
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_FAULT_INJECTION_TRANSPORT_H_
