#include "driver/grpc/request_encoder.h"

#include <string>

#include "google/protobuf/io/coded_stream.h"
#include "grpcpp/support/slice.h"

namespace tpu {
namespace {

using google::protobuf::io::CodedOutputStream;

// Field numbers and wire types of the StreamRequest framing we write.
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t Tag(uint32_t field) { return field << 3 | kLengthDelimited; }
constexpr uint32_t kStreamRequestEntryTag = Tag(30);  // StreamRequest.entry
constexpr uint32_t kEntryTransferToTag = Tag(4);      // Entry.transfer_to
constexpr uint32_t kTransferToDataTag = Tag(2);       // TransferToDevice.data

void AppendVarint(std::string* out, uint64_t value) {
  uint8_t buffer[10];
  uint8_t* end = CodedOutputStream::WriteVarint64ToArray(value, buffer);
  out->append(reinterpret_cast<const char*>(buffer), end - buffer);
}

size_t VarintSize(uint64_t value) {
  return CodedOutputStream::VarintSize64(value);
}

// Accumulates the slices of one message.
class MessageBuilder {
 public:
  // Bytes so far, including text not yet committed to a slice.
  int64_t size() const { return size_ + static_cast<int64_t>(text_.size()); }
  bool empty() const { return size() == 0; }

  std::string* text() { return &text_; }
  void CommitText() {
    if (text_.empty()) return;
    size_ += static_cast<int64_t>(text_.size());
    slices_.emplace_back(text_.data(), text_.size());  // Copies: small.
    text_.clear();
  }
  void AddPayload(absl::string_view payload) {
    CommitText();
    if (payload.empty()) return;
    slices_.emplace_back(payload.data(), payload.size());
    size_ += static_cast<int64_t>(payload.size());
  }
  grpc::ByteBuffer Finish() {
    CommitText();
    grpc::ByteBuffer buffer(slices_.data(), slices_.size());
    slices_.clear();
    size_ = 0;
    return buffer;
  }

 private:
  std::string text_;
  std::vector<grpc::Slice> slices_;
  int64_t size_ = 0;
};

}  // namespace

std::vector<grpc::ByteBuffer> EncodeStreamRequests(
    const std::vector<OutgoingEntry>& batch, int64_t max_message_bytes) {
  std::vector<grpc::ByteBuffer> messages;
  MessageBuilder builder;
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
    AppendVarint(text, kStreamRequestEntryTag);
    AppendVarint(text, total);
    const size_t at = text->size();
    text->resize(at + entry_size);
    // Partial: transfer_to.data, a required field, is appended below.
    entry.SerializePartialToArray(&(*text)[at], static_cast<int>(entry_size));
    if (has_payload) {
      AppendVarint(text, kEntryTransferToTag);
      AppendVarint(text, data_field);
      AppendVarint(text, kTransferToDataTag);
      AppendVarint(text, outgoing.payload.size());
      builder.AddPayload(outgoing.payload);
    }
  }
  if (!builder.empty()) {
    messages.push_back(builder.Finish());
  }
  return messages;
}

}  // namespace tpu
