#ifndef SOFTWARE_TPU_PROTO_RECORDING_H_
#define SOFTWARE_TPU_PROTO_RECORDING_H_

// Recordings of TPU driver sessions, in the format of TensorFlow's
// recording_tpu_driver.cc (`record://`), so a log written by the reference
// driver against a real TPU reads here unchanged:
//
//   log     := record*
//   record  := length payload
//   length  := uint64, native byte order (little-endian on x86 and ARM)
//   payload := `length` bytes: a serialized tpu_driver.StreamRequest.Entry
//
// Each entry's operation_id (and the handle it creates), its wait_for_ids
// and the handles it names are ids local to the recording; transfer_to
// entries carry their data. Beside a log PATH, PATH + ".results"
// (kResultsSuffix) holds tpu_emulator.OperationResult records framed the same
// way: each operation's status and every transfer_from's bytes.
//
// Both ends use this: the record:// driver and tpu_replay (driver/record/),
// and the worker's --record_dir (emulator/service/).
//
// Thread safety: RecordWriter is safe for concurrent use; RecordReader is
// thread-compatible.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/message_lite.h"
#include "proto/recording.pb.h"
#include "proto/tpu_service.pb.h"

namespace tpu {

inline constexpr absl::string_view kResultsSuffix = ".results";

// Appends length-framed messages to a file.
class RecordWriter {
 public:
  // Creates (or truncates) `path`. UNAVAILABLE naming the path and the
  // system's reason if it cannot.
  static absl::StatusOr<std::unique_ptr<RecordWriter>> Create(
      const std::string& path);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Writes one record and flushes it, so a crashed process leaves every
  // record it wrote readable. The first write error is kept and returned
  // from then on (the file is then incomplete).
  absl::Status Append(const google::protobuf::MessageLite& message);

  const std::string& path() const { return path_; }

 private:
  RecordWriter(std::string path, FILE* file)
      : path_(std::move(path)), file_(file) {}
  absl::Status WriteLocked(const std::string& bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  absl::Mutex mu_;
  FILE* file_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

// Reads length-framed records one at a time (a log may hold gigabytes of
// transfer data).
class RecordReader {
 public:
  // NOT_FOUND if `path` cannot be opened.
  static absl::StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path);
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // The next record's payload, or nullopt at the end of the file. DATA_LOSS
  // naming the file and the record's offset if the file ends inside a
  // record or a length exceeds what is left of the file.
  absl::StatusOr<std::optional<std::string>> NextPayload();

  // The next record parsed as a StreamRequest.Entry (lenient about the
  // required fields of the requests, as the worker is; operation_id must be
  // there). DATA_LOSS naming the offset if it is not one.
  absl::StatusOr<std::optional<tpu_driver::StreamRequest::Entry>> NextEntry();
  absl::StatusOr<std::optional<tpu_emulator::OperationResult>> NextResult();

  // Byte offset of the record NextPayload returned last.
  int64_t last_offset() const { return last_offset_; }

 private:
  RecordReader(std::string path, FILE* file, int64_t size)
      : path_(std::move(path)), file_(file), size_(size) {}

  const std::string path_;
  FILE* const file_;
  const int64_t size_;
  int64_t offset_ = 0;
  int64_t last_offset_ = 0;
};

// The operation kind of `entry` as the proto names it ("alloc",
// "transfer_to", ...), or "empty" when it carries none.
std::string EntryKind(const tpu_driver::StreamRequest::Entry& entry);

}  // namespace tpu

#endif  // SOFTWARE_TPU_PROTO_RECORDING_H_
