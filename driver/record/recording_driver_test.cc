// The record:// driver over local:// (the emulator in-process): what it
// writes, entry by entry and result by result, and that replaying it
// reproduces every result.

#include "driver/record/recording_driver.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "driver/driver_registry.h"
#include "driver/record/replay.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hlo/text/hlo_parser.h"
#include "proto/recording.h"

namespace tpu::driver {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

xla::ShapeProto F32Vector(int n) {
  xla::ShapeProto shape;
  shape.set_element_type(xla::F32);
  shape.add_dimensions(n);
  shape.mutable_layout()->add_minor_to_major(0);
  return shape;
}

TEST(RecordingDriverTest, WritesTheReferenceEntriesAndTheResults) {
  const std::string path = TempPath("copy.log");
  {
    auto driver = DriverRegistry::Open(
        absl::StrCat("record://|file=", path, "|worker=local://"));
    ASSERT_TRUE(driver.ok()) << driver.status();
    TpuDriver& d = **driver;
    auto a = d.Allocate(0, tpu_driver::HBM, F32Vector(2), {});
    auto b = d.Allocate(0, tpu_driver::HBM, 8, {});
    const float in[2] = {1.5f, -2.0f};
    auto written = d.TransferToDevice(in, a.get(), {});
    Event* after_write = written.get();
    auto copied = d.TransferFromDeviceToDevice(a.get(), b.get(), {after_write});
    float out[2] = {0, 0};
    Event* after_copy = copied.get();
    auto read = d.TransferFromDevice(b.get(), out, {after_copy});
    ASSERT_TRUE(read->Await().ok());
    EXPECT_EQ(memcmp(in, out, sizeof(in)), 0);
    ASSERT_TRUE(d.Deallocate(std::move(a), {})->Await().ok());
    ASSERT_TRUE(d.Deallocate(std::move(b), {})->Await().ok());
  }
  auto entries = ReadRecordedEntries(path);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 7u);
  std::vector<std::string> kinds;
  for (const auto& e : *entries) kinds.push_back(EntryKind(e));
  EXPECT_THAT(kinds,
              ElementsAre("alloc", "alloc", "transfer_to", "transfer_from_to",
                          "transfer_from", "dealloc", "dealloc"));
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ((*entries)[i].operation_id(), i + 1);
    EXPECT_GT((*entries)[i].thread_id(), 0);
  }
  EXPECT_EQ((*entries)[0].alloc().shape().SerializeAsString(),
            F32Vector(2).SerializeAsString());
  EXPECT_EQ((*entries)[1].alloc().num_bytes(), 8);
  const auto& transfer = (*entries)[2].transfer_to();
  EXPECT_EQ(transfer.target_handle(), 1);
  const float in[2] = {1.5f, -2.0f};
  EXPECT_EQ(transfer.data(), std::string(reinterpret_cast<const char*>(in), 8));
  EXPECT_EQ((*entries)[3].transfer_from_to().source_handle(), 1);
  EXPECT_EQ((*entries)[3].transfer_from_to().target_handle(), 2);
  EXPECT_THAT((*entries)[3].wait_for_id(), ElementsAre(3));
  EXPECT_EQ((*entries)[4].transfer_from().source_handle(), 2);
  EXPECT_THAT((*entries)[4].wait_for_id(), ElementsAre(4));
  EXPECT_EQ((*entries)[5].dealloc().handle(), 1);
  EXPECT_EQ((*entries)[6].dealloc().handle(), 2);

  auto results = ReadRecordedResults(absl::StrCat(path, kResultsSuffix));
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 7u);
  for (const auto& [id, result] : *results) {
    EXPECT_EQ(result.code(), 0) << "operation " << id;
    EXPECT_EQ(result.has_transfer_from_data(), id == 5) << "operation " << id;
  }
  EXPECT_EQ(results->at(5).transfer_from_data(),
            std::string(reinterpret_cast<const char*>(in), 8));

  // Replayed through local:// again, every result is the recorded one.
  auto target = DriverRegistry::Open("local://");
  ASSERT_TRUE(target.ok()) << target.status();
  ReplayReport report = Replay(**target, *entries, ReplayOptions());
  EXPECT_EQ(report.failed, 0);
  EXPECT_EQ(FirstDifference(report, *results), std::nullopt);
}

// A log as TpuClient writes it: no wait_for between the execute, the read of
// its output and the frees; the client awaited on the host instead. Replay
// must still read the program's result, and free nothing under it.
TEST(RecordingDriverTest, ReplayOrdersReadsAndFreesAfterEarlierUses) {
  auto module = hlo::ParseHloModule(R"(
HloModule negate
ENTRY main {
  x = f32[2] parameter(0)
  ROOT y = f32[2] negate(x)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  RecordedEntries log(9);
  log[0]
      .mutable_compile()
      ->mutable_hlo_program()
      ->mutable_hlo_module()
      ->CopyFrom(*module);
  for (int i : {1, 2}) {
    log[i].mutable_alloc()->set_core_id(0);
    log[i].mutable_alloc()->set_region(tpu_driver::HBM);
    *log[i].mutable_alloc()->mutable_shape() = F32Vector(2);
  }
  const float in[2] = {1.5f, -2.0f};
  log[3].mutable_transfer_to()->set_target_handle(2);
  log[3].mutable_transfer_to()->set_data(
      std::string(reinterpret_cast<const char*>(in), sizeof(in)));
  log[4].mutable_load()->set_core_id(0);
  log[4].mutable_load()->set_compiled_program_handle(1);
  log[5].mutable_execute()->set_loaded_program_handle(5);
  log[5].mutable_execute()->add_input_handle(2);
  log[5].mutable_execute()->add_output_handle(3);
  log[6].mutable_transfer_from()->set_source_handle(3);
  log[7].mutable_dealloc()->set_handle(2);
  log[8].mutable_dealloc()->set_handle(3);
  for (int i = 0; i < 9; ++i) log[i].set_operation_id(i + 1);
  auto target = DriverRegistry::Open("local://");
  ASSERT_TRUE(target.ok()) << target.status();
  ReplayReport report = Replay(**target, log, ReplayOptions());
  EXPECT_EQ(report.failed, 0);
  for (const auto& op : report.operations) {
    EXPECT_TRUE(op.status.ok()) << DescribeOperation(op) << ": " << op.status;
  }
  const float negated[2] = {-1.5f, 2.0f};
  ASSERT_TRUE(report.operations[6].transfer_from_data.has_value());
  EXPECT_EQ(*report.operations[6].transfer_from_data,
            std::string(reinterpret_cast<const char*>(negated), 8));
}

TEST(RecordingDriverTest, ReplayNamesWhatARecordingLacks) {
  tpu_driver::StreamRequest::Entry read;
  read.mutable_transfer_from()->set_source_handle(9);
  read.set_operation_id(1);
  tpu_driver::StreamRequest::Entry waits;
  waits.mutable_alloc()->set_core_id(0);
  waits.mutable_alloc()->set_region(tpu_driver::HBM);
  waits.mutable_alloc()->set_num_bytes(4);
  waits.add_wait_for_id(42);
  waits.set_operation_id(2);
  auto target = DriverRegistry::Open("local://");
  ASSERT_TRUE(target.ok()) << target.status();
  ReplayReport report = Replay(**target, {read, waits}, ReplayOptions());
  ASSERT_EQ(report.operations.size(), 2u);
  EXPECT_EQ(report.failed, 2);
  EXPECT_EQ(report.operations[0].status,
            absl::NotFoundError(
                "names buffer 9, which no earlier operation of the recording "
                "allocated (or it was deallocated)"));
  EXPECT_EQ(report.operations[1].status,
            absl::NotFoundError("waits for id 42, which no earlier operation "
                                "of the recording has"));
  EXPECT_EQ(DescribeOperation(report.operations[1]),
            "operation #1 (id 2, alloc)");
}

TEST(RecordingDriverTest, AddressWithoutFileOrWorkerIsInvalid) {
  auto no_file = DriverRegistry::Open("record://|worker=local://");
  EXPECT_EQ(no_file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_file.status().message(),
              HasSubstr("names no file; the form is "
                        "record://|file=PATH|worker=ADDRESS"));
  auto no_worker =
      DriverRegistry::Open(absl::StrCat("record://|file=", TempPath("x.log")));
  EXPECT_THAT(no_worker.status().message(), HasSubstr("names no worker"));
  auto unknown = DriverRegistry::Open("record://|file=a|worker=local://|x=1");
  EXPECT_THAT(unknown.status().message(), HasSubstr("unknown option \"x=1\""));
  auto unwritable = DriverRegistry::Open(
      "record://|file=/nonexistent_dir/a.log|worker=local://");
  EXPECT_EQ(unwritable.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tpu::driver
