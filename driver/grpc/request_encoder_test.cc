#include "driver/grpc/request_encoder.h"

#include <string>

#include "grpcpp/impl/codegen/proto_utils.h"
#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

using tpu_driver::StreamRequest;

StreamRequest Decode(grpc::ByteBuffer& buffer) {
  StreamRequest request;
  grpc::Status status =
      grpc::GenericDeserialize<grpc::ProtoBufferReader, StreamRequest>(
          &buffer, &request);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return request;
}

OutgoingEntry Alloc(int64_t id) {
  OutgoingEntry out;
  out.entry.set_operation_id(id);
  out.entry.add_wait_for_id(id - 1);
  out.entry.mutable_alloc()->set_core_id(3);
  out.entry.mutable_alloc()->set_region(tpu_driver::HBM);
  out.entry.mutable_alloc()->set_num_bytes(1024);
  return out;
}

OutgoingEntry TransferTo(int64_t id, absl::string_view payload) {
  OutgoingEntry out;
  out.entry.set_operation_id(id);
  out.entry.mutable_transfer_to()->set_target_handle(id - 1);
  out.payload = payload;
  return out;
}

TEST(RequestEncoderTest, DecodesAsTheSameEntriesWithPayloadsAsData) {
  std::string big(300, 'z');
  big[0] = '\0';  // Binary-safe.
  std::vector<OutgoingEntry> batch;
  batch.push_back(Alloc(10));
  batch.push_back(TransferTo(11, big));
  batch.push_back(TransferTo(12, ""));
  batch.push_back(Alloc(13));
  std::vector<grpc::ByteBuffer> messages = EncodeStreamRequests(batch);
  ASSERT_EQ(messages.size(), 1);
  StreamRequest request = Decode(messages[0]);
  ASSERT_EQ(request.entry_size(), 4);
  EXPECT_EQ(request.entry(0).operation_id(), 10);
  EXPECT_EQ(request.entry(0).wait_for_id(0), 9);
  EXPECT_EQ(request.entry(0).alloc().num_bytes(), 1024);
  EXPECT_EQ(request.entry(1).transfer_to().target_handle(), 10);
  EXPECT_EQ(request.entry(1).transfer_to().data(), big);
  EXPECT_TRUE(request.entry(2).transfer_to().has_data());
  EXPECT_EQ(request.entry(2).transfer_to().data(), "");
  EXPECT_EQ(request.entry(3).operation_id(), 13);
  EXPECT_TRUE(request.IsInitialized());
}

TEST(RequestEncoderTest, SmallPayloadsCopiedAndLargeOnesReferencedDecodeAlike) {
  // 4096 bytes and less are copied into the framing; larger ones ride as
  // slices of the caller's memory. Both must be the same bytes on the wire.
  std::string small(4096, 's');
  std::string large(4097, 'l');
  small[17] = '\0';
  large[4096] = '\xff';
  std::vector<OutgoingEntry> batch;
  batch.push_back(TransferTo(21, small));
  batch.push_back(TransferTo(22, large));
  batch.push_back(TransferTo(23, small));
  std::vector<grpc::ByteBuffer> messages = EncodeStreamRequests(batch);
  ASSERT_EQ(messages.size(), 1);
  StreamRequest request = Decode(messages[0]);
  ASSERT_EQ(request.entry_size(), 3);
  EXPECT_EQ(request.entry(0).transfer_to().data(), small);
  EXPECT_EQ(request.entry(1).transfer_to().data(), large);
  EXPECT_EQ(request.entry(2).transfer_to().data(), small);
  EXPECT_EQ(request.entry(2).operation_id(), 23);
  EXPECT_EQ(request.entry(2).transfer_to().target_handle(), 22);
}

TEST(RequestEncoderTest, SplitsLargeBatchesButKeepsOrder) {
  std::string payload(400, 'p');
  std::vector<OutgoingEntry> batch;
  for (int i = 0; i < 10; ++i) batch.push_back(TransferTo(100 + i, payload));
  std::vector<grpc::ByteBuffer> messages =
      EncodeStreamRequests(batch, /*max_message_bytes=*/1000);
  ASSERT_GE(messages.size(), 4);
  int64_t next = 100;
  for (auto& message : messages) {
    EXPECT_LE(message.Length(), 1000);
    StreamRequest request = Decode(message);
    for (const auto& entry : request.entry()) {
      EXPECT_EQ(entry.operation_id(), next++);
      EXPECT_EQ(entry.transfer_to().data(), payload);
    }
  }
  EXPECT_EQ(next, 110);
}

TEST(RequestEncoderTest, AnEntryLargerThanTheLimitGoesAlone) {
  std::string payload(5000, 'q');
  std::vector<OutgoingEntry> batch;
  batch.push_back(Alloc(1));
  batch.push_back(TransferTo(2, payload));
  batch.push_back(Alloc(3));
  std::vector<grpc::ByteBuffer> messages =
      EncodeStreamRequests(batch, /*max_message_bytes=*/1000);
  ASSERT_EQ(messages.size(), 3);
  EXPECT_EQ(Decode(messages[1]).entry(0).transfer_to().data(), payload);
}

}  // namespace
}  // namespace tpu::driver
