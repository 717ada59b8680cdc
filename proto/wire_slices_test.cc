#include "proto/wire_slices.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tpu {
namespace {

// `bytes` cut into slices of `piece` bytes, so every read crosses boundaries.
SliceReader Pieces(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    slices.emplace_back(bytes.substr(at, piece));
  }
  return SliceReader(std::move(slices));
}

TEST(WireSlicesTest, VarintsRoundTripAcrossSliceBoundaries) {
  const std::vector<uint64_t> values = {
      0, 1, 127, 128, 300, uint64_t{1} << 35, ~uint64_t{0}};
  std::string bytes;
  for (uint64_t v : values) {
    const size_t before = bytes.size();
    wire::AppendVarint(v, &bytes);
    EXPECT_EQ(bytes.size() - before, wire::VarintSize(v)) << v;
  }
  for (size_t piece : {1, 2, 3, 64}) {
    SliceReader reader = Pieces(bytes, piece);
    size_t offset = 0;
    for (uint64_t v : values) {
      uint64_t read;
      ASSERT_TRUE(reader.ReadVarint(&offset, &read)) << piece;
      EXPECT_EQ(read, v);
    }
    EXPECT_EQ(offset, bytes.size());
    uint64_t past_end;
    EXPECT_FALSE(reader.ReadVarint(&offset, &past_end));
  }
}

TEST(WireSlicesTest, TruncatedAndOverlongVarintsAreRejected) {
  uint64_t value;
  size_t offset = 0;
  EXPECT_FALSE(Pieces("\x80\x80", 1).ReadVarint(&offset, &value));
  offset = 0;
  EXPECT_FALSE(Pieces(std::string(11, '\xff'), 4).ReadVarint(&offset, &value));
}

TEST(WireSlicesTest, CopyAndAppendSpanSlices) {
  const std::string bytes = "abcdefghijklmnopqrstuvwxyz";
  SliceReader reader = Pieces(bytes, 5);
  ASSERT_EQ(reader.size(), bytes.size());
  std::string out(10, '.');
  reader.Copy(3, 10, out.data());
  EXPECT_EQ(out, "defghijklm");
  std::string appended = "<";
  reader.AppendTo(20, 6, &appended);
  EXPECT_EQ(appended, "<uvwxyz");
  reader.Copy(0, 0, nullptr);  // An empty range touches nothing.
}

TEST(WireSlicesTest, LargeCopiesSplitAcrossThreadsAreExact) {
  // 21 MiB in slices of an odd size, so the threads' parts start and end
  // inside slices; read from an odd offset with a few bytes left over.
  std::string bytes(21 << 20, '\0');
  uint32_t x = 12345;
  for (char& c : bytes) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  SliceReader reader = Pieces(bytes, 65537);
  const size_t offset = 7;
  const size_t n = bytes.size() - offset - 3;
  std::string out(n + 2, '#');
  reader.Copy(offset, n, out.data() + 1);
  EXPECT_EQ(out.front(), '#');
  EXPECT_EQ(out.back(), '#');
  EXPECT_TRUE(out.compare(1, n, bytes, offset, n) == 0);
}

// Found by fuzz/wire_slices_fuzzer: protobuf accepts unknown groups, so a
// request holding one must not be refused as malformed by the codec.
TEST(WireSlicesTest, SkipFieldSkipsGroupsAsProtobufDoes) {
  auto tag = [](uint32_t field, uint32_t wire_type, std::string* out) {
    wire::AppendVarint(uint64_t{field} << 3 | wire_type, out);
  };
  // Group 3 { varint 1: 7, group 5 { "ab" in field 2 }, fixed32 }, then a
  // varint field 9.
  std::string bytes;
  tag(3, wire::kStartGroup, &bytes);
  const size_t after_tag = bytes.size();
  tag(1, wire::kVarint, &bytes);
  wire::AppendVarint(7, &bytes);
  tag(5, wire::kStartGroup, &bytes);
  tag(2, wire::kLengthDelimited, &bytes);
  bytes +=
      "\x02"
      "ab";
  tag(5, wire::kEndGroup, &bytes);
  tag(4, wire::kFixed32, &bytes);
  bytes += "wxyz";
  tag(3, wire::kEndGroup, &bytes);
  const size_t group_end = bytes.size();
  tag(9, wire::kVarint, &bytes);
  bytes += "\x01";
  SliceReader reader = Pieces(bytes, 3);
  size_t offset = after_tag;
  ASSERT_TRUE(
      reader.SkipField(3 << 3 | wire::kStartGroup, bytes.size(), &offset));
  EXPECT_EQ(offset, group_end);
  offset = after_tag;
  EXPECT_FALSE(
      reader.SkipField(3 << 3 | wire::kStartGroup, group_end - 1, &offset))
      << "a group running past `end` is malformed";
  offset = after_tag;
  EXPECT_FALSE(
      reader.SkipField(4 << 3 | wire::kStartGroup, bytes.size(), &offset))
      << "group 3's end tag does not close group 4";
  offset = 0;
  EXPECT_FALSE(
      reader.SkipField(3 << 3 | wire::kEndGroup, bytes.size(), &offset))
      << "an end tag with no group open";
  int visited = 0;
  EXPECT_TRUE(ForEachMessageField(reader, 7, [&](size_t, size_t) {
    ++visited;
    return true;
  }));
  EXPECT_EQ(visited, 0);

  // Nesting: kMaxGroupDepth groups are fine, one more is refused.
  for (int depth : {wire::kMaxGroupDepth, wire::kMaxGroupDepth + 1}) {
    std::string nested;
    for (int i = 0; i < depth; ++i) tag(1, wire::kStartGroup, &nested);
    for (int i = 0; i < depth; ++i) tag(1, wire::kEndGroup, &nested);
    SliceReader deep = Pieces(nested, 5);
    size_t at = 1;
    EXPECT_EQ(deep.SkipField(1 << 3 | wire::kStartGroup, nested.size(), &at),
              depth == wire::kMaxGroupDepth)
        << depth;
  }
}

TEST(WireSlicesTest, SkipValueHonoursEnd) {
  // varint 300, fixed64, fixed32, then a length-delimited "hello".
  std::string bytes;
  wire::AppendVarint(300, &bytes);
  bytes += std::string(8, 'x') + std::string(4, 'y');
  wire::AppendVarint(5, &bytes);
  bytes += "hello";
  SliceReader reader = Pieces(bytes, 3);
  size_t offset = 0;
  ASSERT_TRUE(reader.SkipValue(wire::kVarint, bytes.size(), &offset));
  EXPECT_EQ(offset, 2u);
  ASSERT_TRUE(reader.SkipValue(wire::kFixed64, bytes.size(), &offset));
  ASSERT_TRUE(reader.SkipValue(wire::kFixed32, bytes.size(), &offset));
  size_t at = offset;
  EXPECT_FALSE(reader.SkipValue(wire::kLengthDelimited, bytes.size() - 1, &at))
      << "a value running past `end` is malformed";
  ASSERT_TRUE(reader.SkipValue(wire::kLengthDelimited, bytes.size(), &offset));
  EXPECT_EQ(offset, bytes.size());
  at = 0;
  EXPECT_FALSE(reader.SkipValue(3, bytes.size(), &at)) << "groups";
  at = 2;
  EXPECT_FALSE(reader.SkipValue(wire::kFixed64, 9, &at));
}

TEST(WireSlicesTest, ReadsAByteBuffer) {
  std::vector<grpc::Slice> slices = {grpc::Slice("ab"), grpc::Slice("cd")};
  grpc::ByteBuffer buffer(slices.data(), slices.size());
  SliceReader reader;
  ASSERT_TRUE(SliceReader::FromByteBuffer(buffer, &reader));
  std::string all;
  reader.AppendTo(0, reader.size(), &all);
  EXPECT_EQ(all, "abcd");
  ASSERT_TRUE(SliceReader::FromByteBuffer(grpc::ByteBuffer(), &reader));
  EXPECT_EQ(reader.size(), 0u);
}

}  // namespace
}  // namespace tpu
