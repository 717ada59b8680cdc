#include "emulator/service/peer_payload.h"

#include <string>
#include <utility>
#include <vector>

#include "hlo/shape.h"
#include "proto/wire_slices.h"

namespace tpu::emulator {
namespace {

// Smaller arrays travel in the LiteralProto: a slice of their own saves
// nothing.
constexpr int64_t kMinDataBytes = int64_t{64} << 10;

void ReleaseData(void* data) {
  delete static_cast<std::shared_ptr<AlignedBuffer>*>(data);
}

}  // namespace

bool PutLiteral(const Literal& literal, xla::LiteralProto* value) {
  if (literal.shape().IsArray() && literal.buffer() != nullptr &&
      literal.size_bytes() >= kMinDataBytes &&
      static_cast<int64_t>(literal.buffer()->size()) == literal.size_bytes()) {
    *value->mutable_shape() = literal.shape().ToProto();
    return true;
  }
  *value = literal.ToProto();
  return false;
}

grpc::ByteBuffer EncodeWithData(const google::protobuf::MessageLite& message,
                                uint32_t data_field,
                                const std::shared_ptr<AlignedBuffer>& data) {
  SliceWriter writer;
  message.AppendToString(writer.text());
  if (data != nullptr) {
    wire::AppendVarint(wire::LengthDelimitedTag(data_field), writer.text());
    wire::AppendVarint(data->size(), writer.text());
    writer.AddSlice(grpc::Slice(data->data(), data->size(), &ReleaseData,
                                new std::shared_ptr<AlignedBuffer>(data)));
  }
  return writer.Finish();
}

bool DecodeWithData(const grpc::ByteBuffer& buffer, uint32_t data_field,
                    google::protobuf::MessageLite* message,
                    std::shared_ptr<AlignedBuffer>* data) {
  data->reset();
  SliceReader reader;
  if (!SliceReader::FromByteBuffer(buffer, &reader)) return false;
  std::string rest;
  size_t offset = 0;
  while (offset < reader.size()) {
    const size_t field_begin = offset;
    uint64_t tag;
    if (!reader.ReadVarint(&offset, &tag)) return false;
    if (tag != wire::LengthDelimitedTag(data_field)) {
      if (!reader.SkipField(tag, reader.size(), &offset)) return false;
      reader.AppendTo(field_begin, offset - field_begin, &rest);
      continue;
    }
    size_t length;
    if (!reader.ReadLength(reader.size(), &offset, &length)) return false;
    absl::StatusOr<std::shared_ptr<AlignedBuffer>> bytes =
        AlignedBuffer::TryAllocate(static_cast<int64_t>(length));
    if (!bytes.ok()) return false;
    reader.Copy(offset, length, (*bytes)->data());
    *data = *std::move(bytes);  // the last occurrence wins, as in protobuf
    offset += length;
  }
  return message->ParseFromString(rest);
}

absl::StatusOr<Literal> TakeLiteral(const xla::LiteralProto& value,
                                    std::shared_ptr<AlignedBuffer> data) {
  if (data == nullptr) return Literal::FromProto(value);
  absl::StatusOr<Shape> shape = Shape::FromProto(value.shape());
  if (!shape.ok()) return shape.status();
  return Literal::FromBuffer(*shape, std::move(data));
}

}  // namespace tpu::emulator
