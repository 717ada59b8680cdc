#ifndef SOFTWARE_TPU_EMULATOR_SERVICE_SESSION_RECORDER_H_
#define SOFTWARE_TPU_EMULATOR_SERVICE_SESSION_RECORDER_H_

// tpu_emulator --record_dir=DIR: records each client's session as the
// worker receives it, in the record:// format (proto/recording.h), so what
// an unmodified program did can be replayed with tools/tpu_replay.
//
// One StreamExecute call acts for one client (the one its first entry
// names), so each call becomes one file, DIR/client<C>_session<N>.log, with
// its results side file beside it (.log.results). Ids are the client's own
// operation ids with the client id stripped (`client << 44 | op` -> op), so
// they are local to the recording; entries of other clients (which the
// worker rejects) and waits on other clients' operations are left out. The file is created when the first entry
// arrives.
//
// A recording that cannot be written is reported once on stderr and
// dropped; it never affects the session.
//
// Thread safety: OnRequest is called by the stream's reader, OnResponse by
// worker threads; both may run concurrently.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "emulator/worker/transfer_data.h"
#include "proto/recording.h"
#include "proto/tpu_service.pb.h"

namespace tpu::emulator {

// Where sessions are recorded, shared by the streams of one server.
class RecordDirectory {
 public:
  // INVALID_ARGUMENT unless `dir` is an existing writable directory.
  static absl::StatusOr<std::shared_ptr<RecordDirectory>> Open(
      const std::string& dir);

  const std::string& dir() const { return dir_; }
  // Numbers sessions in the order they start, from 1.
  int64_t NextSession() { return ++sessions_; }

 private:
  explicit RecordDirectory(std::string dir) : dir_(std::move(dir)) {}

  const std::string dir_;
  std::atomic<int64_t> sessions_{0};
};

class SessionRecorder {
 public:
  explicit SessionRecorder(std::shared_ptr<RecordDirectory> directory)
      : directory_(std::move(directory)) {}

  void OnRequest(const tpu_driver::StreamRequest& request,
                 const TransferData& transfer_data);
  void OnResponse(const tpu_driver::StreamResponse& response,
                  const TransferData& transfer_data);

 private:
  // Creates the files for `client` if this is the session's first entry.
  // False if the session is not recorded (another client's entry, or the
  // files could not be written).
  bool ReadyFor(uint32_t client) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Drop(const absl::Status& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<RecordDirectory> directory_;
  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t client_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<RecordWriter> log_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<RecordWriter> results_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SERVICE_SESSION_RECORDER_H_
