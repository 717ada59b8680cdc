#include "emulator/service/service.h"

#include <deque>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "emulator/service/stream_codec.h"
#include "emulator/worker/response_sink.h"

namespace tpu::emulator {
namespace {

// Queued responses are merged into one message up to this size.
constexpr size_t kMaxMergedBytes = size_t{64} << 20;
// Flow control: while more response bytes than this wait for a client that
// does not read them, the stream reads no more requests (gRPC's own flow
// control then stops the client's writes). Operations already received
// still answer, so the queue is bounded by this plus their responses, which
// the per-client pending-operation limit bounds in turn.
constexpr size_t kMaxQueuedResponseBytes = size_t{256} << 20;
// A decoded request message up to this size keeps its memory for the next.
constexpr size_t kMaxReusedRequestBytes = size_t{1} << 20;

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

class StreamReactor
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  StreamReactor(Worker* worker, std::shared_ptr<RecordDirectory> record_dir) {
    if (record_dir != nullptr) {
      recorder_ = std::make_unique<SessionRecorder>(std::move(record_dir));
    }
    stream_ =
        worker->OpenStream([this](const tpu_driver::StreamResponse& response,
                                  const TransferData& transfer_data) {
          if (recorder_ != nullptr) {
            recorder_->OnResponse(response, transfer_data);
          }
          Enqueue(EncodeStreamResponse(response, transfer_data));
        });
    // A fault rule's drop_stream: end the call at once with its status,
    // dropping whatever was still queued, as a broken connection would.
    stream_->SetDropHandler([this](const absl::Status& status) {
      bool finish;
      grpc::Status final_status;
      {
        absl::MutexLock lock(&mu_);
        broken_ = true;
        drained_ = true;
        queue_.clear();
        final_status_ = ToGrpc(status);
        finish = ShouldFinishLocked(&final_status);
      }
      if (finish) Finish(final_status);
    });
    StartRead(&read_buffer_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The client half-closed (or the call broke: OnCancel handles that).
      // End the call once everything it sent was answered.
      stream_->FinishAsync([this] { OnDrained(); });
      return;
    }
    // Reused: its entries' memory serves the next message's (the worker
    // copies what it keeps during Submit).
    tpu_driver::StreamRequest& request = request_;
    TransferData& transfer_data = transfer_data_;
    absl::Status decoded = absl::OkStatus();
    try {
      if (!DecodeStreamRequest(read_buffer_, &request, &transfer_data)) {
        decoded = absl::InvalidArgumentError(
            "A StreamRequest message could not be parsed; its entries were "
            "dropped.");
      }
    } catch (const std::bad_alloc&) {
      decoded = absl::ResourceExhaustedError(
          "A StreamRequest message could not be decoded: the host refused "
          "the memory for it; its entries were dropped. Send smaller "
          "messages.");
    }
    const size_t message_bytes = read_buffer_.Length();
    read_buffer_.Clear();  // Everything needed was copied out of it.
    if (decoded.ok()) {
      // Recorded first: the worker may answer within Submit.
      if (recorder_ != nullptr) recorder_->OnRequest(request, transfer_data);
      stream_->Submit(request, transfer_data);
    }
    // The payloads now belong to the operations; the vector's memory serves
    // the next message.
    transfer_data.clear();
    if (message_bytes > kMaxReusedRequestBytes) {
      // Clear() would keep the capacity of its strings (a program, a payload
      // the budget refused) for the life of the stream.
      tpu_driver::StreamRequest().Swap(&request_);
    }
    if (!decoded.ok()) {
      tpu_driver::StreamResponse error;
      *error.add_entry() = *MakeResponseEntry(0, decoded);
      Enqueue(EncodeStreamResponse(error, TransferData()));
    }
    {
      absl::MutexLock lock(&mu_);
      if (queued_bytes_ > kMaxQueuedResponseBytes && !broken_) {
        read_paused_ = true;  // OnWriteDone reads again once drained
        return;
      }
    }
    StartRead(&read_buffer_);
  }

  void OnWriteDone(bool ok) override {
    grpc::ByteBuffer* next = nullptr;
    bool finish = false;
    bool resume_reading = false;
    grpc::Status status;
    {
      absl::MutexLock lock(&mu_);
      if (in_flight_ != nullptr) queued_bytes_ -= in_flight_->Length();
      in_flight_.reset();
      if (!ok) broken_ = true;
      if (!broken_ && !queue_.empty()) {
        in_flight_ = TakeMergedLocked();
        next = in_flight_.get();
      } else {
        writing_ = false;
        finish = ShouldFinishLocked(&status);
      }
      if (read_paused_ && !broken_ &&
          queued_bytes_ <= kMaxQueuedResponseBytes / 2) {
        read_paused_ = false;
        resume_reading = true;
      }
    }
    if (next != nullptr) StartWrite(next);
    if (resume_reading) StartRead(&read_buffer_);
    if (finish) Finish(status);
  }

  void OnCancel() override {
    // The transport broke (or the client cancelled): its clients are gone.
    stream_->Abort();
    bool finish;
    grpc::Status status;
    {
      absl::MutexLock lock(&mu_);
      broken_ = true;
      drained_ = true;
      final_status_ = grpc::Status::CANCELLED;
      finish = ShouldFinishLocked(&status);
    }
    if (finish) Finish(status);
  }

  void OnDone() override {
    // No worker callbacks run after this: destroying the stream detaches it.
    stream_.reset();
    delete this;
  }

 private:
  // Called with responses from worker threads, one call at a time.
  void Enqueue(grpc::ByteBuffer message) {
    auto bytes = std::make_unique<grpc::ByteBuffer>();
    bytes->Swap(&message);
    grpc::ByteBuffer* next = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (finish_called_ || broken_) return;
      queued_bytes_ += bytes->Length();
      queue_.push_back(std::move(bytes));
      if (writing_) return;  // OnWriteDone picks it up
      writing_ = true;
      in_flight_ = TakeMergedLocked();
      next = in_flight_.get();
    }
    StartWrite(next);
  }

  void OnDrained() {
    bool finish;
    grpc::Status status;
    {
      absl::MutexLock lock(&mu_);
      drained_ = true;
      finish = ShouldFinishLocked(&status);
    }
    if (finish) Finish(status);
  }

  // Claims the one call to Finish, once nothing is being written and every
  // response went out (or the call broke).
  bool ShouldFinishLocked(grpc::Status* status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finish_called_ || writing_ || !drained_) return false;
    if (!broken_ && !queue_.empty()) return false;
    finish_called_ = true;
    *status = final_status_;
    return true;
  }

  // Concatenates queued responses (up to kMaxMergedBytes) into one message.
  std::unique_ptr<grpc::ByteBuffer> TakeMergedLocked()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (queue_.size() == 1) {
      auto only = std::move(queue_.front());
      queue_.pop_front();
      return only;
    }
    std::vector<grpc::Slice> slices;
    size_t bytes = 0;
    while (!queue_.empty()) {
      const size_t next = queue_.front()->Length();
      if (!slices.empty() && bytes + next > kMaxMergedBytes) break;
      std::vector<grpc::Slice> parts;
      (void)queue_.front()->Dump(&parts);
      for (auto& p : parts) slices.push_back(std::move(p));
      bytes += next;
      queue_.pop_front();
    }
    return std::make_unique<grpc::ByteBuffer>(slices.data(), slices.size());
  }

  // Null unless --record_dir; outlives stream_, whose callbacks use it.
  std::unique_ptr<SessionRecorder> recorder_;
  std::unique_ptr<WorkerStream> stream_;
  grpc::ByteBuffer read_buffer_;
  // The request being decoded and its payloads; only OnReadDone uses them
  // (one read at a time).
  tpu_driver::StreamRequest request_;
  TransferData transfer_data_;

  absl::Mutex mu_;
  std::deque<std::unique_ptr<grpc::ByteBuffer>> queue_ ABSL_GUARDED_BY(mu_);
  // The message being written; gRPC reads it until OnWriteDone.
  std::unique_ptr<grpc::ByteBuffer> in_flight_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  // Bytes of the queue and the message being written.
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Set while no read is outstanding because the client is not reading.
  bool read_paused_ ABSL_GUARDED_BY(mu_) = false;
  bool drained_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_) = grpc::Status::OK;
};

}  // namespace

grpc::ServerUnaryReactor* CloudTpuDriverService::Open(
    grpc::CallbackServerContext* context,
    const tpu_driver::OpenRequest* request,
    tpu_driver::OpenResponse* response) {
  auto* reactor = context->DefaultReactor();
  absl::StatusOr<tpu_driver::OpenResponse> result = worker_->Open(*request);
  if (result.ok()) *response = *std::move(result);
  reactor->Finish(ToGrpc(result.status()));
  return reactor;
}

grpc::ServerUnaryReactor* CloudTpuDriverService::Close(
    grpc::CallbackServerContext* context,
    const tpu_driver::CloseRequest* request,
    tpu_driver::CloseResponse* response) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpc(worker_->Close(*request)));
  return reactor;
}

grpc::ServerUnaryReactor* CloudTpuDriverService::Reset(
    grpc::CallbackServerContext* context,
    const tpu_driver::ResetRequest* request,
    tpu_driver::ResetResponse* response) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpc(worker_->Reset(*request)));
  return reactor;
}

grpc::ServerUnaryReactor* CloudTpuDriverService::QuerySystemInfo(
    grpc::CallbackServerContext* context,
    const tpu_driver::QuerySystemInfoRequest* request,
    tpu_driver::QuerySystemInfoResponse* response) {
  auto* reactor = context->DefaultReactor();
  auto result = worker_->QuerySystemInfo(*request);
  if (result.ok()) *response = *std::move(result);
  reactor->Finish(ToGrpc(result.status()));
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
CloudTpuDriverService::StreamExecute(grpc::CallbackServerContext* context) {
  return new StreamReactor(worker_, record_dir_);
}

}  // namespace tpu::emulator
