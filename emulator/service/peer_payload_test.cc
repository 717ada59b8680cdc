// Peer messages with a large array as raw bytes: they round-trip through a
// gRPC byte buffer, protobuf reads the same bytes as the same message, and
// small arrays and tuples stay in the LiteralProto.

#include "emulator/service/peer_payload.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/peer.pb.h"

namespace tpu::emulator {
namespace {

Literal Floats(int64_t n) {
  Literal literal = Literal::Uninitialized(Shape::Array(xla::F32, {n}));
  float* data = literal.mutable_data<float>().data();
  for (int64_t i = 0; i < n; ++i) data[i] = static_cast<float>(i) * 0.5f;
  return literal;
}

std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& slice : slices) {
    out.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return out;
}

TEST(PeerPayloadTest, LargeArrayRoundTripsAsData) {
  const Literal array = Floats(100000);
  tpu_emulator::Delivery delivery;
  delivery.set_meeting("m|1");
  delivery.set_host_id(1);
  ASSERT_TRUE(PutLiteral(array, delivery.mutable_value()));
  EXPECT_EQ(delivery.value().f32s_size(), 0);
  const grpc::ByteBuffer buffer =
      EncodeWithData(delivery, kDeliveryData, array.buffer());

  tpu_emulator::Delivery decoded;
  std::shared_ptr<AlignedBuffer> data;
  ASSERT_TRUE(DecodeWithData(buffer, kDeliveryData, &decoded, &data));
  EXPECT_EQ(decoded.meeting(), "m|1");
  EXPECT_EQ(decoded.host_id(), 1);
  ASSERT_NE(data, nullptr);
  absl::StatusOr<Literal> literal = TakeLiteral(decoded.value(), data);
  ASSERT_TRUE(literal.ok()) << literal.status();
  EXPECT_EQ(*literal, array);

  // Protobuf reads the same bytes as the same message, data included.
  tpu_emulator::Delivery parsed;
  ASSERT_TRUE(parsed.ParseFromString(Bytes(buffer)));
  EXPECT_EQ(parsed.meeting(), "m|1");
  ASSERT_EQ(parsed.data().size(), 400000u);
  EXPECT_EQ(std::memcmp(parsed.data().data(), array.untyped_data(), 400000), 0);
}

TEST(PeerPayloadTest, SmallArraysAndTuplesStayInTheProto) {
  for (const Literal& literal :
       {Floats(3), Literal::Tuple({Floats(100000), Floats(2)})}) {
    tpu_emulator::ContributionResult result;
    EXPECT_FALSE(PutLiteral(literal, result.mutable_value()));
    const grpc::ByteBuffer buffer =
        EncodeWithData(result, kContributionResultData, nullptr);
    tpu_emulator::ContributionResult decoded;
    std::shared_ptr<AlignedBuffer> data;
    ASSERT_TRUE(
        DecodeWithData(buffer, kContributionResultData, &decoded, &data));
    EXPECT_EQ(data, nullptr);
    absl::StatusOr<Literal> back = TakeLiteral(decoded.value(), data);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, literal);
  }
}

TEST(PeerPayloadTest, TruncatedDataIsMalformed) {
  const Literal array = Floats(100000);
  tpu_emulator::Delivery delivery;
  ASSERT_TRUE(PutLiteral(array, delivery.mutable_value()));
  std::string bytes =
      Bytes(EncodeWithData(delivery, kDeliveryData, array.buffer()));
  bytes.resize(bytes.size() - 1);
  grpc::Slice slice(bytes);
  tpu_emulator::Delivery decoded;
  std::shared_ptr<AlignedBuffer> data;
  EXPECT_FALSE(DecodeWithData(grpc::ByteBuffer(&slice, 1), kDeliveryData,
                              &decoded, &data));
}

}  // namespace
}  // namespace tpu::emulator
