#include "proto/wait_report_dot.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::wire {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Core 0 runs P and waits in all-reduce.3 for core 1; core 1 runs Q and
// waits in all-gather.7 for core 0; core 2 is idle and uninvolved.
tpu_emulator::WaitReport CycleReport() {
  tpu_emulator::WaitReport report;
  for (int c = 0; c < 2; ++c) {
    auto* core = report.add_cores();
    core->set_core(c);
    core->set_activity(tpu_emulator::CoreWait::WAITING);
    core->set_program(c == 0 ? "P" : "Q");
    core->set_launch(c == 0 ? 0 : 3);
    core->set_instruction(c == 0 ? "all-reduce.3" : "all-gather.7");
    core->set_kind(c == 0 ? "all-reduce" : "all-gather");
    core->add_waiting_for(1 - c);
  }
  report.add_cores()->set_core(2);
  report.add_cycles()->add_cores(0);
  report.mutable_cycles(0)->add_cores(1);
  return report;
}

TEST(WaitReportDotTest, CycleNamesBothCoresAndProgramsInRed) {
  const std::string dot = WaitReportToDot(CycleReport());
  EXPECT_THAT(dot, HasSubstr("digraph waits {"));
  EXPECT_THAT(dot, HasSubstr("core0 [label=\"core 0\\nwaiting in P #0\", "
                             "fillcolor=lightsalmon];"));
  EXPECT_THAT(dot, HasSubstr("core1 [label=\"core 1\\nwaiting in Q #3\", "
                             "fillcolor=lightsalmon];"));
  EXPECT_THAT(dot, HasSubstr("core0 -> core1 [label=\"P #0\\nall-reduce "
                             "all-reduce.3\", color=red, fontcolor=red, "
                             "penwidth=2.5];"));
  EXPECT_THAT(dot, HasSubstr("core1 -> core0 [label=\"Q #3\\nall-gather "
                             "all-gather.7\", color=red"));
  EXPECT_THAT(dot, HasSubstr("deadlock: core 0 -> core 1 -> core 0"));
  // The idle core nobody waits for is left out.
  EXPECT_THAT(dot, Not(HasSubstr("core2")));
  EXPECT_EQ(dot.back(), '\n');
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
}

TEST(WaitReportDotTest, WaitWithoutCycleIsNotRed) {
  tpu_emulator::WaitReport report = CycleReport();
  report.clear_cycles();
  report.mutable_cores(1)->set_activity(tpu_emulator::CoreWait::RUNNING);
  report.mutable_cores(1)->clear_waiting_for();
  const std::string dot = WaitReportToDot(report);
  EXPECT_THAT(dot, HasSubstr("core0 -> core1 [label=\"P #0\\nall-reduce "
                             "all-reduce.3\"];"));
  EXPECT_THAT(dot, HasSubstr("running Q #3"));
  EXPECT_THAT(dot, Not(HasSubstr("color=red")));
  EXPECT_THAT(dot, Not(HasSubstr("deadlock")));
}

TEST(WaitReportDotTest, QuotesAreEscaped) {
  tpu_emulator::WaitReport report = CycleReport();
  report.mutable_cores(0)->set_program("say \"hi\"");
  EXPECT_THAT(WaitReportToDot(report),
              HasSubstr("waiting in say \\\"hi\\\" #0"));
}

}  // namespace
}  // namespace tpu::wire
