#include "driver/grpc/request_encoder.h"

#include <string>

#include "grpcpp/support/slice.h"
#include "proto/stream_payloads.h"
#include "proto/wire_slices.h"

namespace tpu::driver {
namespace {

// Payloads up to this size are copied into the message's framing text.
constexpr size_t kCopiedPayloadBytes = 4096;

}  // namespace

std::vector<grpc::ByteBuffer> EncodeStreamRequests(
    const std::vector<OutgoingEntry>& batch, int64_t max_message_bytes) {
  std::vector<grpc::ByteBuffer> messages;
  SliceWriter builder;
  for (const OutgoingEntry& outgoing : batch) {
    // The payload rides after the entry's own fields, as a second
    // transfer_to holding only the data.
    const size_t payload_size = outgoing.payload.size();
    const size_t* payload =
        outgoing.entry.has_transfer_to() ? &payload_size : nullptr;
    const int64_t framed = static_cast<int64_t>(FieldWithPayloadSize(
        kStreamRequestEntry, outgoing.entry, kTransferToData, payload));
    if (!builder.empty() && builder.size() + framed > max_message_bytes) {
      messages.push_back(builder.Finish());
    }
    AppendFieldUpToPayload(kStreamRequestEntry, outgoing.entry, kTransferToData,
                           payload, builder.text());
    if (payload == nullptr) continue;
    if (payload_size <= kCopiedPayloadBytes) {
      // A slice of its own costs more than copying a small payload.
      builder.text()->append(outgoing.payload.data(), payload_size);
    } else {
      // Referenced, not copied: the caller keeps the bytes valid until the
      // operation answers, and a synchronous Write has consumed them by then.
      builder.AddSlice(grpc::Slice(outgoing.payload.data(), payload_size,
                                   grpc::Slice::STATIC_SLICE));
    }
  }
  if (!builder.empty()) {
    messages.push_back(builder.Finish());
  }
  return messages;
}

}  // namespace tpu::driver
