// SPMDFullToShardShape and SPMDShardToFullShape across partitions, with
// hand-computed values: each partition takes its tile of the full array,
// works on it, and every partition gets the assembled full array back.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "emulator/collectives/multi_core_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_util::CompileFor;
using testing_util::RunOnCores;

std::vector<float> ValuesOf(const absl::StatusOr<Literal>& literal) {
  EXPECT_TRUE(literal.ok()) << literal.status();
  if (!literal.ok()) return {};
  auto data = literal->data<float>();
  return std::vector<float>(data.begin(), data.end());
}

// full f32[4,2] split by rows over two partitions (as `in_tiles` places
// them), each tile plus 10 * (partition + 1), assembled by columns (as
// `out_tiles` places them) into f32[2,4].
std::string Program(const std::string& in_tiles, const std::string& out_tiles) {
  return absl::StrCat(R"(
HloModule shard_map, num_partitions=2
ENTRY e {
  full = f32[4,2] parameter(0)
  sharded = f32[4,2] custom-call(full), custom_call_target="Sharding",
      sharding={devices=[2,1])",
                      in_tiles, R"(}
  shard = f32[2,2] custom-call(sharded),
      custom_call_target="SPMDFullToShardShape", sharding={manual}
  id = u32[] partition-id()
  one = u32[] constant(1)
  n = u32[] add(id, one)
  nf = f32[] convert(n)
  ten = f32[] constant(10)
  k = f32[] multiply(nf, ten)
  kb = f32[2,2] broadcast(k), dimensions={}
  work = f32[2,2] add(shard, kb)
  ROOT back = f32[2,4] custom-call(work),
      custom_call_target="SPMDShardToFullShape", sharding={devices=[1,2])",
                      out_tiles, R"(}
})");
}

Literal Full() {
  return Literal::FromVector<float>(xla::F32, {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
}

TEST(SpmdShapesTest, TilesGoToPartitionsAndComeBackAssembled) {
  auto exe = CompileFor(Program("<=[2]", "<=[2]"), 1);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto results = RunOnCores(**exe, 1, 2, {{Full()}, {Full()}});
  ASSERT_EQ(results.size(), 2u);
  // Partition 0: rows 0-1 + 10 = {{10,11},{12,13}} into columns 0-1;
  // partition 1: rows 2-3 + 20 = {{24,25},{26,27}} into columns 2-3.
  for (int p = 0; p < 2; ++p) {
    EXPECT_THAT(ValuesOf(results[p]),
                ElementsAre(10, 11, 24, 25, 12, 13, 26, 27))
        << "partition " << p;
  }
}

TEST(SpmdShapesTest, ExplicitDeviceListsPlaceTilesInTheirOrder) {
  // Tile 0 on partition 1 and tile 1 on partition 0, both ways.
  auto exe = CompileFor(Program("1,0", "1,0"), 1);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto results = RunOnCores(**exe, 1, 2, {{Full()}, {Full()}});
  ASSERT_EQ(results.size(), 2u);
  // Partition 0 takes rows 2-3 (+10) into columns 2-3; partition 1 takes
  // rows 0-1 (+20) into columns 0-1.
  for (int p = 0; p < 2; ++p) {
    EXPECT_THAT(ValuesOf(results[p]),
                ElementsAre(20, 21, 14, 15, 22, 23, 16, 17))
        << "partition " << p;
  }
}

TEST(SpmdShapesTest, TooFewPartitionsAndUnevenTilesSaySo) {
  auto exe = CompileFor(Program("<=[2]", "<=[2]"), 1);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto one = RunOnCores(**exe, 1, 1, {{Full()}});
  ASSERT_FALSE(one[0].ok());
  EXPECT_EQ(one[0].status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(one[0].status().message(),
              HasSubstr("places tiles on 2 partitions but this launch has 1"));

  auto uneven = CompileFor(R"(
HloModule uneven, num_partitions=2
ENTRY e {
  full = f32[3,2] parameter(0)
  sharded = f32[3,2] custom-call(full), custom_call_target="Sharding",
      sharding={devices=[2,1]<=[2]}
  ROOT shard = f32[2,2] custom-call(sharded),
      custom_call_target="SPMDFullToShardShape", sharding={manual}
})",
                           1);
  ASSERT_FALSE(uneven.ok());
  EXPECT_EQ(uneven.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(uneven.status().message(), HasSubstr("uneven tiles"));
}

}  // namespace
}  // namespace tpu::emulator
