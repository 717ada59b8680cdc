#include "driver/grpc/response_decoder.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tpu {
namespace {

// Wire types and the field numbers this decoder looks into.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;
constexpr uint32_t kResponseEntry = 20;     // StreamResponse.entry
constexpr uint32_t kEntryTransferFrom = 3;  // Entry.transfer_from
constexpr uint32_t kEntryOperationId = 11;  // Entry.operation_id
constexpr uint32_t kTransferFromData = 2;   // TransferFromDeviceResponse.data

// Reads a message spread over slices, by absolute offset.
class SliceReader {
 public:
  explicit SliceReader(std::vector<grpc::Slice> slices)
      : slices_(std::move(slices)) {
    starts_.reserve(slices_.size() + 1);
    size_t total = 0;
    for (const grpc::Slice& slice : slices_) {
      starts_.push_back(total);
      total += slice.size();
    }
    starts_.push_back(total);
  }

  size_t size() const { return starts_.back(); }

  // Copies [offset, offset + n) to `out`. REQUIRES: within size().
  void Copy(size_t offset, size_t n, void* out) const {
    char* dst = static_cast<char*>(out);
    size_t i = std::upper_bound(starts_.begin(), starts_.end(), offset) -
               starts_.begin() - 1;
    while (n > 0) {
      const size_t in_slice = offset - starts_[i];
      const size_t take = std::min(n, slices_[i].size() - in_slice);
      std::memcpy(dst, slices_[i].begin() + in_slice, take);
      dst += take;
      offset += take;
      n -= take;
      ++i;
    }
  }

  // A varint at *offset, advancing it; false if malformed or truncated.
  bool ReadVarint(size_t* offset, uint64_t* value) const {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (*offset >= size()) return false;
      uint8_t byte;
      Copy(*offset, 1, &byte);
      ++*offset;
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  // Skips the value of a field of `wire_type` at *offset; false if malformed.
  bool SkipValue(uint32_t wire_type, size_t end, size_t* offset) const {
    uint64_t length;
    switch (wire_type) {
      case kVarint:
        return ReadVarint(offset, &length) && *offset <= end;
      case kFixed64:
        *offset += 8;
        return *offset <= end;
      case kFixed32:
        *offset += 4;
        return *offset <= end;
      case kLengthDelimited:
        if (!ReadVarint(offset, &length) || length > end - *offset) {
          return false;
        }
        *offset += length;
        return true;
      default:
        return false;
    }
  }

 private:
  std::vector<grpc::Slice> slices_;
  std::vector<size_t> starts_;  // offset of each slice, then the total
};

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
    if (tag >> 3 == kTransferFromData && (tag & 7) == kLengthDelimited) {
      uint64_t length;
      if (!reader.ReadVarint(&offset, &length) || length > end - offset) {
        return false;
      }
      scan->has_data = true;
      scan->data_offset = offset;
      scan->data_size = length;
      offset += length;
    } else if (!reader.SkipValue(tag & 7, end, &offset)) {
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
    const uint32_t field = static_cast<uint32_t>(tag >> 3);
    const uint32_t wire_type = static_cast<uint32_t>(tag & 7);
    if (field == kEntryOperationId && wire_type == kVarint) {
      if (!reader.ReadVarint(&offset, &scan->operation_id)) return false;
      scan->has_operation_id = true;
    } else if (field == kEntryTransferFrom && wire_type == kLengthDelimited) {
      uint64_t length;
      if (!reader.ReadVarint(&offset, &length) || length > end - offset) {
        return false;
      }
      if (!ScanTransferFrom(reader, offset, offset + length, scan)) {
        return false;
      }
      offset += length;
      ++scan->transfer_from_fields;
      scan->field_begin = field_begin;
      scan->field_end = offset;
    } else if (!reader.SkipValue(wire_type, end, &offset)) {
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
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return Malformed("unreadable buffer");
  const SliceReader reader(std::move(slices));
  size_t offset = 0;
  std::string bytes;
  while (offset < reader.size()) {
    uint64_t tag;
    if (!reader.ReadVarint(&offset, &tag)) return Malformed("bad tag");
    if (tag >> 3 != kResponseEntry || (tag & 7) != kLengthDelimited) {
      // Fields this client does not know: skip, as protobuf would.
      if (!reader.SkipValue(tag & 7, reader.size(), &offset)) {
        return Malformed("bad field");
      }
      continue;
    }
    uint64_t length;
    if (!reader.ReadVarint(&offset, &length) ||
        length > reader.size() - offset) {
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
