#include "proto/recording.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string Framed(const std::string& payload) {
  const uint64_t length = payload.size();
  std::string bytes(sizeof(length), '\0');
  memcpy(bytes.data(), &length, sizeof(length));
  return bytes + payload;
}

TEST(RecordingTest, EntriesAndResultsRoundTrip) {
  const std::string path = TempPath("round_trip.log");
  tpu_driver::StreamRequest::Entry alloc;
  alloc.mutable_alloc()->set_core_id(3);
  alloc.mutable_alloc()->set_region(tpu_driver::HBM);
  alloc.mutable_alloc()->set_num_bytes(16);
  alloc.set_operation_id(1);
  alloc.set_thread_id(99);
  tpu_driver::StreamRequest::Entry transfer;
  transfer.mutable_transfer_to()->set_target_handle(1);
  transfer.mutable_transfer_to()->set_data(std::string("\0\1\2\3", 4));
  transfer.add_wait_for_id(1);
  transfer.set_operation_id(2);
  tpu_emulator::OperationResult result;
  result.set_operation_id(2);
  result.set_code(5);
  result.set_message("not there");
  result.set_transfer_from_data(std::string("\xff\0", 2));
  {
    auto writer = RecordWriter::Create(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->Append(alloc).ok());
    ASSERT_TRUE((*writer)->Append(transfer).ok());
    ASSERT_TRUE((*writer)->Append(result).ok());
  }
  auto reader = RecordReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto first = (*reader)->NextEntry();
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status();
  EXPECT_EQ((**first).SerializeAsString(), alloc.SerializeAsString());
  EXPECT_EQ((*reader)->last_offset(), 0);
  auto second = (*reader)->NextEntry();
  ASSERT_TRUE(second.ok() && second->has_value()) << second.status();
  EXPECT_EQ((**second).SerializeAsString(), transfer.SerializeAsString());
  EXPECT_EQ((*reader)->last_offset(), 8 + alloc.ByteSizeLong());
  auto third = (*reader)->NextResult();
  ASSERT_TRUE(third.ok() && third->has_value()) << third.status();
  EXPECT_EQ((**third).SerializeAsString(), result.SerializeAsString());
  auto end = (*reader)->NextEntry();
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_FALSE(end->has_value());
}

// Bytes as TensorFlow's recording driver lays them out, written by hand from
// the protobuf wire format (not by our writer): an 8-byte native-endian
// length, then Entry{alloc{core_id: 0, region: HBM, num_bytes: 16},
// wait_for_id: 4, operation_id: 5, thread_id: 7}.
TEST(RecordingTest, ReadsTheReferenceLayoutByteForByte) {
  const std::string entry = {
      '\x0a', '\x06',          // field 1 (alloc), 6 bytes
      '\x08', '\x00',          //   core_id = 0
      '\x10', '\x01',          //   region = HBM
      '\x18', '\x10',          //   num_bytes = 16
      '\xa0', '\x01', '\x04',  // field 20 (wait_for_id) = 4
      '\xa8', '\x01', '\x05',  // field 21 (operation_id) = 5
      '\xb0', '\x01', '\x07',  // field 22 (thread_id) = 7
  };
  const std::string length = {'\x11', 0, 0, 0, 0, 0, 0, 0};  // 17, LE
  ASSERT_EQ(entry.size(), 17u);
  const std::string path = TempPath("reference.log");
  WriteBytes(path, length + entry + length + entry);
  auto reader = RecordReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  for (int i = 0; i < 2; ++i) {
    auto read = (*reader)->NextEntry();
    ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
    const tpu_driver::StreamRequest::Entry& e = **read;
    ASSERT_TRUE(e.has_alloc());
    EXPECT_EQ(e.alloc().core_id(), 0);
    EXPECT_EQ(e.alloc().region(), tpu_driver::HBM);
    EXPECT_EQ(e.alloc().num_bytes(), 16);
    ASSERT_EQ(e.wait_for_id_size(), 1);
    EXPECT_EQ(e.wait_for_id(0), 4);
    EXPECT_EQ(e.operation_id(), 5);
    EXPECT_EQ(e.thread_id(), 7);
    EXPECT_EQ((*reader)->last_offset(), i * 25);
  }
  auto end = (*reader)->NextEntry();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

std::string ValidRecord() {
  tpu_driver::StreamRequest::Entry entry;
  entry.mutable_dealloc()->set_handle(1);
  entry.set_operation_id(2);
  return Framed(entry.SerializeAsString());
}

TEST(RecordingTest, TruncatedLengthNamesTheOffset) {
  const std::string record = ValidRecord();
  const std::string path = TempPath("short_length.log");
  WriteBytes(path, record + std::string("\x03\x00\x00", 3));
  auto reader = RecordReader::Open(path);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*reader)->NextEntry().ok());
  auto broken = (*reader)->NextEntry();
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      broken.status().message(),
      HasSubstr(absl::StrCat("is truncated: the record at byte offset ",
                             record.size(), " has only 3 of the 8 bytes")));
}

TEST(RecordingTest, TruncatedBodyNamesTheOffsetAndSizes) {
  const std::string record = ValidRecord();
  const std::string path = TempPath("short_body.log");
  WriteBytes(path, record + record.substr(0, record.size() - 2));
  auto reader = RecordReader::Open(path);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*reader)->NextEntry().ok());
  auto broken = (*reader)->NextEntry();
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      broken.status().message(),
      HasSubstr(absl::StrCat("the record at byte offset ", record.size(),
                             " claims ", record.size() - 8, " bytes but only ",
                             record.size() - 10, " follow")));
}

TEST(RecordingTest, HugeLengthIsDataLossNotAnAllocation) {
  const std::string path = TempPath("huge.log");
  WriteBytes(path, std::string(8, '\xff') + "abc");
  auto reader = RecordReader::Open(path);
  ASSERT_TRUE(reader.ok());
  auto broken = (*reader)->NextEntry();
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(broken.status().message(),
              HasSubstr("byte offset 0 claims 18446744073709551615 bytes but "
                        "only 3 follow"));
}

TEST(RecordingTest, GarbageBodyIsNotAnEntry) {
  const std::string path = TempPath("garbage.log");
  WriteBytes(path, ValidRecord() + Framed("\xff\xff\xff"));
  auto reader = RecordReader::Open(path);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*reader)->NextEntry().ok());
  auto broken = (*reader)->NextEntry();
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      broken.status().message(),
      HasSubstr(absl::StrCat("the record at byte offset ", ValidRecord().size(),
                             " (3 bytes) is not a "
                             "tpu_driver.StreamRequest.Entry")));
}

TEST(RecordingTest, MissingFileIsNotFound) {
  auto reader = RecordReader::Open(TempPath("no_such.log"));
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(reader.status().message(), HasSubstr("no_such.log"));
}

TEST(RecordingTest, UnwritablePathIsUnavailable) {
  auto writer = RecordWriter::Create("/nonexistent_dir/x.log");
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(writer.status().message(),
              HasSubstr("cannot create the recording file "
                        "/nonexistent_dir/x.log"));
}

}  // namespace
}  // namespace tpu
