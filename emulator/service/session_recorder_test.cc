// What --record_dir writes for one stream: the owner's entries with ids made
// local (client bits stripped), transfer_to payloads carried beside the
// request inlined, other clients' entries left out, and the results.

#include "emulator/service/session_recorder.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/event_id.h"

namespace tpu::emulator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

int64_t Wire(uint32_t client, uint64_t op) {
  return static_cast<int64_t>(EventId{client, op}.AsInt());
}

std::string FreshDir(const std::string& name) {
  const char* tmp = getenv("TEST_TMPDIR");
  const std::string dir =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(SessionRecorderTest, WritesTheOwnersEntriesWithLocalIds) {
  const std::string dir = FreshDir("owner");
  auto directory = RecordDirectory::Open(dir);
  ASSERT_TRUE(directory.ok()) << directory.status();
  {
    SessionRecorder recorder(*directory);
    tpu_driver::StreamRequest request;
    auto* alloc = request.add_entry();
    alloc->mutable_alloc()->set_core_id(1);
    alloc->mutable_alloc()->set_region(tpu_driver::HBM);
    alloc->mutable_alloc()->set_num_bytes(4);
    alloc->set_operation_id(Wire(3, 1));
    auto* write = request.add_entry();
    write->mutable_transfer_to()->set_target_handle(Wire(3, 1));
    write->add_wait_for_id(Wire(3, 1));
    write->add_wait_for_id(Wire(4, 1));  // another client's: left out
    write->set_operation_id(Wire(3, 2));
    auto* intruder = request.add_entry();  // another client's: left out
    intruder->mutable_dealloc()->set_handle(Wire(4, 1));
    intruder->set_operation_id(Wire(4, 9));
    auto* execute = request.add_entry();
    execute->mutable_execute()->set_loaded_program_handle(Wire(3, 7));
    execute->mutable_execute()->add_input_handle(Wire(3, 1));
    execute->mutable_execute()->add_output_handle(Wire(3, 5));
    execute->set_operation_id(Wire(3, 8));
    TransferData payloads(2);
    payloads[1] = AlignedBuffer::Allocate(4);
    memcpy(payloads[1]->data(), "\x01\x02\x03\x04", 4);
    recorder.OnRequest(request, payloads);

    tpu_driver::StreamResponse response;
    auto* done = response.add_entry();
    done->mutable_status()->set_code(0);
    done->set_operation_id(Wire(3, 2));
    auto* other = response.add_entry();
    other->mutable_status()->set_code(7);
    other->set_operation_id(Wire(4, 9));
    auto* read = response.add_entry();
    read->mutable_status()->set_code(0);
    read->set_operation_id(Wire(3, 10));
    TransferData read_back(3);
    read_back[2] = AlignedBuffer::Allocate(2);
    memcpy(read_back[2]->data(), "\xab\xcd", 2);
    recorder.OnResponse(response, read_back);
  }
  const std::string log = dir + "/client3_session1.log";
  auto reader = RecordReader::Open(log);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<tpu_driver::StreamRequest::Entry> entries;
  while (true) {
    auto entry = (*reader)->NextEntry();
    ASSERT_TRUE(entry.ok()) << entry.status();
    if (!entry->has_value()) break;
    entries.push_back(**entry);
  }
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].operation_id(), 1);
  EXPECT_EQ(entries[0].alloc().core_id(), 1);
  EXPECT_EQ(entries[1].operation_id(), 2);
  EXPECT_EQ(entries[1].transfer_to().target_handle(), 1);
  EXPECT_EQ(entries[1].transfer_to().data(), "\x01\x02\x03\x04");
  EXPECT_THAT(entries[1].wait_for_id(), ElementsAre(1));
  EXPECT_EQ(entries[2].operation_id(), 8);
  EXPECT_EQ(entries[2].execute().loaded_program_handle(), 7);
  EXPECT_THAT(entries[2].execute().input_handle(), ElementsAre(1));
  EXPECT_THAT(entries[2].execute().output_handle(), ElementsAre(5));

  auto results = RecordReader::Open(absl::StrCat(log, kResultsSuffix));
  ASSERT_TRUE(results.ok()) << results.status();
  auto first = (*results)->NextResult();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->operation_id(), 2);
  EXPECT_FALSE((*first)->has_transfer_from_data());
  auto second = (*results)->NextResult();
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ((*second)->operation_id(), 10);
  EXPECT_EQ((*second)->transfer_from_data(), "\xab\xcd");
  auto end = (*results)->NextResult();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(SessionRecorderTest, MissingDirectoryIsInvalidArgument) {
  auto directory = RecordDirectory::Open("/nonexistent_record_dir");
  EXPECT_EQ(directory.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(directory.status().message(),
              HasSubstr("--record_dir=/nonexistent_record_dir is not a "
                        "writable directory"));
}

}  // namespace
}  // namespace tpu::emulator
