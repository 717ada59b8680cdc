// What each collective computes (operation_semantics.md), beyond the basic
// forms in collective_hub_test: async pairs, broadcast, variadic and tuple
// forms, reductions by computation, element types, protos' device lists and
// the partition group modes.

#include "absl/strings/str_cat.h"
#include "emulator/collectives/collective_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

using ::testing::ElementsAre;
using testing_util::Ints;
using testing_util::ModuleWithAdd;
using testing_util::RunReplicated;
using testing_util::S32;

std::vector<Literal> Iota2(int n) {
  std::vector<Literal> inputs;
  for (int r = 0; r < n; ++r) inputs.push_back(S32({2}, {r, 10 * r}));
  return inputs;
}

TEST(CollectiveSemanticsTest, AsyncPairsComputeInStart) {
  std::vector<Literal> out = RunReplicated(
      ModuleWithAdd(
          "p = s32[2] parameter(0)\n"
          "ars = s32[2] all-reduce-start(p), replica_groups={}, "
          "to_apply=add\n"
          "ard = s32[2] all-reduce-done(ars)\n"
          "ags = (s32[2], s32[4]) all-gather-start(ard), dimensions={0}, "
          "replica_groups={}\n"
          "agd = s32[4] all-gather-done(ags)\n"
          "cps = (s32[4], s32[4], u32[], u32[]) "
          "collective-permute-start(agd), source_target_pairs={{0,1}}\n"
          "ROOT cpd = s32[4] collective-permute-done(cps)"),
      2, Iota2(2));
  ASSERT_EQ(out.size(), 2u);
  // all-reduce: {1, 10}; gathered: {1, 10, 1, 10}; only replica 1 receives.
  EXPECT_THAT(Ints(out[0]), ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(Ints(out[1]), ElementsAre(1, 10, 1, 10));
}

TEST(CollectiveSemanticsTest, BroadcastSendsTheFirstOfTheGroup) {
  std::vector<Literal> out =
      RunReplicated(ModuleWithAdd("p = s32[2] parameter(0)\n"
                                  "ROOT b = s32[2] collective-broadcast(p), "
                                  "replica_groups={{1,0},{2,3}}"),
                    4, Iota2(4));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_THAT(Ints(out[0]), ElementsAre(1, 10));
  EXPECT_THAT(Ints(out[1]), ElementsAre(1, 10));
  EXPECT_THAT(Ints(out[2]), ElementsAre(2, 20));
  EXPECT_THAT(Ints(out[3]), ElementsAre(2, 20));
}

TEST(CollectiveSemanticsTest, VariadicAllReduceAndTupleAllToAll) {
  std::vector<Literal> out = RunReplicated(
      ModuleWithAdd(
          "p = s32[2] parameter(0)\n"
          "s = s32[1] slice(p), slice={[0:1]}\n"
          "t = s32[1] slice(p), slice={[1:2]}\n"
          "ar = (s32[1], s32[1]) all-reduce(s, t), replica_groups={}, "
          "to_apply=add\n"
          "x = s32[1] get-tuple-element(ar), index=0\n"
          "y = s32[1] get-tuple-element(ar), index=1\n"
          "a2a = (s32[1], s32[1]) all-to-all(s, t), replica_groups={}\n"
          "u = s32[1] get-tuple-element(a2a), index=0\n"
          "v = s32[1] get-tuple-element(a2a), index=1\n"
          "ROOT c = s32[4] concatenate(x, y, u, v), dimensions={0}"),
      2, Iota2(2));
  ASSERT_EQ(out.size(), 2u);
  // Sums {1}, {10}; replica i receives operand i of each replica.
  EXPECT_THAT(Ints(out[0]), ElementsAre(1, 10, 0, 1));
  EXPECT_THAT(Ints(out[1]), ElementsAre(1, 10, 0, 10));
}

TEST(CollectiveSemanticsTest, ReductionByComputationFoldsInReplicaOrder) {
  // f(a, b) = 2a + b is not commutative: the fold order shows.
  std::vector<Literal> out = RunReplicated(R"(
HloModule m
f {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  two = s32[] constant(2)
  a2 = s32[] multiply(a, two)
  ROOT r = s32[] add(a2, b)
}
ENTRY e {
  p = s32[2] parameter(0)
  ROOT ar = s32[2] all-reduce(p), replica_groups={{2,1,0}}, to_apply=f
})",
                                           3, Iota2(3));
  ASSERT_EQ(out.size(), 3u);
  // ((0*2 + 1)*2 + 2) = 4; ((0*2 + 10)*2 + 20) = 40.
  for (const Literal& o : out) EXPECT_THAT(Ints(o), ElementsAre(4, 40));
}

TEST(CollectiveSemanticsTest, ElementTypes) {
  struct Case {
    std::string type;
    std::string op;
    std::string a, b, expected;
  };
  const std::vector<Case> cases = {
      {"pred", "and", "true", "false", "false"},
      {"pred", "or", "true", "false", "true"},
      {"u8", "maximum", "200", "7", "200"},
      {"s8", "minimum", "-100", "5", "-100"},
      {"u32", "multiply", "65536", "65536", "0"},
      {"bf16", "add", "1", "0.00390625", "1"},
      {"f16", "add", "1", "0.5", "1.5"},
      {"f32", "maximum", "-1", "2.5", "2.5"},
      {"s64", "add", "4000000000", "1", "4000000001"},
  };
  for (const Case& c : cases) {
    const std::string text = absl::StrCat(
        "HloModule m\nr {\n  a = ", c.type, "[] parameter(0)\n  b = ", c.type,
        "[] parameter(1)\n  ROOT r = ", c.type, "[] ", c.op,
        "(a, b)\n}\nENTRY e {\n  id = u32[] replica-id()\n  zero = u32[] "
        "constant(0)\n  first = pred[] compare(id, zero), direction=EQ\n"
        "  a = ",
        c.type, "[] constant(", c.a, ")\n  b = ", c.type, "[] constant(", c.b,
        ")\n  v = ", c.type, "[] select(first, a, b)\n  s = ", c.type,
        "[] all-reduce(v), replica_groups={}, to_apply=r\n  e = ", c.type,
        "[] constant(", c.expected, ")\n  ROOT eq = pred[] compare(s, e), ",
        "direction=EQ\n}\n");
    std::vector<Literal> inputs(2, Literal::Tuple({}));
    auto executable = testing_util::Compile(text, 2);
    ASSERT_NE(executable, nullptr) << c.type << " " << c.op;
    CollectiveHub hub(testing_util::HubOptions(2));
    std::vector<absl::StatusOr<Literal>> results(2, Literal());
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        results[r] =
            testing_util::RunLaunch(*executable, hub, r, r, {0, 1}, {});
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(results[r].ok()) << results[r].status();
      EXPECT_TRUE(results[r]->data<bool>()[0])
          << c.type << " " << c.op << " replica " << r;
    }
  }
}

TEST(CollectiveSemanticsTest, DeviceListsFromProtos) {
  // The same all-reduce with its groups in collective_device_list (field
  // 87), explicit and iota, as newer XLA serializes them.
  for (bool iota : {false, true}) {
    auto module = hlo::ParseHloModule(
        ModuleWithAdd("p = s32[1] parameter(0)\n"
                      "ROOT a = s32[1] all-reduce(p), replica_groups={}, "
                      "to_apply=add"));
    ASSERT_TRUE(module.ok());
    for (auto& computation : *module->mutable_computations()) {
      for (auto& instruction : *computation.mutable_instructions()) {
        if (instruction.opcode() != "all-reduce") continue;
        auto* list = instruction.mutable_collective_device_list();
        if (iota) {
          // [2,2]<=[2,2]T(1,0): {{0,2},{1,3}}.
          auto* groups = list->mutable_iota_replica_group_list();
          groups->set_num_replica_groups(2);
          groups->set_num_devices_per_group(2);
          groups->add_iota_reshape_dims(2);
          groups->add_iota_reshape_dims(2);
          groups->add_iota_transpose_perm(1);
          groups->add_iota_transpose_perm(0);
        } else {
          auto* g0 = list->add_replica_groups();
          g0->add_replica_ids(0);
          g0->add_replica_ids(2);
          auto* g1 = list->add_replica_groups();
          g1->add_replica_ids(1);
          g1->add_replica_ids(3);
        }
      }
    }
    interpreter::CompileOptions options;
    options.num_replicas = 4;
    auto executable = interpreter::Executable::Compile(*module, options);
    ASSERT_TRUE(executable.ok()) << executable.status();
    CollectiveHub hub(testing_util::HubOptions(4));
    std::vector<absl::StatusOr<Literal>> results(4, Literal());
    std::vector<std::thread> threads;
    for (int r = 0; r < 4; ++r) {
      threads.emplace_back([&, r] {
        results[r] = testing_util::RunLaunch(
            **executable, hub, r, r, {0, 1, 2, 3}, {S32({1}, {1 << r})});
      });
    }
    for (auto& t : threads) t.join();
    const std::vector<int32_t> expected = {5, 10, 5, 10};
    for (int r = 0; r < 4; ++r) {
      ASSERT_TRUE(results[r].ok()) << results[r].status();
      EXPECT_THAT(Ints(*results[r]), ElementsAre(expected[r]))
          << (iota ? "iota" : "explicit") << " replica " << r;
    }
  }
}

TEST(CollectiveSemanticsTest, ChannelIdWithoutGlobalIdsIsCrossPartition) {
  // With one partition, a cross-partition all-to-all has every replica
  // alone in its group: the data stays where it is.
  std::vector<Literal> out = RunReplicated(
      ModuleWithAdd(
          "p = s32[2] parameter(0)\n"
          "ROOT t = s32[2] all-to-all(p), dimensions={0}, channel_id=1, "
          "replica_groups={}"),
      2, Iota2(2));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_THAT(Ints(out[0]), ElementsAre(0, 0));
  EXPECT_THAT(Ints(out[1]), ElementsAre(1, 10));
  // Flattened ids with one partition are replica ids.
  out = RunReplicated(
      ModuleWithAdd("p = s32[2] parameter(0)\n"
                    "ROOT a = s32[2] all-reduce(p), channel_id=1, "
                    "use_global_device_ids=true, replica_groups={{0,1}}, "
                    "to_apply=add"),
      2, Iota2(2));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_THAT(Ints(out[0]), ElementsAre(1, 10));
}

}  // namespace
}  // namespace tpu::emulator
