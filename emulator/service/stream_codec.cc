#include "emulator/service/stream_codec.h"

#include <memory>
#include <string>
#include <utility>

#include "proto/stream_payloads.h"
#include "proto/wire_slices.h"

namespace tpu::emulator {
namespace {

// Payloads smaller than this are copied into the framing text: a slice of
// their own costs more than the copy.
constexpr size_t kMinReferencedBytes = 16 << 10;

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
  std::string bytes;
  return ForEachMessageField(
      reader, kStreamRequestEntry, [&](size_t begin, size_t end) {
        NestedBytesAt data;
        if (!FindNestedBytes(reader, begin, end, kTransferToData, &data)) {
          return false;
        }
        bytes.clear();
        // A payload the budget refuses stays inside its entry, where the
        // worker's own copy is refused in turn: the operation fails
        // RESOURCE_EXHAUSTED (the bytes are already in gRPC's buffer).
        absl::StatusOr<std::shared_ptr<AlignedBuffer>> payload =
            std::shared_ptr<AlignedBuffer>();
        if (data.found) {
          payload = AlignedBuffer::TryAllocate(static_cast<int64_t>(data.size));
        }
        if (data.found && payload.ok()) {
          AppendWithoutNestedBytes(reader, begin, end, data, &bytes);
          reader.Copy(data.offset, data.size, (*payload)->data());
          transfer_data->resize(request->entry_size() + 1);
          transfer_data->back() = *std::move(payload);
        } else {
          reader.AppendTo(begin, end - begin, &bytes);
        }
        return request->add_entry()->ParsePartialFromString(bytes);
      });
}

grpc::ByteBuffer EncodeStreamResponse(
    const tpu_driver::StreamResponse& response,
    const TransferData& transfer_data) {
  SliceWriter writer;
  for (int i = 0; i < response.entry_size(); ++i) {
    const std::shared_ptr<AlignedBuffer>& payload = PayloadOf(transfer_data, i);
    const size_t payload_size = payload == nullptr ? 0 : payload->size();
    AppendFieldUpToPayload(
        kStreamResponseEntry, response.entry(i), kTransferFromData,
        payload == nullptr ? nullptr : &payload_size, writer.text());
    if (payload == nullptr) continue;
    if (payload_size < kMinReferencedBytes) {
      writer.text()->append(static_cast<const char*>(payload->data()),
                            payload_size);
    } else {
      writer.AddSlice(grpc::Slice(payload->data(), payload_size,
                                  &ReleasePayload,
                                  new std::shared_ptr<AlignedBuffer>(payload)));
    }
  }
  return writer.Finish();
}

}  // namespace tpu::emulator
