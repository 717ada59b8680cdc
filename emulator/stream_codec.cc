#include "emulator/stream_codec.h"

#include <memory>
#include <string>
#include <utility>

#include "proto/wire_slices.h"

namespace tpu {
namespace {

constexpr uint32_t kRequestEntry = 30;    // StreamRequest.entry
constexpr uint32_t kEntryTransferTo = 4;  // StreamRequest.Entry.transfer_to
constexpr uint32_t kTransferToData = 2;   // TransferToDeviceRequest.data
constexpr uint32_t kResponseEntry = 20;   // StreamResponse.entry
constexpr uint32_t kEntryTransferFrom =
    3;                                     // StreamResponse.Entry.transfer_from
constexpr uint32_t kTransferFromData = 2;  // TransferFromDeviceResponse.data

// Payloads smaller than this are copied into the framing text: a slice of
// their own costs more than the copy.
constexpr size_t kMinReferencedBytes = 16 << 10;

// Where the data that wins in one request entry sits: the last data field of
// the transfer_to fields (protobuf merges repeated occurrences of a message
// field, and the last occurrence of a bytes field wins).
struct TransferToScan {
  bool found = false;
  size_t field_begin = 0;  // the transfer_to field holding it, tag included
  size_t field_end = 0;
  size_t value_begin = 0;  // that field's contents
  size_t data_begin = 0;   // the data field, tag included
  size_t data_offset = 0;  // its bytes
  size_t data_size = 0;
};

bool ScanEntry(const SliceReader& reader, size_t offset, size_t end,
               TransferToScan* scan) {
  while (offset < end) {
    const size_t field_begin = offset;
    uint64_t tag;
    if (!reader.ReadVarint(&offset, &tag)) return false;
    if (tag != wire::LengthDelimitedTag(kEntryTransferTo)) {
      if (!reader.SkipValue(wire::WireTypeOf(tag), end, &offset)) return false;
      continue;
    }
    size_t length;
    if (!reader.ReadLength(end, &offset, &length)) return false;
    const size_t value_begin = offset;
    const size_t field_end = offset + length;
    while (offset < field_end) {
      const size_t data_begin = offset;
      uint64_t inner;
      if (!reader.ReadVarint(&offset, &inner)) return false;
      if (inner != wire::LengthDelimitedTag(kTransferToData)) {
        if (!reader.SkipValue(wire::WireTypeOf(inner), field_end, &offset)) {
          return false;
        }
        continue;
      }
      size_t size;
      if (!reader.ReadLength(field_end, &offset, &size)) return false;
      *scan = {true,       field_begin, field_end, value_begin,
               data_begin, offset,      size};
      offset += size;
    }
  }
  return offset == end;
}

// Appends entry [offset, end) without the data field `scan` found; the
// transfer_to field that held it is re-framed around what remains.
void AppendEntryWithoutData(const SliceReader& reader, size_t offset,
                            size_t end, const TransferToScan& scan,
                            std::string* out) {
  reader.AppendTo(offset, scan.field_begin - offset, out);
  const size_t data_end = scan.data_offset + scan.data_size;
  const size_t rest =
      (scan.data_begin - scan.value_begin) + (scan.field_end - data_end);
  wire::AppendVarint(wire::LengthDelimitedTag(kEntryTransferTo), out);
  wire::AppendVarint(rest, out);
  reader.AppendTo(scan.value_begin, scan.data_begin - scan.value_begin, out);
  reader.AppendTo(data_end, scan.field_end - data_end, out);
  reader.AppendTo(scan.field_end, end - scan.field_end, out);
}

void ReleasePayload(void* holder) {
  delete static_cast<std::shared_ptr<AlignedBuffer>*>(holder);
}

}  // namespace

bool DecodeStreamRequest(const grpc::ByteBuffer& buffer,
                         tpu_driver::StreamRequest* request,
                         TransferData* transfer_data) {
  request->Clear();
  transfer_data->clear();
  SliceReader reader;
  if (!SliceReader::FromByteBuffer(buffer, &reader)) return false;
  size_t offset = 0;
  std::string bytes;
  while (offset < reader.size()) {
    uint64_t tag;
    if (!reader.ReadVarint(&offset, &tag)) return false;
    if (tag != wire::LengthDelimitedTag(kRequestEntry)) {
      // Fields this worker does not know: skipped, as protobuf would.
      if (!reader.SkipValue(wire::WireTypeOf(tag), reader.size(), &offset)) {
        return false;
      }
      continue;
    }
    size_t length;
    if (!reader.ReadLength(reader.size(), &offset, &length)) return false;
    const size_t end = offset + length;
    TransferToScan scan;
    if (!ScanEntry(reader, offset, end, &scan)) return false;
    bytes.clear();
    if (scan.found) {
      AppendEntryWithoutData(reader, offset, end, scan, &bytes);
      auto payload =
          AlignedBuffer::Allocate(static_cast<int64_t>(scan.data_size));
      reader.Copy(scan.data_offset, scan.data_size, payload->data());
      transfer_data->resize(request->entry_size() + 1);
      transfer_data->back() = std::move(payload);
    } else {
      reader.AppendTo(offset, length, &bytes);
    }
    if (!request->add_entry()->ParsePartialFromString(bytes)) return false;
    offset = end;
  }
  return true;
}

grpc::ByteBuffer EncodeStreamResponse(
    const tpu_driver::StreamResponse& response,
    const TransferData& transfer_data) {
  SliceWriter writer;
  for (int i = 0; i < response.entry_size(); ++i) {
    const tpu_driver::StreamResponse::Entry& entry = response.entry(i);
    const std::shared_ptr<AlignedBuffer>& payload = PayloadOf(transfer_data, i);
    const size_t entry_size = entry.ByteSizeLong();
    const size_t payload_size = payload == nullptr ? 0 : payload->size();
    // transfer_from { data: payload } after the entry's own fields.
    size_t data_field = 0;
    size_t transfer_from_field = 0;
    if (payload != nullptr) {
      data_field = 1 + wire::VarintSize(payload_size) + payload_size;
      transfer_from_field = 1 + wire::VarintSize(data_field) + data_field;
    }
    std::string* text = writer.text();
    wire::AppendVarint(wire::LengthDelimitedTag(kResponseEntry), text);
    wire::AppendVarint(entry_size + transfer_from_field, text);
    const size_t at = text->size();
    text->resize(at + entry_size);
    entry.SerializePartialToArray(text->data() + at,
                                  static_cast<int>(entry_size));
    if (payload == nullptr) continue;
    wire::AppendVarint(wire::LengthDelimitedTag(kEntryTransferFrom), text);
    wire::AppendVarint(data_field, text);
    wire::AppendVarint(wire::LengthDelimitedTag(kTransferFromData), text);
    wire::AppendVarint(payload_size, text);
    if (payload_size < kMinReferencedBytes) {
      text->append(static_cast<const char*>(payload->data()), payload_size);
    } else {
      writer.AddSlice(grpc::Slice(payload->data(), payload_size,
                                  &ReleasePayload,
                                  new std::shared_ptr<AlignedBuffer>(payload)));
    }
  }
  return writer.Finish();
}

}  // namespace tpu
