#include "emulator/service/stream_codec.h"

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/stream_payloads.h"
#include "proto/wire_slices.h"

namespace tpu::emulator {
namespace {

using tpu_driver::StreamRequest;
using tpu_driver::StreamResponse;

// `bytes` as gRPC received it: in slices of `piece` bytes.
grpc::ByteBuffer Received(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    slices.emplace_back(bytes.substr(at, piece));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Joined(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 31 + seed);
  return s;
}

std::string Bytes(const AlignedBuffer& buffer) {
  return std::string(static_cast<const char*>(buffer.data()), buffer.size());
}

TEST(StreamCodecTest, TransferToDataComesOutBesideItsEntry) {
  StreamRequest request;
  auto* alloc = request.add_entry();
  alloc->set_operation_id(1);
  alloc->mutable_alloc()->set_core_id(0);
  alloc->mutable_alloc()->set_num_bytes(100000);
  alloc->mutable_alloc()->set_region(tpu_driver::HBM);
  auto* transfer = request.add_entry();
  transfer->set_operation_id(2);
  transfer->add_wait_for_id(1);
  transfer->mutable_transfer_to()->set_target_handle(1);
  const std::string data = Pattern(100000, 7);
  transfer->mutable_transfer_to()->set_data(data);
  auto* empty = request.add_entry();
  empty->set_operation_id(3);
  empty->mutable_transfer_to()->set_target_handle(1);
  empty->mutable_transfer_to()->set_data("");

  for (size_t piece : {size_t{1} << 20, size_t{4096}, size_t{7}}) {
    StreamRequest decoded;
    TransferData transfer_data;
    ASSERT_TRUE(
        DecodeStreamRequest(Received(request.SerializeAsString(), piece),
                            &decoded, &transfer_data));
    ASSERT_EQ(decoded.entry_size(), 3);
    EXPECT_EQ(decoded.entry(0).SerializeAsString(), alloc->SerializeAsString());
    EXPECT_EQ(PayloadOf(transfer_data, 0), nullptr);
    EXPECT_EQ(decoded.entry(1).operation_id(), 2);
    EXPECT_EQ(decoded.entry(1).wait_for_id(0), 1);
    EXPECT_EQ(decoded.entry(1).transfer_to().target_handle(), 1);
    EXPECT_FALSE(decoded.entry(1).transfer_to().has_data());
    ASSERT_NE(PayloadOf(transfer_data, 1), nullptr);
    EXPECT_EQ(Bytes(*transfer_data[1]), data);
    ASSERT_NE(PayloadOf(transfer_data, 2), nullptr);
    EXPECT_EQ(transfer_data[2]->size(), 0);
    EXPECT_TRUE(decoded.entry(2).has_transfer_to());
  }
}

TEST(StreamCodecTest, RepeatedTransferToFieldsMergeAsProtobufDoes) {
  // The grpc:// driver sends the data in a second transfer_to occurrence; a
  // bytes field that occurs twice keeps the last value.
  StreamRequest::Entry head;
  head.set_operation_id(5);
  head.mutable_transfer_to()->set_target_handle(9);
  head.mutable_transfer_to()->set_data("first");
  StreamRequest::Entry tail;
  tail.mutable_transfer_to()->set_data("second, and last");
  StreamRequest::Entry handle_only;
  handle_only.mutable_transfer_to()->set_target_handle(4);
  const std::string entry = head.SerializeAsString() +
                            tail.SerializePartialAsString() +
                            handle_only.SerializePartialAsString();
  std::string bytes;
  bytes += "\xf2\x01";  // Field 30, length-delimited.
  bytes.push_back(static_cast<char>(entry.size()));
  bytes += entry;
  // An unknown top-level field is skipped.
  bytes += std::string("\x08\x2a", 2);

  StreamRequest expected;
  ASSERT_TRUE(expected.ParseFromString(bytes));
  ASSERT_EQ(expected.entry(0).transfer_to().data(), "second, and last");

  StreamRequest decoded;
  TransferData transfer_data;
  ASSERT_TRUE(
      DecodeStreamRequest(Received(bytes, 3), &decoded, &transfer_data));
  ASSERT_EQ(decoded.entry_size(), 1);
  EXPECT_EQ(decoded.entry(0).operation_id(), 5);
  EXPECT_EQ(decoded.entry(0).transfer_to().target_handle(), 4);
  ASSERT_NE(PayloadOf(transfer_data, 0), nullptr);
  EXPECT_EQ(Bytes(*transfer_data[0]), "second, and last");
}

// A request whose one entry is `parts` concatenated (each a serialized
// Entry, so their fields follow one another as on the wire).
std::string OneEntry(const std::vector<std::string>& parts) {
  std::string entry;
  for (const std::string& part : parts) entry += part;
  std::string bytes = "\xf2\x01";  // Field 30, length-delimited.
  wire::AppendVarint(entry.size(), &bytes);
  return bytes + entry;
}

TEST(StreamCodecTest, AOneofSiblingAfterTransferToDropsItsPayload) {
  // Protobuf clears transfer_to when another member of the entry's oneof
  // follows it; the payload goes with it, and a transfer_to after that
  // starts afresh.
  StreamRequest::Entry transfer;
  transfer.set_operation_id(7);
  transfer.mutable_transfer_to()->set_target_handle(3);
  transfer.mutable_transfer_to()->set_data(Pattern(40000, 2));
  StreamRequest::Entry alloc_tuple;
  alloc_tuple.mutable_alloc_tuple()->set_core_id(1);
  alloc_tuple.mutable_alloc_tuple()->set_region(tpu_driver::HBM);
  StreamRequest::Entry handle_only;
  handle_only.mutable_transfer_to()->set_target_handle(5);
  const std::string sibling_last = OneEntry(
      {transfer.SerializeAsString(), alloc_tuple.SerializePartialAsString()});
  const std::string transfer_again = OneEntry(
      {transfer.SerializeAsString(), alloc_tuple.SerializePartialAsString(),
       handle_only.SerializePartialAsString()});

  for (const std::string& bytes : {sibling_last, transfer_again}) {
    // Partial: the transfer_to that starts afresh lacks its required data.
    StreamRequest expected;
    ASSERT_TRUE(expected.ParsePartialFromString(bytes));
    StreamRequest decoded;
    TransferData transfer_data;
    ASSERT_TRUE(
        DecodeStreamRequest(Received(bytes, 9), &decoded, &transfer_data));
    EXPECT_EQ(decoded.SerializePartialAsString(),
              expected.SerializePartialAsString());
    EXPECT_EQ(PayloadOf(transfer_data, 0), nullptr);
  }
  StreamRequest decoded;
  TransferData transfer_data;
  ASSERT_TRUE(DecodeStreamRequest(Received(transfer_again, 9), &decoded,
                                  &transfer_data));
  EXPECT_EQ(decoded.entry(0).transfer_to().target_handle(), 5);
  EXPECT_FALSE(decoded.entry(0).transfer_to().has_data());
}

TEST(StreamCodecTest, PayloadFieldsNameTheirOneofSiblings) {
  // stream_payloads.h spells out the oneof members; check them against the
  // descriptors so that a member added to the proto is not forgotten there.
  auto siblings = [](const google::protobuf::Descriptor* entry, int outer) {
    const google::protobuf::OneofDescriptor* oneof =
        entry->FindFieldByNumber(outer)->containing_oneof();
    uint64_t bits = 0;
    for (int i = 0; i < oneof->field_count(); ++i) {
      if (oneof->field(i)->number() != outer) {
        bits |= OneofBit(oneof->field(i)->number());
      }
    }
    return bits;
  };
  EXPECT_EQ(
      kTransferToData.oneof_siblings,
      siblings(StreamRequest::Entry::descriptor(), kTransferToData.outer));
  EXPECT_EQ(
      kTransferFromData.oneof_siblings,
      siblings(StreamResponse::Entry::descriptor(), kTransferFromData.outer));
}

TEST(StreamCodecTest, MalformedRequestsAreRejected) {
  StreamRequest request;
  auto* entry = request.add_entry();
  entry->set_operation_id(1);
  entry->mutable_transfer_to()->set_target_handle(1);
  entry->mutable_transfer_to()->set_data(Pattern(300, 1));
  const std::string good = request.SerializeAsString();
  StreamRequest decoded;
  TransferData transfer_data;
  for (size_t cut : {size_t{1}, size_t{3}, size_t{10}, good.size() - 1}) {
    EXPECT_FALSE(DecodeStreamRequest(Received(good.substr(0, cut), 5), &decoded,
                                     &transfer_data))
        << "truncated at " << cut;
  }
  // A group (wire type 3) where the entry should be.
  EXPECT_FALSE(DecodeStreamRequest(Received(std::string("\xf3\x01", 2), 5),
                                   &decoded, &transfer_data));
  ASSERT_TRUE(
      DecodeStreamRequest(grpc::ByteBuffer(), &decoded, &transfer_data));
  EXPECT_EQ(decoded.entry_size(), 0);
}

TEST(StreamCodecTest, AgreesWithProtobufOnMutatedMessages) {
  // Whatever the decoder accepts, protobuf parses to the same request (with
  // the payloads put back); it never crashes on what it rejects.
  StreamRequest request;
  for (int i = 0; i < 3; ++i) {
    auto* entry = request.add_entry();
    entry->set_operation_id(100 + i);
    entry->add_wait_for_id(7);
    entry->mutable_transfer_to()->set_target_handle(i);
    entry->mutable_transfer_to()->set_data(Pattern(40 + 30 * i, i));
  }
  request.add_entry()->set_operation_id(200);
  const std::string good = request.SerializeAsString();
  std::mt19937 random(1234);
  int accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = good;
    const int mutations = 1 + static_cast<int>(random() % 3);
    for (int m = 0; m < mutations; ++m) {
      const size_t at = random() % bytes.size();
      switch (random() % 3) {
        case 0:
          bytes[at] = static_cast<char>(bytes[at] ^ (1 << (random() % 8)));
          break;
        case 1:
          bytes.resize(at);
          break;
        default:
          bytes.insert(at, 1, static_cast<char>(random()));
          break;
      }
      if (bytes.empty()) bytes = "x";
    }
    StreamRequest decoded;
    TransferData transfer_data;
    if (!DecodeStreamRequest(Received(bytes, 1 + random() % 16), &decoded,
                             &transfer_data)) {
      continue;
    }
    ++accepted;
    StreamRequest expected;
    ASSERT_TRUE(expected.ParsePartialFromString(bytes)) << "round " << round;
    ASSERT_EQ(decoded.entry_size(), expected.entry_size());
    for (int i = 0; i < decoded.entry_size(); ++i) {
      StreamRequest::Entry entry = decoded.entry(i);
      if (PayloadOf(transfer_data, i) != nullptr) {
        entry.mutable_transfer_to()->set_data(Bytes(*transfer_data[i]));
      }
      StreamRequest::Entry wanted = expected.entry(i);
      wanted.DiscardUnknownFields();
      entry.DiscardUnknownFields();
      EXPECT_EQ(entry.SerializePartialAsString(),
                wanted.SerializePartialAsString())
          << "round " << round << " entry " << i;
    }
  }
  EXPECT_GT(accepted, 100) << "the mutations should leave many messages valid";
}

TEST(StreamCodecTest, TransferFromDataIsSentFromThePayloadItself) {
  StreamResponse response;
  for (int id = 1; id <= 3; ++id) {
    auto* entry = response.add_entry();
    entry->set_operation_id(id);
    entry->mutable_status()->set_code(0);
  }
  response.mutable_entry(2)->mutable_status()->set_message("no payload");
  TransferData transfer_data(2);
  const std::string small = Pattern(100, 3);
  const std::string large = Pattern(1 << 20, 4);
  transfer_data[0] = AlignedBuffer::Allocate(small.size());
  std::memcpy(transfer_data[0]->data(), small.data(), small.size());
  transfer_data[1] = AlignedBuffer::Allocate(large.size());
  std::memcpy(transfer_data[1]->data(), large.data(), large.size());
  std::weak_ptr<AlignedBuffer> watched = transfer_data[1];
  const void* large_address = transfer_data[1]->data();

  grpc::ByteBuffer encoded = EncodeStreamResponse(response, transfer_data);
  transfer_data.clear();
  ASSERT_FALSE(watched.expired()) << "the message keeps its payload alive";

  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(encoded.Dump(&slices).ok());
  bool referenced = false;
  for (const grpc::Slice& s : slices) {
    if (s.begin() == large_address && s.size() == large.size()) {
      referenced = true;
    }
  }
  EXPECT_TRUE(referenced) << "a large payload is a slice of its own, uncopied";
  slices.clear();

  StreamResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(Joined(encoded)));
  ASSERT_EQ(parsed.entry_size(), 3);
  EXPECT_EQ(parsed.entry(0).transfer_from().data(), small);
  EXPECT_EQ(parsed.entry(1).transfer_from().data(), large);
  EXPECT_EQ(parsed.entry(1).operation_id(), 2);
  EXPECT_FALSE(parsed.entry(2).has_transfer_from());
  EXPECT_EQ(parsed.entry(2).status().message(), "no payload");

  encoded.Clear();
  EXPECT_TRUE(watched.expired()) << "released once gRPC is done with it";
}

}  // namespace
}  // namespace tpu::emulator
