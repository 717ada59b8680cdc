#include "driver/grpc/response_decoder.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/wire_slices.h"

namespace tpu {
namespace {

// The field numbers this decoder looks into.
constexpr uint32_t kResponseEntry = 20;     // StreamResponse.entry
constexpr uint32_t kEntryTransferFrom = 3;  // Entry.transfer_from
constexpr uint32_t kEntryOperationId = 11;  // Entry.operation_id
constexpr uint32_t kTransferFromData = 2;   // TransferFromDeviceResponse.data

absl::Status Malformed(const std::string& what) {
  return absl::DataLossError(
      absl::StrCat("malformed StreamResponse from the worker: ", what));
}

// Where one entry's transfer_from data sits, if it has any.
struct EntryScan {
  bool has_operation_id = false;
  uint64_t operation_id = 0;
  // The transfer_from field, tag included, and the data inside it.
  int transfer_from_fields = 0;
  size_t field_begin = 0;
  size_t field_end = 0;
  bool has_data = false;
  size_t data_offset = 0;
  size_t data_size = 0;
};

bool ScanTransferFrom(const SliceReader& reader, size_t offset, size_t end,
                      EntryScan* scan) {
  while (offset < end) {
    uint64_t tag;
    if (!reader.ReadVarint(&offset, &tag)) return false;
    if (tag == wire::LengthDelimitedTag(kTransferFromData)) {
      size_t length;
      if (!reader.ReadLength(end, &offset, &length)) return false;
      scan->has_data = true;
      scan->data_offset = offset;
      scan->data_size = length;
      offset += length;
    } else if (!reader.SkipValue(wire::WireTypeOf(tag), end, &offset)) {
      return false;
    }
  }
  return true;
}

bool ScanEntry(const SliceReader& reader, size_t offset, size_t end,
               EntryScan* scan) {
  while (offset < end) {
    const size_t field_begin = offset;
    uint64_t tag;
    if (!reader.ReadVarint(&offset, &tag)) return false;
    if (tag == (kEntryOperationId << 3 | wire::kVarint)) {
      if (!reader.ReadVarint(&offset, &scan->operation_id)) return false;
      scan->has_operation_id = true;
    } else if (tag == wire::LengthDelimitedTag(kEntryTransferFrom)) {
      size_t length;
      if (!reader.ReadLength(end, &offset, &length) ||
          !ScanTransferFrom(reader, offset, offset + length, scan)) {
        return false;
      }
      offset += length;
      ++scan->transfer_from_fields;
      scan->field_begin = field_begin;
      scan->field_end = offset;
    } else if (!reader.SkipValue(wire::WireTypeOf(tag), end, &offset)) {
      return false;
    }
  }
  return offset == end;
}

}  // namespace

absl::Status DecodeStreamResponse(const grpc::ByteBuffer& buffer,
                                  const TransferDestination& destination,
                                  tpu_driver::StreamResponse* response) {
  response->Clear();
  if (buffer.Length() == 0) return absl::OkStatus();  // No entries.
  SliceReader reader;
  if (!SliceReader::FromByteBuffer(buffer, &reader)) {
    return Malformed("unreadable buffer");
  }
  size_t offset = 0;
  std::string bytes;
  while (offset < reader.size()) {
    uint64_t tag;
    if (!reader.ReadVarint(&offset, &tag)) return Malformed("bad tag");
    if (tag != wire::LengthDelimitedTag(kResponseEntry)) {
      // Fields this client does not know: skip, as protobuf would.
      if (!reader.SkipValue(wire::WireTypeOf(tag), reader.size(), &offset)) {
        return Malformed("bad field");
      }
      continue;
    }
    size_t length;
    if (!reader.ReadLength(reader.size(), &offset, &length)) {
      return Malformed("truncated entry");
    }
    const size_t end = offset + length;
    EntryScan scan;
    if (!ScanEntry(reader, offset, end, &scan)) {
      return Malformed("bad entry");
    }
    void* dst = nullptr;
    if (scan.has_data && scan.has_operation_id && scan.data_size > 0 &&
        scan.transfer_from_fields == 1 && destination) {
      dst =
          destination(scan.operation_id, static_cast<int64_t>(scan.data_size));
    }
    tpu_driver::StreamResponse::Entry* entry = response->add_entry();
    if (dst != nullptr) {
      // The payload goes straight to its destination; the rest of the entry
      // (every field but transfer_from) is parsed as usual.
      reader.Copy(scan.data_offset, scan.data_size, dst);
      const size_t before = scan.field_begin - offset;
      const size_t after = end - scan.field_end;
      bytes.resize(before + after);
      reader.Copy(offset, before, bytes.data());
      reader.Copy(scan.field_end, after, bytes.data() + before);
      if (!entry->ParsePartialFromString(bytes)) {
        return Malformed("entry does not parse");
      }
      entry->mutable_transfer_from()->set_data("");
    } else {
      bytes.resize(length);
      reader.Copy(offset, length, bytes.data());
      if (!entry->ParsePartialFromString(bytes)) {
        return Malformed("entry does not parse");
      }
    }
    if (!entry->IsInitialized()) {
      return Malformed(absl::StrCat("entry lacks required fields: ",
                                    entry->InitializationErrorString()));
    }
    offset = end;
  }
  return absl::OkStatus();
}

}  // namespace tpu
