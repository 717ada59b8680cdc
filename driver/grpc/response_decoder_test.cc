#include "driver/grpc/response_decoder.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

using tpu_driver::StreamResponse;

// `bytes` as a ByteBuffer of slices of at most `piece` bytes, as gRPC hands
// over a message that arrived in several frames.
grpc::ByteBuffer Chopped(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t i = 0; i < bytes.size(); i += piece) {
    slices.emplace_back(bytes.data() + i, std::min(piece, bytes.size() - i));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

StreamResponse Sample(const std::string& data) {
  StreamResponse response;
  auto* status_only = response.add_entry();
  status_only->set_operation_id(4);
  status_only->mutable_status()->set_code(0);
  auto* transfer = response.add_entry();
  transfer->set_operation_id(5);
  transfer->mutable_status()->set_code(0);
  transfer->mutable_transfer_from()->set_data(data);
  auto* compile = response.add_entry();
  compile->set_operation_id(6);
  compile->mutable_status()->set_code(0);
  compile->mutable_compile()
      ->mutable_metadata()
      ->mutable_program_shape()
      ->add_parameter_names("x");
  return response;
}

TEST(ResponseDecoderTest, CopiesTransferDataStraightToItsDestination) {
  std::string data(10000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  const std::string wire = Sample(data).SerializeAsString();
  std::string dst(data.size(), 'x');
  int asked = 0;
  TransferDestination destination = [&](uint64_t id, int64_t bytes) -> void* {
    ++asked;
    EXPECT_EQ(id, 5);
    EXPECT_EQ(bytes, 10000);
    return dst.data();
  };
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, wire.size()}) {
    StreamResponse response;
    ASSERT_TRUE(
        DecodeStreamResponse(Chopped(wire, piece), destination, &response)
            .ok());
    EXPECT_EQ(dst, data) << "piece " << piece;
    ASSERT_EQ(response.entry_size(), 3);
    EXPECT_EQ(response.entry(0).operation_id(), 4);
    EXPECT_EQ(response.entry(1).operation_id(), 5);
    EXPECT_TRUE(response.entry(1).has_transfer_from());
    EXPECT_TRUE(response.entry(1).transfer_from().data().empty());
    EXPECT_EQ(
        response.entry(2).compile().metadata().program_shape().parameter_names(
            0),
        "x");
    dst.assign(data.size(), 'x');
  }
  EXPECT_EQ(asked, 4);
}

TEST(ResponseDecoderTest, WithoutADestinationTheDataStaysInTheEntry) {
  const std::string wire = Sample("payload").SerializeAsString();
  StreamResponse response;
  ASSERT_TRUE(DecodeStreamResponse(
                  Chopped(wire, 3),
                  [](uint64_t, int64_t) -> void* { return nullptr; }, &response)
                  .ok());
  EXPECT_EQ(response.entry(1).transfer_from().data(), "payload");
  ASSERT_TRUE(DecodeStreamResponse(Chopped(wire, 5), nullptr, &response).ok());
  EXPECT_EQ(response.entry(1).transfer_from().data(), "payload");
}

TEST(ResponseDecoderTest, ACompileAfterTransferFromDropsItsData) {
  // Protobuf clears transfer_from when the oneof's other member follows it:
  // its data must not reach a destination.
  StreamResponse::Entry transfer;
  transfer.set_operation_id(5);
  transfer.mutable_status()->set_code(0);
  transfer.mutable_transfer_from()->set_data("not kept");
  StreamResponse::Entry compile;
  compile.mutable_compile()->mutable_metadata()->mutable_program_shape();
  const std::string entry =
      transfer.SerializeAsString() + compile.SerializePartialAsString();
  std::string wire = "\xa2\x01";  // Field 20, length-delimited.
  wire.push_back(static_cast<char>(entry.size()));
  wire += entry;
  StreamResponse expected;
  ASSERT_TRUE(expected.ParseFromString(wire));
  ASSERT_TRUE(expected.entry(0).has_compile());

  bool asked = false;
  StreamResponse response;
  ASSERT_TRUE(DecodeStreamResponse(
                  Chopped(wire, 3),
                  [&](uint64_t, int64_t) -> void* {
                    asked = true;
                    return nullptr;
                  },
                  &response)
                  .ok());
  EXPECT_FALSE(asked);
  EXPECT_EQ(response.SerializeAsString(), expected.SerializeAsString());
}

TEST(ResponseDecoderTest, MalformedMessagesAreDataLoss) {
  StreamResponse response;
  std::string wire = Sample("abc").SerializeAsString();
  wire.resize(wire.size() - 2);  // Truncated.
  EXPECT_EQ(DecodeStreamResponse(Chopped(wire, 8), nullptr, &response).code(),
            absl::StatusCode::kDataLoss);
  // An entry without its required status.
  StreamResponse missing;
  missing.add_entry()->set_operation_id(1);
  EXPECT_EQ(DecodeStreamResponse(Chopped(missing.SerializePartialAsString(), 4),
                                 nullptr, &response)
                .code(),
            absl::StatusCode::kDataLoss);
}

TEST(ResponseDecoderTest, EmptyMessageHasNoEntries) {
  StreamResponse response;
  response.add_entry();
  grpc::ByteBuffer empty;
  EXPECT_TRUE(DecodeStreamResponse(empty, nullptr, &response).ok());
  EXPECT_EQ(response.entry_size(), 0);
}

}  // namespace
}  // namespace tpu::driver
