#include "driver/fault_injection_transport.h"

#include <utility>

namespace tpu::driver {

// The callbacks of one wrapped stream, and whether the test broke it.
struct FaultInjectionTransport::Faults::Stream {
  absl::Mutex mu;
  StreamCallbacks callbacks;
  bool ended ABSL_GUARDED_BY(mu) = false;

  void End(const absl::Status& status) {
    absl::MutexLock lock(&mu);
    if (ended) return;
    ended = true;
    callbacks.on_done(status);
  }
  bool broken() {
    absl::MutexLock lock(&mu);
    return ended;
  }
};

void FaultInjectionTransport::Faults::BreakStreams(const absl::Status& status) {
  std::vector<std::shared_ptr<Stream>> live;
  {
    absl::MutexLock lock(&mu);
    for (auto& weak : streams) {
      if (auto stream = weak.lock()) live.push_back(std::move(stream));
    }
  }
  for (auto& stream : live) stream->End(status);
}

namespace {

class FaultStream : public TransportStream {
 public:
  FaultStream(std::shared_ptr<FaultInjectionTransport::Faults::Stream> state,
              std::unique_ptr<TransportStream> base)
      : state_(std::move(state)), base_(std::move(base)) {}

  ~FaultStream() override {
    // Destroying the base waits for its on_done, which then finds us ended
    // (or ends us now).
    base_.reset();
    state_->End(absl::CancelledError("stream destroyed"));
  }

  bool Write(std::vector<OutgoingEntry>& batch) override {
    if (state_->broken()) return false;
    return base_->Write(batch);
  }
  bool ReadsOnDemand() const override { return base_->ReadsOnDemand(); }
  bool ReadNext() override { return base_->ReadNext(); }
  void WritesDone() override { base_->WritesDone(); }
  void Cancel() override { base_->Cancel(); }

 private:
  const std::shared_ptr<FaultInjectionTransport::Faults::Stream> state_;
  std::unique_ptr<TransportStream> base_;
};

}  // namespace

FaultInjectionTransport::FaultInjectionTransport(
    std::unique_ptr<Transport> base, std::shared_ptr<Faults> faults)
    : base_(std::move(base)), faults_(std::move(faults)) {}

absl::StatusOr<tpu_driver::OpenResponse> FaultInjectionTransport::Open(
    const tpu_driver::OpenRequest& request, absl::Duration timeout) {
  {
    absl::MutexLock lock(&faults_->mu);
    if (!faults_->open_error.ok()) return faults_->open_error;
  }
  return base_->Open(request, timeout);
}

std::unique_ptr<TransportStream> FaultInjectionTransport::OpenStream(
    StreamCallbacks callbacks) {
  auto state = std::make_shared<Faults::Stream>();
  state->callbacks = std::move(callbacks);
  {
    absl::MutexLock lock(&faults_->mu);
    faults_->streams.push_back(state);
  }
  StreamCallbacks wrapped;
  std::shared_ptr<Faults> faults = faults_;
  wrapped.on_response = [state,
                         faults](const tpu_driver::StreamResponse& response) {
    if (faults->drop_responses.load()) return;
    absl::MutexLock lock(&state->mu);
    if (state->ended) return;
    if (!faults->truncate_transfer_from.load()) {
      state->callbacks.on_response(response);
      return;
    }
    tpu_driver::StreamResponse changed = response;
    for (auto& entry : *changed.mutable_entry()) {
      if (entry.has_transfer_from() && !entry.transfer_from().data().empty()) {
        entry.mutable_transfer_from()->mutable_data()->pop_back();
      }
    }
    state->callbacks.on_response(changed);
  };
  wrapped.on_done = [state](const absl::Status& status) { state->End(status); };
  return std::make_unique<FaultStream>(state,
                                       base_->OpenStream(std::move(wrapped)));
}

}  // namespace tpu::driver
