#ifndef SOFTWARE_TPU_EMULATOR_WORKER_TEST_UTIL_H_
#define SOFTWARE_TPU_EMULATOR_WORKER_TEST_UTIL_H_

// A client of an in-process Worker for tests: sends request entries on a
// stream and waits (bounded) for the response entry of an operation.
//
// Thread safety: safe for concurrent use.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "emulator/worker/worker.h"
#include "proto/tpu_service.pb.h"

namespace tpu::emulator {

class TestStream {
 public:
  explicit TestStream(Worker* worker) {
    stream_ = worker->OpenStream(
        [this](const tpu_driver::StreamResponse& r, const TransferData& data) {
          tpu_driver::StreamResponse plain = r;
          InlineTransferData(data, &plain);
          absl::MutexLock lock(&mu_);
          ++batches_;
          for (const auto& e : plain.entry()) {
            responses_[e.operation_id()].push_back(e);
          }
        });
  }

  void Send(std::vector<tpu_driver::StreamRequest::Entry> entries) {
    tpu_driver::StreamRequest request;
    for (auto& e : entries) *request.add_entry() = std::move(e);
    stream_->Submit(request);
  }

  // The response of `id`, or nullopt if none came within `timeout`.
  std::optional<tpu_driver::StreamResponse::Entry> Await(
      int64_t id, absl::Duration timeout = absl::Seconds(30)) {
    absl::MutexLock lock(&mu_);
    auto arrived = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return responses_.count(id) > 0;
    };
    if (!mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout)) {
      return std::nullopt;
    }
    return responses_[id].front();
  }

  // Status code of `id`'s response; -1 if none arrived.
  int Code(int64_t id, absl::Duration timeout = absl::Seconds(30)) {
    auto e = Await(id, timeout);
    return e.has_value() ? e->status().code() : -1;
  }

  int ResponsesFor(int64_t id) {
    absl::MutexLock lock(&mu_);
    auto it = responses_.find(id);
    return it == responses_.end() ? 0 : static_cast<int>(it->second.size());
  }
  int batches() {
    absl::MutexLock lock(&mu_);
    return batches_;
  }

  WorkerStream* stream() { return stream_.get(); }
  void Reset() { stream_.reset(); }

 private:
  absl::Mutex mu_;
  std::map<int64_t, std::vector<tpu_driver::StreamResponse::Entry>> responses_
      ABSL_GUARDED_BY(mu_);
  int batches_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<WorkerStream> stream_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_WORKER_TEST_UTIL_H_
