#include "driver/grpc/request_encoder.h"

#include <string>

#include "grpcpp/support/slice.h"
#include "proto/wire_slices.h"

namespace tpu {
namespace {

using wire::AppendVarint;
using wire::VarintSize;

// Tags of the StreamRequest framing we write.
constexpr uint32_t kStreamRequestEntryTag = wire::LengthDelimitedTag(30);
constexpr uint32_t kEntryTransferToTag = wire::LengthDelimitedTag(4);
constexpr uint32_t kTransferToDataTag = wire::LengthDelimitedTag(2);

}  // namespace

std::vector<grpc::ByteBuffer> EncodeStreamRequests(
    const std::vector<OutgoingEntry>& batch, int64_t max_message_bytes) {
  std::vector<grpc::ByteBuffer> messages;
  SliceWriter builder;
  for (const OutgoingEntry& outgoing : batch) {
    const auto& entry = outgoing.entry;
    const size_t entry_size = entry.ByteSizeLong();
    const bool has_payload = entry.has_transfer_to();
    // transfer_to { data: payload } appended after the entry's own fields.
    size_t data_field = 0;
    size_t payload_field = 0;
    if (has_payload) {
      data_field =
          1 + VarintSize(outgoing.payload.size()) + outgoing.payload.size();
      payload_field = 1 + VarintSize(data_field) + data_field;
    }
    const size_t total = entry_size + payload_field;
    const int64_t framed = static_cast<int64_t>(
        VarintSize(kStreamRequestEntryTag) + VarintSize(total) + total);
    if (!builder.empty() && builder.size() + framed > max_message_bytes) {
      messages.push_back(builder.Finish());
    }
    std::string* text = builder.text();
    AppendVarint(kStreamRequestEntryTag, text);
    AppendVarint(total, text);
    const size_t at = text->size();
    text->resize(at + entry_size);
    // Partial: transfer_to.data, a required field, is appended below.
    entry.SerializePartialToArray(&(*text)[at], static_cast<int>(entry_size));
    if (has_payload) {
      AppendVarint(kEntryTransferToTag, text);
      AppendVarint(data_field, text);
      AppendVarint(kTransferToDataTag, text);
      AppendVarint(outgoing.payload.size(), text);
      // Referenced, not copied: the caller keeps the bytes valid until the
      // operation answers, and a synchronous Write has consumed them by then.
      builder.AddSlice(grpc::Slice(outgoing.payload.data(),
                                   outgoing.payload.size(),
                                   grpc::Slice::STATIC_SLICE));
    }
  }
  if (!builder.empty()) {
    messages.push_back(builder.Finish());
  }
  return messages;
}

}  // namespace tpu
