#include "driver/stream_channel.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tpu::driver {
namespace {

// How deep the calling thread is inside I/O it does for a caller (Submit on a
// transport whose writes never block, or an Await driving the stream): it
// may hold its caller's locks, so completions there defer their callbacks.
thread_local int tls_caller_io = 0;

// The writer sends queued entries at once when this many are queued.
constexpr size_t kFlushAtEntries = 256;

}  // namespace

// The EventDriver of this channel's events (completion_event.h). Events may
// outlive the channel: Shutdown detaches it, after which it does nothing.
class StreamChannel::Progress : public EventDriver {
 public:
  explicit Progress(StreamChannel* channel) : channel_(channel) {}

  void DriveUntilComplete(const CompletionEvent& event) override {
    StreamChannel* channel = Enter();
    if (channel == nullptr) return;
    channel->Drive(event.id().AsInt());
    Leave();
  }

  void NeedsCompletion(const CompletionEvent& event) override {
    StreamChannel* channel = Enter();
    if (channel == nullptr) return;
    channel->MarkNeeded(event.id().AsInt());
    Leave();
  }

  // No call reaches the channel after this returns; waits for those inside,
  // which return once the stream is cancelled.
  void Detach() {
    absl::MutexLock lock(&mu_);
    channel_ = nullptr;
    mu_.Await(absl::Condition(
        +[](int* active) { return *active == 0; }, &active_));
  }

 private:
  StreamChannel* Enter() {
    absl::MutexLock lock(&mu_);
    if (channel_ != nullptr) ++active_;
    return channel_;
  }
  void Leave() {
    absl::MutexLock lock(&mu_);
    --active_;
  }

  absl::Mutex mu_;
  StreamChannel* channel_ ABSL_GUARDED_BY(mu_);
  int active_ ABSL_GUARDED_BY(mu_) = 0;
};

absl::Status StatusFromWire(const tpu_driver::StatusMessage& message) {
  const int code = message.code();
  if (code == 0) return absl::OkStatus();
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(absl::StrCat(
        "(status code ", code, " from the worker) ", message.message()));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), message.message());
}

StreamChannel::StreamChannel(std::string name, std::string address,
                             Transport* transport,
                             const StreamChannelOptions& options)
    : name_(std::move(name)),
      address_(std::move(address)),
      transport_(transport),
      options_(options) {
  StreamCallbacks callbacks;
  callbacks.on_response = [this](const tpu_driver::StreamResponse& response) {
    OnResponse(response);
  };
  callbacks.on_done = [this](const absl::Status& status) { OnDone(status); };
  callbacks.transfer_destination = [this](uint64_t wire_id, int64_t bytes) {
    return TransferDestination(wire_id, bytes);
  };
  stream_ = transport_->OpenStream(std::move(callbacks));
  write_inline_ = stream_->WritesWithoutBlocking();
  read_on_demand_ = stream_->ReadsOnDemand();
  writer_ = std::thread([this] { WriterLoop(); });
  if (read_on_demand_) {
    progress_ = std::make_shared<Progress>(this);
    reader_ = std::thread([this] { ReaderLoop(); });
  }
}

StreamChannel::~StreamChannel() {
  Shutdown(absl::StatusCode::kAborted,
           absl::StrCat("the TPU driver for ", address_, " was destroyed"));
}

void StreamChannel::Submit(OutgoingEntry&& entry, PendingOp op) {
  const uint64_t wire_id = entry.entry.operation_id();
  // Waiting for it goes through this channel once it is pending.
  std::shared_ptr<CompletionEvent> driven =
      progress_ != nullptr ? op.event : nullptr;
  absl::Status refused;
  bool write_now = false;
  {
    absl::MutexLock lock(&mu_);
    if (ended_ || shut_down_) {
      refused = EndedStatus(wire_id);
    } else if (closing_) {
      refused = absl::FailedPreconditionError(absl::StrCat(
          EventId::FromInt(wire_id).ToString(),
          " was issued while the TPU driver for ", address_, " was closing"));
    } else {
      pending_.emplace(wire_id, Pending{std::move(op)});
      queue_.push_back(std::move(entry));
      // Whoever is writing already (another thread, or this one further up
      // the stack when a response's callback submits) takes it along.
      write_now = write_inline_ && !writing_;
      if (write_now) writing_ = true;
    }
  }
  if (!refused.ok()) {
    op.event->Complete(std::move(refused));
    return;
  }
  if (driven != nullptr) driven->SetDriver(progress_);
  if (write_now) WriteQueued();
}

void StreamChannel::WriteQueued() {
  std::vector<OutgoingEntry> batch;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (queue_.empty() || ended_ || writer_exit_ || write_failed_) {
        writing_ = false;
        return;
      }
      batch.swap(queue_);
    }
    ++tls_caller_io;
    const bool written = stream_->Write(batch);
    --tls_caller_io;
    batch.clear();
    if (!written) {
      absl::MutexLock lock(&mu_);
      write_failed_ = true;
      writing_ = false;
      return;
    }
  }
}

void StreamChannel::Complete(const std::shared_ptr<CompletionEvent>& event,
                             absl::Status status) {
  if (tls_caller_io == 0) {
    event->Complete(std::move(status));
    return;
  }
  // This thread is inside a Submit of some channel and may hold its caller's
  // locks, which the event's callbacks may want: they run on the writer.
  event->CompleteDeferringCallbacks(std::move(status),
                                    [this](std::function<void()> callback) {
                                      absl::MutexLock lock(&mu_);
                                      deferred_.push_back(std::move(callback));
                                    });
}

void StreamChannel::BeginClose() {
  absl::MutexLock lock(&mu_);
  closing_ = true;
}

bool StreamChannel::WaitEnded(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(absl::Condition(&ended_), deadline);
}

void StreamChannel::Shutdown(absl::StatusCode code, const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (!shut_down_) {
      shut_down_ = true;
      shutdown_code_ = code;
      shutdown_reason_ = reason;
    }
    writer_exit_ = true;
  }
  // stream_ is only reset below, by the one thread that joins the writer
  // (which exits only once no submitting thread is inside Write) and the
  // reader, once no waiting thread drives the stream.
  if (writer_.joinable()) {
    stream_->Cancel();
    if (progress_ != nullptr) progress_->Detach();
    writer_.join();
    if (reader_.joinable()) reader_.join();
    stream_.reset();  // Waits for on_done; no callback runs after this.
  }
  {
    absl::MutexLock lock(&mu_);
    ended_ = true;
  }
  FailAllPending();
}

int64_t StreamChannel::NumPendingForTesting() {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(pending_.size());
}

void StreamChannel::WriterLoop() {
  bool half_closed = false;
  // The queue waited options_.coalescing_window: it goes out now.
  bool window_passed = false;
  std::vector<OutgoingEntry> batch;
  std::vector<std::function<void()>> callbacks;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      // A submitting thread that is writing keeps the turn until the queue
      // is empty; the writer runs the callbacks it deferred meanwhile.
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        if (!deferred_.empty()) return true;
        if (writing_) return false;
        return writer_exit_ || ended_ ||
               (!half_closed && !write_failed_ &&
                (!queue_.empty() || closing_));
      };
      mu_.Await(absl::Condition(&ready));
      if (!deferred_.empty()) {
        callbacks.swap(deferred_);
      } else if (writer_exit_ || ended_) {
        break;
      } else if (!queue_.empty()) {
        if (read_on_demand_ && !window_passed && needed_ == 0 && !closing_) {
          // A thread that awaits one of these operations sends them itself,
          // then reads the answer, with no hand-off; give it the chance.
          // Entries nobody waits for leave after the window.
          auto flush_now = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
            return writer_exit_ || ended_ || closing_ || needed_ > 0 ||
                   queue_.size() >= kFlushAtEntries;
          };
          mu_.AwaitWithTimeout(absl::Condition(&flush_now),
                               options_.coalescing_window);
          window_passed = !queue_.empty();
          continue;
        }
        window_passed = false;
        batch.swap(queue_);
        writing_ = true;
      } else {
        half_closed = true;  // closing_, and everything queued was written
      }
    }
    if (!callbacks.empty()) {
      for (auto& callback : callbacks) callback();
      callbacks.clear();
    } else if (!batch.empty()) {
      // Entries queued meanwhile form the next batch: the busier the
      // stream, the larger the batches.
      WriteBatch(batch);
    } else {
      stream_->WritesDone();
    }
  }
  // Callbacks deferred before the stream ended still run, once.
  {
    absl::MutexLock lock(&mu_);
    callbacks.swap(deferred_);
  }
  for (auto& callback : callbacks) callback();
}

void StreamChannel::WriteBatch(std::vector<OutgoingEntry>& batch) {
  const bool written = stream_->Write(batch);
  batch.clear();
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (!written) write_failed_ = true;  // on_done follows
}

void StreamChannel::ReadOnce() {
  const bool more = stream_->ReadNext();
  absl::MutexLock lock(&mu_);
  reading_ = false;
  if (!more) read_ended_ = true;
}

void StreamChannel::ReaderLoop() {
  absl::MutexLock lock(&mu_);
  // Reading one message of responses nobody waits for. One at a time, so
  // that the reader never becomes the stream's reader for good while
  // waiting threads keep operations pending (the worker merges what queued
  // up into few messages).
  bool draining = false;
  auto must_read = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !reading_ && (needed_ > 0 || closing_ || write_failed_ ||
                         (draining && !pending_.empty()));
  };
  auto stop = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return writer_exit_ || ended_ || read_ended_;
  };
  while (!stop()) {
    if (must_read()) {
      reading_ = true;
      draining = false;
      mu_.Unlock();
      ReadOnce();
      mu_.Lock();
      continue;
    }
    const int64_t read_before = messages_read_;
    const bool idle = pending_.empty();
    auto wake = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop() || must_read();
    };
    if (mu_.AwaitWithTimeout(
            absl::Condition(&wake),
            idle ? options_.idle_check : options_.lazy_read_delay)) {
      continue;
    }
    // Responses nobody asked for and nobody read meanwhile: read them, so
    // that they do not pile up in the worker.
    draining = !reading_ && !pending_.empty() && messages_read_ == read_before;
  }
}

void StreamChannel::Drive(uint64_t wire_id) {
  std::vector<OutgoingEntry> batch;
  absl::MutexLock lock(&mu_);
  while (true) {
    auto it = pending_.find(wire_id);
    // Answered already, or answered with an error once the stream ends.
    if (it == pending_.end() || ended_ || read_ended_ || writer_exit_) return;
    if (!queue_.empty() && !writing_ && !write_failed_) {
      // Its entry may still be queued: send it, with everything before it.
      writing_ = true;
      batch.swap(queue_);
      mu_.Unlock();
      ++tls_caller_io;
      WriteBatch(batch);
      --tls_caller_io;
      mu_.Lock();
      continue;
    }
    if (!reading_) {
      reading_ = true;
      mu_.Unlock();
      ++tls_caller_io;
      ReadOnce();
      --tls_caller_io;
      mu_.Lock();
      continue;
    }
    // Another thread reads: it must go on until this operation is answered.
    MarkNeededLocked(it->second);
    return;
  }
}

void StreamChannel::MarkNeeded(uint64_t wire_id) {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(wire_id);
  if (it != pending_.end()) MarkNeededLocked(it->second);
}

void StreamChannel::MarkNeededLocked(Pending& pending) {
  if (pending.needed) return;
  pending.needed = true;
  ++needed_;
}

bool StreamChannel::TakePendingLocked(uint64_t wire_id, PendingOp* op) {
  auto it = pending_.find(wire_id);
  if (it == pending_.end()) return false;
  if (it->second.needed) --needed_;
  *op = std::move(it->second.op);
  pending_.erase(it);
  return true;
}

void StreamChannel::OnResponse(const tpu_driver::StreamResponse& response) {
  const int n = response.entry_size();
  std::vector<PendingOp> ops(n);
  std::vector<bool> found(n, false);
  {
    absl::MutexLock lock(&mu_);
    ++messages_read_;
    for (int i = 0; i < n; ++i) {
      // An unknown id is a response we no longer wait for (the operation
      // already failed locally) or a confused worker; either way, ignore it.
      found[i] = TakePendingLocked(response.entry(i).operation_id(), &ops[i]);
    }
  }
  for (int i = 0; i < n; ++i) {
    if (found[i]) CompleteFromResponse(std::move(ops[i]), response.entry(i));
  }
}

void* StreamChannel::TransferDestination(uint64_t wire_id, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(wire_id);
  if (it == pending_.end() || it->second.op.transfer_bytes != bytes ||
      it->second.op.transfer_dst == nullptr) {
    return nullptr;  // Unknown or wrong size: checked with the response.
  }
  // Safe to write outside the lock: the operation completes (and its
  // destination may be released) only on this same thread, after this copy,
  // or once the transport is gone.
  it->second.op.delivered = true;
  return it->second.op.transfer_dst;
}

void StreamChannel::CompleteFromResponse(
    PendingOp op, const tpu_driver::StreamResponse::Entry& entry) {
  absl::Status status = StatusFromWire(entry.status());
  if (status.ok() && op.transfer_bytes >= 0 && !op.delivered) {
    const std::string& data = entry.transfer_from().data();
    if (!entry.has_transfer_from() ||
        static_cast<int64_t>(data.size()) != op.transfer_bytes) {
      status = absl::DataLossError(
          absl::StrCat("transfer from device (", op.event->id().ToString(),
                       ") on ", name_, " of ", address_, ": expected ",
                       op.transfer_bytes, " bytes, received ",
                       entry.has_transfer_from() ? absl::StrCat(data.size())
                                                 : std::string("no data")));
    } else if (!data.empty()) {
      std::memcpy(op.transfer_dst, data.data(), data.size());
    }
  }
  if (status.ok() && op.program_shape != nullptr) {
    *op.program_shape = entry.compile().metadata().program_shape();
  }
  Complete(op.event, std::move(status));
}

void StreamChannel::OnDone(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    end_status_ = status;
  }
  FailAllPending();
}

absl::Status StreamChannel::EndedStatus(uint64_t wire_id) {
  const std::string op = EventId::FromInt(wire_id).ToString();
  if (shut_down_) {
    return absl::Status(
        shutdown_code_,
        absl::StrCat(op, " did not complete: ", shutdown_reason_));
  }
  return absl::UnavailableError(absl::StrCat(
      "TPU worker ", address_, " went away: its ", name_, " stream ended (",
      end_status_.ok() ? std::string("closed by the worker")
                       : end_status_.ToString(),
      ") before ", op, " completed"));
}

void StreamChannel::FailAllPending() {
  std::vector<std::pair<PendingOp, absl::Status>> failed;
  {
    absl::MutexLock lock(&mu_);
    failed.reserve(pending_.size());
    for (auto& [wire_id, pending] : pending_) {
      failed.emplace_back(std::move(pending.op), EndedStatus(wire_id));
    }
    pending_.clear();
    needed_ = 0;
    queue_.clear();
  }
  for (auto& [op, status] : failed) Complete(op.event, std::move(status));
}

}  // namespace tpu::driver
