#include "emulator/faults/fault_plan_file.h"

#include "gtest/gtest.h"

namespace tpu::emulator::faults {
namespace {

TEST(FaultPlanFileTest, SkipsCommentsAndBlankLines) {
  FaultPlan plan;
  ASSERT_TRUE(AddRulesFromText("plan.txt",
                               "# the deadlock walkthrough\n"
                               "\n"
                               "execute core=1 nth=1 delay=200ms\r\n"
                               "   # indented comment\n"
                               "alloc core=0 hbm=1MiB\n",
                               &plan)
                  .ok());
  std::vector<RuleInfo> rules = plan.List();
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].text, "execute core=1 nth=1 delay=200ms");
  EXPECT_EQ(rules[1].number, 2);
}

TEST(FaultPlanFileTest, ErrorsNameFileLineAndColumnAndAddNothing) {
  FaultPlan plan;
  absl::Status status = AddRulesFromText(
      "plan.txt", "execute hang\n# c\nexecute core=1 falil=x\n", &plan);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().substr(0, 60),
            "plan.txt:3:16: expected a filter (core=, client=, program=, ");
  EXPECT_TRUE(plan.empty());
}

TEST(FaultPlanFileTest, MissingFile) {
  FaultPlan plan;
  absl::Status status = AddRulesFromFile("/nonexistent/plan.txt", &plan);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(),
            "cannot read the fault plan /nonexistent/plan.txt; pass a file "
            "with one fault rule per line");
}

}  // namespace
}  // namespace tpu::emulator::faults
