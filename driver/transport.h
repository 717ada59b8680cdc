#ifndef SOFTWARE_TPU_DRIVER_TRANSPORT_H_
#define SOFTWARE_TPU_DRIVER_TRANSPORT_H_

// How StreamDriver reaches a worker: the four unary calls of the
// CloudTpuDriver service and its bidirectional StreamExecute stream. The
// protocol logic (event table, batching, dependencies) is written once in
// StreamDriver; implementations only move messages: gRPC (driver/grpc/), the
// in-process emulator (driver/local/), and fault-injecting wrappers in tests,
// in the spirit of LevelDB's Env.
//
// Thread safety: Transport is safe for concurrent use. A TransportStream's
// Write and WritesDone are called from one thread at a time (the stream's
// writer, a submitting thread when WritesWithoutBlocking, or a thread waiting
// for its operation), ReadNext likewise (concurrently with a Write); Cancel
// may be called from any thread at any time.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/control.pb.h"
#include "proto/tpu_service.pb.h"

namespace tpu::driver {

// One request entry on its way to the worker. The payload of a transfer_to is
// not copied into `entry` (its transfer_to.data is left unset): `payload`
// points at the caller's bytes, which stay valid and unchanged until the
// operation's response arrives or the stream ends. The transport puts them on
// the wire as transfer_to.data.
struct OutgoingEntry {
  tpu_driver::StreamRequest::Entry entry;
  absl::string_view payload;
};

// Destroying a TransportStream cancels it if it has not ended and waits
// until on_done has run; once the destructor returns no callback runs again.
class TransportStream {
 public:
  virtual ~TransportStream() = default;

  // Sends `batch` (in order). May block for flow control; returns false when
  // the stream is broken or cancelled, in which case on_done runs (or ran).
  virtual bool Write(std::vector<OutgoingEntry>& batch) = 0;

  // Write never blocks for long (it hands the batch to an in-process worker),
  // so the thread submitting an operation may write it itself instead of
  // waking a writer thread. Responses may then arrive on that thread, inside
  // Write.
  virtual bool WritesWithoutBlocking() const { return false; }

  // Responses arrive only while some thread is inside ReadNext (gRPC's
  // synchronous API): the thread that waits for a response may read it
  // itself, with no hand-off between threads. When false (the default), the
  // transport delivers responses on its own threads and ReadNext is never
  // called.
  virtual bool ReadsOnDemand() const { return false; }

  // Reads the next message and hands it to on_response on this thread; at
  // the end of the stream runs on_done on this thread and returns false, as
  // does every later call. Blocks until a message arrives or the stream ends
  // (Cancel ends it). Called by one thread at a time.
  virtual bool ReadNext() { return false; }

  // Half-closes: no more Writes. The worker then answers what is in flight and
  // ends the stream, which calls on_done. Does not wait for that.
  virtual void WritesDone() = 0;

  // Ends the stream now: a blocked Write returns false, on_done runs soon
  // with an error unless it already ran. Idempotent.
  virtual void Cancel() = 0;
};

// Receives one stream's traffic. Called on transport threads (or the thread
// inside ReadNext), never concurrently for one stream; on_done exactly once,
// after the last on_response. Neither may block for long.
struct StreamCallbacks {
  std::function<void(const tpu_driver::StreamResponse&)> on_response;
  // OK when the worker ended the stream normally after WritesDone.
  std::function<void(const absl::Status&)> on_done;
  // Where the `bytes` bytes of transfer_from data for operation `wire_id` go,
  // or null. A transport may use it to copy data straight to its destination
  // (then the entry handed to on_response has transfer_from.data empty); it
  // calls it on the thread that then calls on_response for that entry, and
  // must call on_done on that thread too (or after it is joined): the
  // destination stays valid only until its operation completes.
  std::function<void*(uint64_t wire_id, int64_t bytes)> transfer_destination;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // The worker's address as users wrote it, for error messages
  // ("grpc://10.0.0.2:8470", "local://").
  virtual std::string address() const = 0;

  // Opens a session. Waits at most `timeout` for the worker to answer; a
  // worker that does not is UNAVAILABLE naming the address.
  virtual absl::StatusOr<tpu_driver::OpenResponse> Open(
      const tpu_driver::OpenRequest& request, absl::Duration timeout) = 0;
  virtual absl::Status Close(const tpu_driver::CloseRequest& request) = 0;
  virtual absl::Status Reset(const tpu_driver::ResetRequest& request) = 0;
  virtual absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() = 0;
  // The emulator's wait report (proto/control.proto); UNIMPLEMENTED where
  // the worker has no control service.
  virtual absl::StatusOr<tpu_emulator::WaitReport> GetWaitReport() {
    return absl::UnimplementedError("the worker has no control service");
  }

  // Starts a StreamExecute stream. Never returns null; a stream that cannot
  // be established reports it through on_done.
  virtual std::unique_ptr<TransportStream> OpenStream(
      StreamCallbacks callbacks) = 0;
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_TRANSPORT_H_
