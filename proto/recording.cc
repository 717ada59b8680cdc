#include "proto/recording.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace tpu {

absl::StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Create(
    const std::string& path) {
  FILE* file = fopen(path.c_str(), "wbe");
  if (file == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "cannot create the recording file ", path, ": ", strerror(errno),
        ". Check that its directory exists and is writable."));
  }
  return std::unique_ptr<RecordWriter>(new RecordWriter(path, file));
}

RecordWriter::~RecordWriter() {
  absl::MutexLock lock(&mu_);
  fclose(file_);
}

absl::Status RecordWriter::Append(
    const google::protobuf::MessageLite& message) {
  // Serialized before taking the lock: a large transfer must not hold up
  // other threads' records while it is encoded.
  const uint64_t length = message.ByteSizeLong();
  std::string bytes(sizeof(length) + length, '\0');
  memcpy(bytes.data(), &length, sizeof(length));
  if (!message.SerializePartialToArray(bytes.data() + sizeof(length),
                                       static_cast<int>(length))) {
    return absl::InternalError(
        absl::StrCat("cannot serialize a record for ", path_));
  }
  absl::MutexLock lock(&mu_);
  return WriteLocked(bytes);
}

absl::Status RecordWriter::WriteLocked(const std::string& bytes) {
  if (!error_.ok()) return error_;
  if (fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size() ||
      fflush(file_) != 0) {
    error_ = absl::UnavailableError(
        absl::StrCat("cannot write to the recording file ", path_, ": ",
                     strerror(errno), "; the recording is incomplete."));
  }
  return error_;
}

absl::StatusOr<std::unique_ptr<RecordReader>> RecordReader::Open(
    const std::string& path) {
  FILE* file = fopen(path.c_str(), "rbe");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open the recording ", path,
                                            ": ", strerror(errno)));
  }
  struct stat info;
  if (fstat(fileno(file), &info) != 0 || !S_ISREG(info.st_mode)) {
    fclose(file);
    return absl::InvalidArgumentError(
        absl::StrCat("the recording ", path, " is not a regular file"));
  }
  return std::unique_ptr<RecordReader>(
      new RecordReader(path, file, static_cast<int64_t>(info.st_size)));
}

RecordReader::~RecordReader() { fclose(file_); }

absl::StatusOr<std::optional<std::string>> RecordReader::NextPayload() {
  if (offset_ == size_) return std::nullopt;
  last_offset_ = offset_;
  const int64_t left = size_ - offset_;
  uint64_t length = 0;
  if (left < static_cast<int64_t>(sizeof(length))) {
    return absl::DataLossError(absl::StrCat(
        path_, " is truncated: the record at byte offset ", offset_,
        " has only ", left,
        " of the 8 bytes of its length. The recording "
        "was cut short (the recording process died while writing?); the "
        "records before that offset are intact."));
  }
  if (fread(&length, 1, sizeof(length), file_) != sizeof(length)) {
    return absl::DataLossError(
        absl::StrCat("cannot read ", path_, " at byte offset ", offset_));
  }
  const uint64_t body_left = static_cast<uint64_t>(left) - sizeof(length);
  if (length > body_left) {
    return absl::DataLossError(absl::StrCat(
        path_, " is truncated or corrupt: the record at byte offset ", offset_,
        " claims ", length, " bytes but only ", body_left,
        " follow its length. The records before that offset are intact."));
  }
  std::string payload(length, '\0');
  if (fread(payload.data(), 1, length, file_) != length) {
    return absl::DataLossError(
        absl::StrCat("cannot read ", path_, " at byte offset ", offset_));
  }
  offset_ += sizeof(length) + length;
  return payload;
}

absl::StatusOr<std::optional<tpu_driver::StreamRequest::Entry>>
RecordReader::NextEntry() {
  absl::StatusOr<std::optional<std::string>> payload = NextPayload();
  if (!payload.ok()) return payload.status();
  if (!payload->has_value()) return std::nullopt;
  tpu_driver::StreamRequest::Entry entry;
  // Partial: a recording is judged as the worker judges a request; a
  // missing required field of a request is the replayed operation's error.
  if (!entry.ParsePartialFromString(**payload) || !entry.has_operation_id()) {
    return absl::DataLossError(absl::StrCat(
        path_, " is corrupt: the record at byte offset ", last_offset_, " (",
        (*payload)->size(),
        " bytes) is not a tpu_driver.StreamRequest.Entry with an "
        "operation_id. Is this a recording of record:// or --record_dir?"));
  }
  return entry;
}

absl::StatusOr<std::optional<tpu_emulator::OperationResult>>
RecordReader::NextResult() {
  absl::StatusOr<std::optional<std::string>> payload = NextPayload();
  if (!payload.ok()) return payload.status();
  if (!payload->has_value()) return std::nullopt;
  tpu_emulator::OperationResult result;
  if (!result.ParseFromString(**payload)) {
    return absl::DataLossError(absl::StrCat(
        path_, " is corrupt: the record at byte offset ", last_offset_, " (",
        (*payload)->size(), " bytes) is not a tpu_emulator.OperationResult."));
  }
  return result;
}

std::string EntryKind(const tpu_driver::StreamRequest::Entry& entry) {
  using Entry = tpu_driver::StreamRequest::Entry;
  switch (entry.request_case()) {
    case Entry::kAlloc:
      return "alloc";
    case Entry::kAllocTuple:
      return "alloc_tuple";
    case Entry::kDealloc:
      return "dealloc";
    case Entry::kTransferTo:
      return "transfer_to";
    case Entry::kTransferFrom:
      return "transfer_from";
    case Entry::kTransferFromTo:
      return "transfer_from_to";
    case Entry::kCompile:
      return "compile";
    case Entry::kLoad:
      return "load";
    case Entry::kUnload:
      return "unload";
    case Entry::kExecute:
      return "execute";
    case Entry::REQUEST_NOT_SET:
      return "empty";
  }
  return "unknown";
}

}  // namespace tpu
