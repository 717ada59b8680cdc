#include "driver/stream_channel.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tpu::driver {
namespace {

// How deep the calling thread is inside inline writes (Submit on a transport
// whose writes never block): completions there defer their callbacks.
thread_local int tls_inline_writes = 0;

}  // namespace

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
                             Transport* transport)
    : name_(std::move(name)),
      address_(std::move(address)),
      transport_(transport) {
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
  writer_ = std::thread([this] { WriterLoop(); });
}

StreamChannel::~StreamChannel() {
  Shutdown(absl::StatusCode::kAborted,
           absl::StrCat("the TPU driver for ", address_, " was destroyed"));
}

void StreamChannel::Submit(OutgoingEntry entry, PendingOp op) {
  const uint64_t wire_id = entry.entry.operation_id();
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    if (ended_ || shut_down_) {
      refused = EndedStatus(wire_id);
    } else if (closing_) {
      refused = absl::FailedPreconditionError(absl::StrCat(
          EventId::FromInt(wire_id).ToString(),
          " was issued while the TPU driver for ", address_, " was closing"));
    } else {
      pending_.emplace(wire_id, std::move(op));
      queue_.push_back(std::move(entry));
      // Whoever is writing already (another thread, or this one further up
      // the stack when a response's callback submits) takes it along.
      if (!write_inline_ || writing_) return;
      writing_ = true;
    }
  }
  if (refused.ok()) {
    WriteQueued();
    return;
  }
  op.event->Complete(std::move(refused));
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
    ++tls_inline_writes;
    const bool written = stream_->Write(batch);
    --tls_inline_writes;
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
  if (tls_inline_writes == 0) {
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
  // (which exits only once no submitting thread is inside Write).
  if (writer_.joinable()) {
    stream_->Cancel();
    writer_.join();
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
      const bool written = stream_->Write(batch);
      batch.clear();
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!written) write_failed_ = true;  // on_done follows
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

void StreamChannel::OnResponse(const tpu_driver::StreamResponse& response) {
  const int n = response.entry_size();
  std::vector<PendingOp> ops(n);
  std::vector<bool> found(n, false);
  {
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < n; ++i) {
      auto it = pending_.find(response.entry(i).operation_id());
      // An unknown id is a response we no longer wait for (the operation
      // already failed locally) or a confused worker; either way, ignore it.
      if (it == pending_.end()) continue;
      ops[i] = std::move(it->second);
      pending_.erase(it);
      found[i] = true;
    }
  }
  for (int i = 0; i < n; ++i) {
    if (found[i]) CompleteFromResponse(std::move(ops[i]), response.entry(i));
  }
}

void* StreamChannel::TransferDestination(uint64_t wire_id, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(wire_id);
  if (it == pending_.end() || it->second.transfer_bytes != bytes ||
      it->second.transfer_dst == nullptr) {
    return nullptr;  // Unknown or wrong size: checked with the response.
  }
  // Safe to write outside the lock: the operation completes (and its
  // destination may be released) only on this same thread, after this copy,
  // or once the transport is gone.
  it->second.delivered = true;
  return it->second.transfer_dst;
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
    for (auto& [wire_id, op] : pending_) {
      failed.emplace_back(std::move(op), EndedStatus(wire_id));
    }
    pending_.clear();
    queue_.clear();
  }
  for (auto& [op, status] : failed) Complete(op.event, std::move(status));
}

}  // namespace tpu::driver
