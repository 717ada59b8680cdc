#include "emulator/worker/response_sink.h"

#include <utility>

namespace tpu::emulator {
namespace {

// Keeps one StreamResponse far below gRPC's 2 GiB message limit; a single
// larger entry still goes out alone.
constexpr int64_t kMaxBatchBytes = int64_t{32} << 20;

}  // namespace

std::unique_ptr<tpu_driver::StreamResponse::Entry> MakeResponseEntry(
    int64_t operation_id, const absl::Status& status) {
  auto entry = std::make_unique<tpu_driver::StreamResponse::Entry>();
  entry->set_operation_id(operation_id);
  entry->mutable_status()->set_code(static_cast<int32_t>(status.code()));
  // An empty message is left unset (it reads back the same): setting it costs
  // an allocation per operation, a good part of a small operation's cost.
  if (!status.message().empty()) {
    entry->mutable_status()->set_message(std::string(status.message()));
  }
  return entry;
}

ResponseSink::ResponseSink(Deliver deliver) : deliver_(std::move(deliver)) {}

void ResponseSink::Expect(int64_t count) {
  absl::MutexLock lock(&mu_);
  outstanding_ += count;
}

void ResponseSink::RespondStatus(int64_t operation_id,
                                 const absl::Status& status) {
  Respond(MakeResponseEntry(operation_id, status));
}

void ResponseSink::Respond(
    std::unique_ptr<tpu_driver::StreamResponse::Entry> entry,
    std::shared_ptr<AlignedBuffer> payload) {
  absl::MutexLock lock(&mu_);
  if (detached_) return;
  pending_.push_back({std::move(entry), std::move(payload)});
  if (!delivering_ && holds_ == 0) DeliverPending();
}

void ResponseSink::Hold() {
  absl::MutexLock lock(&mu_);
  ++holds_;
}

void ResponseSink::Release() {
  absl::MutexLock lock(&mu_);
  if (--holds_ == 0 && !delivering_ && !detached_) DeliverPending();
}

void ResponseSink::DeliverPending() {
  // Marked as delivering throughout, so that Detach() on another thread waits
  // for the callbacks below to return.
  delivering_ = true;
  delivering_thread_ = std::this_thread::get_id();
  while (!detached_) {
    if (!pending_.empty()) {
      tpu_driver::StreamResponse batch;
      TransferData data;
      int64_t bytes = 0;
      size_t taken = 0;
      for (; taken < pending_.size(); ++taken) {
        Pending& next = pending_[taken];
        const int64_t entry_bytes =
            static_cast<int64_t>(next.entry->ByteSizeLong()) +
            (next.payload == nullptr ? 0 : next.payload->size());
        if (taken > 0 && bytes + entry_bytes > kMaxBatchBytes) break;
        bytes += entry_bytes;
        batch.mutable_entry()->AddAllocated(next.entry.release());
        if (next.payload != nullptr) {
          data.resize(taken + 1);
          data[taken] = std::move(next.payload);
        }
      }
      pending_.erase(pending_.begin(), pending_.begin() + taken);
      outstanding_ -= static_cast<int64_t>(taken);
      mu_.Unlock();
      deliver_(batch, data);
      mu_.Lock();
      continue;
    }
    if (outstanding_ <= 0 && on_drained_) {
      std::function<void()> done = std::move(on_drained_);
      on_drained_ = nullptr;
      mu_.Unlock();
      done();
      mu_.Lock();
      continue;
    }
    break;
  }
  delivering_ = false;
  delivering_thread_ = std::thread::id();
}

void ResponseSink::OnDrained(std::function<void()> done) {
  absl::MutexLock lock(&mu_);
  if (detached_) return;
  on_drained_ = std::move(done);
  if (!delivering_ && holds_ == 0) DeliverPending();
}

void ResponseSink::Detach() {
  absl::MutexLock lock(&mu_);
  detached_ = true;
  pending_.clear();
  on_drained_ = nullptr;
  on_drop_ = nullptr;
  if (delivering_ && delivering_thread_ == std::this_thread::get_id()) return;
  const bool in_drop =
      dropping_ > 0 && dropping_thread_ == std::this_thread::get_id();
  auto idle = [this, in_drop]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !delivering_ && (in_drop || dropping_ == 0);
  };
  mu_.Await(absl::Condition(&idle));
}

void ResponseSink::SetDropHandler(
    std::function<void(const absl::Status&)> handler) {
  absl::MutexLock lock(&mu_);
  on_drop_ = std::move(handler);
}

void ResponseSink::Drop(const absl::Status& status) {
  std::function<void(const absl::Status&)> handler;
  {
    absl::MutexLock lock(&mu_);
    if (detached_) return;
    // Detached as Detach() does, but the handler is kept: until it returns,
    // a Detach on another thread (the transport going away) waits for it.
    detached_ = true;
    pending_.clear();
    on_drained_ = nullptr;
    handler = std::move(on_drop_);
    on_drop_ = nullptr;
    if (handler) {
      ++dropping_;
      dropping_thread_ = std::this_thread::get_id();
    }
    if (!delivering_ || delivering_thread_ != std::this_thread::get_id()) {
      auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !delivering_;
      };
      mu_.Await(absl::Condition(&idle));
    }
  }
  if (!handler) return;
  handler(status);
  absl::MutexLock lock(&mu_);
  --dropping_;
}

int64_t ResponseSink::outstanding() const {
  absl::MutexLock lock(&mu_);
  return outstanding_;
}

}  // namespace tpu::emulator
