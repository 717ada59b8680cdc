#include "driver/local/local_transport.h"

#include <cstring>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tpu::driver {
namespace {

// Shared with the worker's response callback, which may outlive the stream
// object by a little (the worker owns it until its stream is gone). No lock
// is held while a callback runs: a response may be delivered on a thread
// that is inside Write (the worker ran the operation inline), and whatever
// locks that thread's caller holds must not meet ours in another order.
struct StreamState {
  absl::Mutex mu;
  StreamCallbacks callbacks;
  bool done ABSL_GUARDED_BY(mu) = false;
  // A response is being delivered, and on which thread (on_done waits for
  // it, unless it is called from inside it).
  bool delivering ABSL_GUARDED_BY(mu) = false;
  std::thread::id delivering_thread ABSL_GUARDED_BY(mu);

  void Respond(const tpu_driver::StreamResponse& response,
               const emulator::TransferData& transfer_data) {
    {
      absl::MutexLock lock(&mu);
      if (done) return;
      // The worker delivers one stream's responses one at a time.
      delivering = true;
      delivering_thread = std::this_thread::get_id();
    }
    Deliver(response, transfer_data);
    absl::MutexLock lock(&mu);
    delivering = false;
  }

  void Deliver(const tpu_driver::StreamResponse& response,
               const emulator::TransferData& transfer_data) {
    if (transfer_data.empty()) {
      callbacks.on_response(response);
      return;
    }
    // transfer_from data goes from the device buffer's contents straight to
    // its destination: the one copy a transfer needs.
    tpu_driver::StreamResponse copy = response;
    for (int i = 0; i < copy.entry_size(); ++i) {
      const std::shared_ptr<AlignedBuffer>& payload =
          emulator::PayloadOf(transfer_data, i);
      if (payload == nullptr) continue;
      auto* entry = copy.mutable_entry(i);
      void* dst = payload->size() > 0 && callbacks.transfer_destination
                      ? callbacks.transfer_destination(entry->operation_id(),
                                                       payload->size())
                      : nullptr;
      if (dst != nullptr) {
        std::memcpy(dst, payload->data(), payload->size());
        entry->mutable_transfer_from()->set_data("");
      } else {
        entry->mutable_transfer_from()->set_data(
            static_cast<const char*>(payload->data()), payload->size());
      }
    }
    callbacks.on_response(copy);
  }

  void End(const absl::Status& status) {
    {
      absl::MutexLock lock(&mu);
      if (done) return;
      done = true;
      if (!delivering || delivering_thread != std::this_thread::get_id()) {
        mu.Await(absl::Condition(
            +[](bool* delivering) { return !*delivering; }, &delivering));
      }
    }
    callbacks.on_done(status);
  }

  bool ended() {
    absl::MutexLock lock(&mu);
    return done;
  }
};

class LocalTransportStream : public TransportStream {
 public:
  LocalTransportStream(emulator::Worker* worker, StreamCallbacks callbacks)
      : state_(std::make_shared<StreamState>()) {
    state_->callbacks = std::move(callbacks);
    std::shared_ptr<StreamState> state = state_;
    stream_ = worker->OpenStream(
        [state](const tpu_driver::StreamResponse& response,
                const emulator::TransferData& transfer_data) {
          state->Respond(response, transfer_data);
        });
    // A fault rule's drop_stream ends the stream as a broken connection
    // would: the driver then fails every pending operation of it.
    stream_->SetDropHandler(
        [state](const absl::Status& status) { state->End(status); });
  }

  ~LocalTransportStream() override {
    Cancel();
    stream_.reset();  // No response callback runs after this.
  }

  bool Write(std::vector<OutgoingEntry>& batch) override {
    if (state_->ended()) return false;
    tpu_driver::StreamRequest request;
    request.mutable_entry()->Reserve(static_cast<int>(batch.size()));
    emulator::TransferData transfer_data;
    for (OutgoingEntry& outgoing : batch) {
      auto* entry = request.add_entry();
      entry->Swap(&outgoing.entry);
      if (entry->has_transfer_to()) {
        // Copied once, into what becomes the buffer's contents.
        auto payload = AlignedBuffer::Allocate(
            static_cast<int64_t>(outgoing.payload.size()));
        if (!outgoing.payload.empty()) {
          std::memcpy(payload->data(), outgoing.payload.data(),
                      outgoing.payload.size());
        }
        transfer_data.resize(request.entry_size());
        transfer_data.back() = std::move(payload);
      }
    }
    stream_->Submit(request, transfer_data);
    return true;
  }

  bool WritesWithoutBlocking() const override { return true; }

  void WritesDone() override {
    // The worker ends the stream once everything in flight was answered, as
    // the gRPC service does after the client half-closes.
    std::shared_ptr<StreamState> state = state_;
    stream_->FinishAsync([state] { state->End(absl::OkStatus()); });
  }

  void Cancel() override {
    {
      absl::MutexLock lock(&state_->mu);
      if (state_->done || cancelled_) return;
      cancelled_ = true;
    }
    stream_->Abort();
    state_->End(absl::CancelledError("stream cancelled by the client"));
  }

 private:
  const std::shared_ptr<StreamState> state_;
  std::unique_ptr<emulator::WorkerStream> stream_;
  bool cancelled_ = false;  // Guarded by state_->mu.
};

}  // namespace

LocalTransport::LocalTransport(std::shared_ptr<emulator::Worker> worker,
                               std::string address)
    : worker_(std::move(worker)), address_(std::move(address)) {}

absl::StatusOr<tpu_driver::OpenResponse> LocalTransport::Open(
    const tpu_driver::OpenRequest& request, absl::Duration timeout) {
  return worker_->Open(request);
}

absl::Status LocalTransport::Close(const tpu_driver::CloseRequest& request) {
  return worker_->Close(request);
}

absl::Status LocalTransport::Reset(const tpu_driver::ResetRequest& request) {
  return worker_->Reset(request);
}

absl::StatusOr<tpu_driver::SystemInfo> LocalTransport::QuerySystemInfo() {
  absl::StatusOr<tpu_driver::QuerySystemInfoResponse> response =
      worker_->QuerySystemInfo(tpu_driver::QuerySystemInfoRequest());
  if (!response.ok()) return response.status();
  return std::move(*response->mutable_system_info());
}

std::unique_ptr<TransportStream> LocalTransport::OpenStream(
    StreamCallbacks callbacks) {
  return std::make_unique<LocalTransportStream>(worker_.get(),
                                                std::move(callbacks));
}

}  // namespace tpu::driver
