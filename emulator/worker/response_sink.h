#ifndef SOFTWARE_TPU_EMULATOR_RESPONSE_SINK_H_
#define SOFTWARE_TPU_EMULATOR_RESPONSE_SINK_H_

// Collects the response entries of one stream and delivers them in batches.
//
// There is no writer thread: the thread that adds an entry while no delivery
// is in progress becomes the deliverer and keeps delivering until nothing is
// pending; entries added meanwhile by other threads ride along in the next
// batch. So a burst of completions goes out as a few large StreamResponses,
// and a lone completion goes out at once.
//
// Thread safety: safe for concurrent use. The delivery callback is never run
// concurrently with itself nor after Detach() returns.

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "emulator/worker/transfer_data.h"
#include "proto/tpu_service.pb.h"

namespace tpu::emulator {

class ResponseSink {
 public:
  using Deliver = std::function<void(const tpu_driver::StreamResponse&,
                                     const TransferData&)>;

  explicit ResponseSink(Deliver deliver);
  ResponseSink(const ResponseSink&) = delete;
  ResponseSink& operator=(const ResponseSink&) = delete;

  // `count` more operations will respond.
  void Expect(int64_t count = 1);
  // Delivers `entry` (echoing its operation id) with the transfer_from data
  // `payload` beside it, if not null. Dropped after Detach().
  void Respond(std::unique_ptr<tpu_driver::StreamResponse::Entry> entry,
               std::shared_ptr<AlignedBuffer> payload = nullptr);
  // Convenience: an entry with just the status.
  void RespondStatus(int64_t operation_id, const absl::Status& status);

  // Between Hold() and Release(), responses only accumulate; Release()
  // delivers them as one batch. A stream holds while it submits one request,
  // so everything that completes inline goes out in one response message.
  // Holds nest.
  void Hold();
  void Release();

  // Runs `done` once every expected response was delivered (right away if
  // none is outstanding). Replaces an earlier callback.
  void OnDrained(std::function<void()> done);

  // No deliveries after this returns (waits for one in progress on another
  // thread). Safe to call from inside the delivery callback.
  void Detach();

  int64_t outstanding() const;

  // What the transport does when the stream must end abruptly (a fault
  // rule's drop_stream): e.g. end the call with an error. Transports that
  // cannot end a stream leave it unset.
  void SetDropHandler(std::function<void(const absl::Status&)> handler);
  // Ends the stream abruptly: detaches (nothing more is delivered), then
  // runs the drop handler with `status`, once.
  void Drop(const absl::Status& status);

 private:
  void DeliverPending() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Deliver deliver_;

  mutable absl::Mutex mu_;
  struct Pending {
    std::unique_ptr<tpu_driver::StreamResponse::Entry> entry;
    std::shared_ptr<AlignedBuffer> payload;
  };
  std::vector<Pending> pending_ ABSL_GUARDED_BY(mu_);
  int64_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  bool delivering_ ABSL_GUARDED_BY(mu_) = false;
  int holds_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread::id delivering_thread_ ABSL_GUARDED_BY(mu_);
  bool detached_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> on_drained_ ABSL_GUARDED_BY(mu_);
  std::function<void(const absl::Status&)> on_drop_ ABSL_GUARDED_BY(mu_);
  int dropping_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread::id dropping_thread_ ABSL_GUARDED_BY(mu_);
};

// A response entry for `operation_id` with `status` (code always set).
std::unique_ptr<tpu_driver::StreamResponse::Entry> MakeResponseEntry(
    int64_t operation_id, const absl::Status& status);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_RESPONSE_SINK_H_
