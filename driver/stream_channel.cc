#include "driver/stream_channel.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tpu::driver {

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
      return;
    }
  }
  op.event->Complete(std::move(refused));
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
  // stream_ is only reset below, by the one thread that joins the writer.
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
  bool half_close = false;
  std::vector<OutgoingEntry> batch;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || writer_exit_ || closing_ || ended_;
      };
      mu_.Await(absl::Condition(&ready));
      if (ended_ || writer_exit_) break;
      if (queue_.empty()) {
        half_close = true;  // closing_, and everything queued was written
        break;
      }
      batch.swap(queue_);
    }
    // Entries queued meanwhile form the next batch: the busier the stream,
    // the larger the batches.
    if (!stream_->Write(batch)) break;
    batch.clear();
  }
  if (half_close) stream_->WritesDone();
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
  op.event->Complete(std::move(status));
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
  for (auto& [op, status] : failed) op.event->Complete(std::move(status));
}

}  // namespace tpu::driver
