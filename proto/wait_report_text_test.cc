#include "proto/wait_report_text.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::wire {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(FindCyclesTest, FindsEachCycleOnceFromItsSmallestNode) {
  // 0 -> 1 -> 0, 2 -> 3 -> 4 -> 2, 5 -> 0 (no cycle through 5).
  std::vector<std::vector<int>> cycles = FindCycles(
      {0, 1, 2, 3, 4, 5}, {{1}, {0}, {3}, {4}, {2}, {0}});
  EXPECT_THAT(cycles, ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3, 4)));
}

TEST(FindCyclesTest, NoEdgesNoCycles) {
  EXPECT_TRUE(FindCycles({0, 1}, {{}, {}}).empty());
}

tpu_emulator::WaitReport CycleReport() {
  tpu_emulator::WaitReport report;
  report.set_taken_unix_micros(2'000'000);
  for (int c = 0; c < 2; ++c) {
    auto* core = report.add_cores();
    core->set_core(c);
    core->set_activity(tpu_emulator::CoreWait::WAITING);
    core->set_program(c == 0 ? "P" : "Q");
    core->set_instruction(c == 0 ? "all-reduce.3" : "all-gather.7");
    core->set_kind(c == 0 ? "all-reduce" : "all-gather");
    core->set_signature("f32[4]");
    core->add_group(0);
    core->add_group(1);
    core->add_waiting_for(1 - c);
    core->set_since_unix_micros(1'000'000);
    core->add_diagnosis("the other one");
  }
  report.add_cycles()->add_cores(0);
  report.mutable_cycles(0)->add_cores(1);
  return report;
}

TEST(WaitReportTextTest, NamesWaitsAndTheCycle) {
  const std::string text = FormatWaitReport(CycleReport());
  EXPECT_THAT(text, HasSubstr("core 0 (host 0): waiting program P launch 0 "
                              "(client 0) in all-reduce all-reduce.3 [f32[4]] "
                              "with group {0,1} for 1 s"));
  EXPECT_THAT(text, HasSubstr("waiting for core 1\n    the other one\n"));
  EXPECT_THAT(text, HasSubstr("deadlock: core 0 waits for core 1 waits for "
                              "core 0\n"));
}

TEST(WaitReportTextTest, JsonHasTheDocumentedFields) {
  const std::string json = WaitReportToJson(CycleReport());
  EXPECT_THAT(json, HasSubstr("\"core\": 0, \"host_id\": 0, \"state\": "
                              "\"waiting\", \"program\": \"P\", \"launch\": 0"));
  EXPECT_THAT(json, HasSubstr("\"instruction\": \"all-gather.7\""));
  EXPECT_THAT(json, HasSubstr("\"waiting_for\": [1]"));
  EXPECT_THAT(json, HasSubstr("\"cycles\": [[0, 1]]"));
}

TEST(WaitReportTextTest, AllIdleSaysSo) {
  tpu_emulator::WaitReport report;
  report.add_cores()->set_core(0);
  EXPECT_EQ(FormatWaitReport(report), "no core is running or waiting\n");
}

}  // namespace
}  // namespace tpu::wire
