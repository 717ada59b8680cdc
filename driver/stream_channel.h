#ifndef SOFTWARE_TPU_DRIVER_STREAM_CHANNEL_H_
#define SOFTWARE_TPU_DRIVER_STREAM_CHANNEL_H_

// One StreamExecute stream of a StreamDriver (one per core, plus the host
// stream): a queue of outgoing entries flushed in batches by a writer thread
// (or, when the transport's writes never block, by the submitting thread),
// and the table of operations awaiting their response on this stream.
//
// When the transport reads on demand (gRPC), a thread that awaits an
// operation does the I/O itself: it writes what is still queued and reads
// responses until its own arrives, so a round trip involves no thread
// hand-off on the client, as on a bare gRPC stream. Other operations it
// completes run their callbacks on the writer thread. A reader thread reads
// when someone waits without driving (callbacks, timed waits), when the
// stream closes or breaks, and responses nobody asked for (see
// StreamChannelOptions).
//
// Every operation given to Submit completes exactly once: with its response,
// or with an error when the stream breaks (UNAVAILABLE naming the worker) or
// the driver closes (ABORTED). No caller waits forever.
//
// Thread safety: safe for concurrent use.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "driver/completion_event.h"
#include "driver/transport.h"
#include "proto/xla_data.pb.h"

namespace tpu::driver {

// What to do with an operation's response besides completing its event.
struct PendingOp {
  std::shared_ptr<CompletionEvent> event;
  // transfer_from: where the data goes and how many bytes must arrive.
  void* transfer_dst = nullptr;
  int64_t transfer_bytes = -1;  // -1: not a transfer_from
  // The transport already copied the data to transfer_dst.
  bool delivered = false;
  // compile: receives the program shape before the event completes.
  std::shared_ptr<xla::ProgramShapeProto> program_shape;
};

// When a channel whose transport reads on demand sends and reads by itself.
struct StreamChannelOptions {
  // How long the writer leaves queued entries for a thread that awaits one
  // of them to send them itself; sooner when someone waits for one without
  // driving (a callback, a timed wait) or when 256 entries are queued.
  absl::Duration coalescing_window = absl::Microseconds(50);
  // Responses nobody waits for are read by the reader thread once nobody
  // read any for this long: they cost nothing while unread, and a thread
  // that awaits one reads them itself.
  absl::Duration lazy_read_delay = absl::Milliseconds(10);
  // How often an idle reader thread looks for such responses.
  absl::Duration idle_check = absl::Milliseconds(100);
};

class StreamChannel {
 public:
  // `name` says which stream this is ("core 3", "host") and `address` which
  // worker, for error messages. REQUIRES: `transport` outlives this channel.
  StreamChannel(std::string name, std::string address, Transport* transport,
                const StreamChannelOptions& options = StreamChannelOptions());
  // Cancels the stream if Shutdown was not called.
  ~StreamChannel();

  StreamChannel(const StreamChannel&) = delete;
  StreamChannel& operator=(const StreamChannel&) = delete;

  // Queues `entry` for the worker; `op` says how to complete it. If the
  // stream has ended, op.event fails right away instead.
  void Submit(OutgoingEntry&& entry, PendingOp op);

  // Graceful end: the writer sends what is queued, then half-closes; the
  // worker answers what is in flight and ends the stream.
  void BeginClose();
  // Waits until the stream ended, at most until `deadline`.
  bool WaitEnded(absl::Time deadline);

  // Stops the writer, tears down the stream (cancelling it if it has not
  // ended) and fails what is still pending with `code` and `reason`. Later
  // Submits fail with the same. Idempotent; REQUIRES: not called concurrently
  // with itself.
  void Shutdown(absl::StatusCode code, const std::string& reason);

  // Operations submitted and not yet completed (for tests and benchmarks).
  int64_t NumPendingForTesting();

 private:
  class Progress;
  // An operation awaiting its response, and whether someone waits for it
  // without driving the stream (then the reader thread must read).
  struct Pending {
    PendingOp op;
    bool needed = false;
  };

  void WriterLoop();
  void ReaderLoop();
  // Does the I/O that completes `wire_id` on the calling thread while it
  // can (see Progress).
  void Drive(uint64_t wire_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Someone waits for `wire_id` without driving: the reader thread reads
  // until it completes.
  void MarkNeeded(uint64_t wire_id) ABSL_LOCKS_EXCLUDED(mu_);
  void MarkNeededLocked(Pending& pending) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads one message on the calling thread. REQUIRES: the caller took the
  // read turn (reading_); gives it back.
  void ReadOnce() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes `batch` on the calling thread. REQUIRES: the caller took the
  // write turn (writing_); gives it back.
  void WriteBatch(std::vector<OutgoingEntry>& batch) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes `wire_id` from pending_ (if there) into `op`.
  bool TakePendingLocked(uint64_t wire_id, PendingOp* op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes what is queued on the calling thread until the queue is empty.
  // REQUIRES: the caller took the write turn (writing_).
  void WriteQueued() ABSL_LOCKS_EXCLUDED(mu_);
  void OnResponse(const tpu_driver::StreamResponse& response);
  void OnDone(const absl::Status& status);
  void* TransferDestination(uint64_t wire_id, int64_t bytes);
  // Completes `event`; on a thread inside an inline write its callbacks run
  // later on the writer thread.
  void Complete(const std::shared_ptr<CompletionEvent>& event,
                absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);
  // Completes `op` from a response entry.
  void CompleteFromResponse(PendingOp op,
                            const tpu_driver::StreamResponse::Entry& entry);
  // The status for an operation that will never get its response.
  absl::Status EndedStatus(uint64_t wire_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails every pending operation. REQUIRES: ended_ is set.
  void FailAllPending() ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after construction.
  const std::string name_;
  const std::string address_;
  Transport* const transport_;
  const StreamChannelOptions options_;

  absl::Mutex mu_;
  std::vector<OutgoingEntry> queue_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  // Pending operations marked needed.
  int64_t needed_ ABSL_GUARDED_BY(mu_) = 0;
  // Response messages read so far.
  int64_t messages_read_ ABSL_GUARDED_BY(mu_) = 0;
  // Some thread is inside stream_->ReadNext (the read turn).
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  // ReadNext returned false: on_done ran.
  bool read_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool writer_exit_ ABSL_GUARDED_BY(mu_) = false;
  // Some thread is inside stream_->Write: writes take turns so that batches
  // reach the worker in the order they were queued.
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  // A Write returned false: the stream is broken and on_done follows.
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  // Callbacks of operations completed inside an inline write, for the
  // writer thread to run.
  std::vector<std::function<void()>> deferred_ ABSL_GUARDED_BY(mu_);
  // The stream ended (on_done ran) or was shut down: nothing more arrives.
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
  // Set by Shutdown: overrides how pending operations fail.
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::StatusCode shutdown_code_ ABSL_GUARDED_BY(mu_) = absl::StatusCode::kOk;
  std::string shutdown_reason_ ABSL_GUARDED_BY(mu_);

  // Created in the constructor, destroyed in Shutdown (after the writer has
  // exited, so Write never races with destruction).
  std::unique_ptr<TransportStream> stream_;
  // stream_->WritesWithoutBlocking(): Submit writes on the caller's thread.
  bool write_inline_ = false;
  // stream_->ReadsOnDemand(): events carry progress_, and reader_ runs.
  bool read_on_demand_ = false;
  std::shared_ptr<Progress> progress_;
  std::thread writer_;
  std::thread reader_;
};

// The absl status carried by a response entry; codes outside absl's range
// become UNKNOWN (the message says which code arrived).
absl::Status StatusFromWire(const tpu_driver::StatusMessage& message);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_STREAM_CHANNEL_H_
