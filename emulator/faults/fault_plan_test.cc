#include "emulator/faults/fault_plan.h"

#include <vector>

#include "gtest/gtest.h"

namespace tpu::emulator::faults {
namespace {

Operation Execute(int core, uint32_t client = 1,
                  const std::string& program = "p") {
  return Operation{OpKind::kExecute, core, client, program, ""};
}

// The 1-based positions, among `n` operations from `make`, that matched.
template <typename Make>
std::vector<int> Hits(FaultPlan& plan, int n, Make make) {
  std::vector<int> hits;
  for (int i = 1; i <= n; ++i) {
    if (plan.Check(make(i)).has_value()) hits.push_back(i);
  }
  return hits;
}

TEST(FaultPlanTest, NthCountsPerCore) {
  FaultPlan plan;
  ASSERT_TRUE(plan.Add("execute nth=2 fail=INTERNAL:x").ok());
  // Alternating cores: each core's second execute is the 3rd and 4th.
  EXPECT_EQ(Hits(plan, 6, [](int i) { return Execute(i % 2); }),
            (std::vector<int>{3, 4}));
}

TEST(FaultPlanTest, FirstAndEvery) {
  FaultPlan first;
  ASSERT_TRUE(first.Add("execute core=0 first=2 hang").ok());
  EXPECT_EQ(Hits(first, 4, [](int) { return Execute(0); }),
            (std::vector<int>{1, 2}));
  FaultPlan every;
  ASSERT_TRUE(every.Add("execute every hang").ok());
  EXPECT_EQ(Hits(every, 3, [](int) { return Execute(0); }),
            (std::vector<int>{1, 2, 3}));
  FaultPlan plain;
  ASSERT_TRUE(plain.Add("execute hang").ok());
  EXPECT_EQ(Hits(plain, 2, [](int) { return Execute(5); }),
            (std::vector<int>{1, 2}));
}

TEST(FaultPlanTest, FiltersSelectBeforeCounting) {
  FaultPlan plan;
  ASSERT_TRUE(plan.Add("execute core=1 client=2 program=b nth=2 hang").ok());
  // Only core 1, client 2, program b counts: its second is operation 5.
  std::vector<Operation> ops = {Execute(1, 2, "b"), Execute(0, 2, "b"),
                                Execute(1, 3, "b"), Execute(1, 2, "a"),
                                Execute(1, 2, "b"), Execute(1, 2, "b")};
  EXPECT_EQ(Hits(plan, 6, [&](int i) { return ops[i - 1]; }),
            (std::vector<int>{5}));
}

TEST(FaultPlanTest, KindsAndInstructions) {
  FaultPlan plan;
  ASSERT_TRUE(plan.Add("collective instruction=ar.1 skip").ok());
  EXPECT_FALSE(plan.Check(Execute(0)).has_value());
  EXPECT_FALSE(
      plan.Check({OpKind::kCollective, 0, 1, "p", "ar.2"}).has_value());
  auto match = plan.Check({OpKind::kCollective, 0, 1, "p", "ar.1"});
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->rule_number, 1);
  EXPECT_EQ(match->action.kind, ActionKind::kSkip);
  EXPECT_EQ(match->Describe(),
            "fault rule 1 (collective instruction=ar.1 skip)");
  FaultPlan any;
  ASSERT_TRUE(any.Add("any nth=3 fail=ABORTED").ok());
  std::vector<Operation> ops = {{OpKind::kAlloc, 0},
                                {OpKind::kTransferTo, 0},
                                {OpKind::kExecute, 0},
                                {OpKind::kCompile, -1}};
  EXPECT_EQ(Hits(any, 4, [&](int i) { return ops[i - 1]; }),
            (std::vector<int>{3}));
}

TEST(FaultPlanTest, FirstMatchingRuleWinsAndAllCount) {
  FaultPlan plan;
  ASSERT_TRUE(plan.Add("execute nth=1 fail=INTERNAL:one").ok());
  ASSERT_TRUE(plan.Add("execute nth=1 fail=INTERNAL:two").ok());
  ASSERT_TRUE(plan.Add("execute nth=2 fail=INTERNAL:three").ok());
  auto a = plan.Check(Execute(0));
  auto b = plan.Check(Execute(0));
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->rule_number, 1);
  EXPECT_EQ(b->rule_number, 3);  // rule 2 counted the first execute too
  std::vector<RuleInfo> list = plan.List();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].matched, 1);
  EXPECT_EQ(list[1].matched, 0);
  EXPECT_EQ(list[2].text, "execute nth=2 fail=INTERNAL:three");
}

TEST(FaultPlanTest, ProbabilityIsDeterministicPerSeed) {
  auto run = [](const std::string& rule) {
    FaultPlan plan;
    EXPECT_TRUE(plan.Add(rule).ok());
    return Hits(plan, 200, [](int i) { return Execute(i % 2); });
  };
  const std::vector<int> first = run("execute seed=42 probability=0.3 hang");
  EXPECT_EQ(first, run("execute seed=42 probability=0.3 hang"));
  EXPECT_NE(first, run("execute seed=43 probability=0.3 hang"));
  // Roughly 30% of 200.
  EXPECT_GT(first.size(), 30u);
  EXPECT_LT(first.size(), 90u);
  EXPECT_TRUE(run("execute probability=0 hang").empty());
  EXPECT_EQ(run("execute probability=1 hang").size(), 200u);
}

TEST(FaultPlanTest, ClearRemovesRulesAndRunsCallbacks) {
  FaultPlan plan;
  int cleared = 0;
  plan.OnClear([&] { ++cleared; });
  ASSERT_EQ(*plan.Add("execute hang"), 1);
  ASSERT_EQ(*plan.Add("alloc hang"), 2);
  EXPECT_FALSE(plan.Add("alloc hangs").ok());
  EXPECT_EQ(plan.List().size(), 2u);
  plan.Clear();
  EXPECT_EQ(cleared, 1);
  EXPECT_TRUE(plan.empty());
  EXPECT_FALSE(plan.Check(Execute(0)).has_value());
  EXPECT_EQ(*plan.Add("execute hang"), 1);
}

TEST(FaultPlanTest, ActionsOnlyMatchKindsTheyFitUnderAny) {
  FaultPlan plan;
  ASSERT_TRUE(plan.Add("any slow=3").ok());
  EXPECT_FALSE(plan.Check({OpKind::kAlloc, 0}).has_value());
  EXPECT_TRUE(plan.Check(Execute(0)).has_value());
  FaultPlan hbm;
  ASSERT_TRUE(hbm.Add("any hbm=1KiB").ok());
  EXPECT_FALSE(hbm.Check({OpKind::kCompile, -1}).has_value());
  EXPECT_TRUE(hbm.Check({OpKind::kAlloc, 2}).has_value());
}

}  // namespace
}  // namespace tpu::emulator::faults
