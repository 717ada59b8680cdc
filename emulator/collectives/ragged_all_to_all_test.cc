// ragged-all-to-all with hand-computed values: 2 and 4 replicas, s32 and s64
// offsets, rows of several elements, s4 data, replica groups in reverse
// order, and INVALID_ARGUMENT (never a crash, never a hang) for offsets and
// sizes that do not fit.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "emulator/collectives/multi_core_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing_util::CompileFor;
using testing_util::RunOnCores;

template <typename T>
Literal Vec(xla::PrimitiveType type, std::vector<int64_t> dims,
            std::vector<T> values) {
  return Literal::FromVector<T>(type, std::move(dims),
                                absl::MakeConstSpan(values));
}

Literal F32(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Vec<float>(xla::F32, {n}, std::move(v));
}
Literal S32(std::vector<int32_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Vec<int32_t>(xla::S32, {n}, std::move(v));
}
Literal S64(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Vec<int64_t>(xla::S64, {n}, std::move(v));
}

template <typename T>
std::vector<T> ValuesOf(const absl::StatusOr<Literal>& literal) {
  if (!literal.ok()) return {};
  auto data = literal->data<T>();
  return std::vector<T>(data.begin(), data.end());
}

std::string Module(const std::string& data, const std::string& offsets,
                   const std::string& groups) {
  return absl::StrCat(R"(
HloModule ragged
ENTRY e {
  input = )",
                      data, R"( parameter(0)
  output = )",
                      data, R"( parameter(1)
  input_offsets = )",
                      offsets, R"( parameter(2)
  send_sizes = )",
                      offsets, R"( parameter(3)
  output_offsets = )",
                      offsets, R"( parameter(4)
  recv_sizes = )",
                      offsets, R"( parameter(5)
  ROOT ra2a = )",
                      data,
                      R"( ragged-all-to-all(input, output, input_offsets,
      send_sizes, output_offsets, recv_sizes), replica_groups=)",
                      groups, R"(
})");
}

// Replica 0 sends row 0 (1) to itself at row 0 and rows 1-2 (2, 3) to
// replica 1 at row 0; replica 1 sends row 0 (5) to replica 0 at row 1 and
// rows 2-3 (7, 8) to itself at row 2. Unwritten rows keep -1.
std::vector<std::vector<Literal>> TwoReplicaArguments() {
  return {
      {F32({1, 2, 3, 4}), F32({-1, -1, -1, -1}), S32({0, 1}), S32({1, 2}),
       S32({0, 0}), S32({1, 1})},
      {F32({5, 6, 7, 8}), F32({-1, -1, -1, -1}), S32({0, 2}), S32({1, 2}),
       S32({1, 2}), S32({2, 2})},
  };
}

TEST(RaggedAllToAllTest, TwoReplicasWithS32Offsets) {
  auto exe = CompileFor(Module("f32[4]", "s32[2]", "{{0,1}}"), 2);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto results = RunOnCores(**exe, 2, 1, TwoReplicaArguments());
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  ASSERT_TRUE(results[1].ok()) << results[1].status();
  EXPECT_THAT(ValuesOf<float>(results[0]), ElementsAre(1, 5, -1, -1));
  EXPECT_THAT(ValuesOf<float>(results[1]), ElementsAre(2, 3, 7, 8));
}

TEST(RaggedAllToAllTest, PeersAreGroupPositionsNotReplicaIds) {
  // Group {1,0}: replica 1 is position 0, so it plays replica 0's part of
  // the test above, and replica 0 plays position 1's.
  auto exe = CompileFor(Module("f32[4]", "s32[2]", "{{1,0}}"), 2);
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<std::vector<Literal>> args = TwoReplicaArguments();
  std::swap(args[0], args[1]);
  auto results = RunOnCores(**exe, 2, 1, args);
  EXPECT_THAT(ValuesOf<float>(results[1]), ElementsAre(1, 5, -1, -1));
  EXPECT_THAT(ValuesOf<float>(results[0]), ElementsAre(2, 3, 7, 8));
}

// XLA's RaggedAllToAll_2GPUs_S4 data and expected values: row counts
// {{1,1},{3,1}}, rows of two s4 elements.
TEST(RaggedAllToAllTest, S4RowsAsXlaTestsThem) {
  const std::string text = R"(
HloModule ragged_s4
ENTRY e {
  in8 = s8[4,2] parameter(0)
  out8 = s8[4,2] parameter(1)
  input_offsets = s32[2] parameter(2)
  send_sizes = s32[2] parameter(3)
  output_offsets = s32[2] parameter(4)
  recv_sizes = s32[2] parameter(5)
  input = s4[4,2] convert(in8)
  output = s4[4,2] convert(out8)
  ra2a = s4[4,2] ragged-all-to-all(input, output, input_offsets, send_sizes,
      output_offsets, recv_sizes), replica_groups={{0,1}}
  ROOT back = s8[4,2] convert(ra2a)
})";
  auto exe = CompileFor(text, 2);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto s8 = [](std::vector<int8_t> v) {
    return Vec<int8_t>(xla::S8, {4, 2}, std::move(v));
  };
  const Literal init = s8({-1, -1, -1, -1, -1, -1, -1, -1});
  std::vector<std::vector<Literal>> args = {
      {s8({1, 1, 2, 2, 0, 0, 0, 0}), init, S32({0, 1}), S32({1, 1}),
       S32({0, 0}), S32({1, 3})},
      {s8({3, 3, 4, 4, 5, 5, 6, 6}), init, S32({0, 3}), S32({3, 1}),
       S32({1, 1}), S32({1, 1})},
  };
  auto results = RunOnCores(**exe, 2, 1, args);
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  EXPECT_THAT(ValuesOf<int8_t>(results[0]),
              ElementsAre(1, 1, 3, 3, 4, 4, 5, 5));
  EXPECT_THAT(ValuesOf<int8_t>(results[1]),
              ElementsAre(2, 2, 6, 6, -1, -1, -1, -1));
}

// Four replicas, rows of two s32, s64 offsets: replica i sends replica
// j != i one row {10i+j, 100i+j}; receiver j stores the rows of its three
// senders in sender order and keeps its last row.
TEST(RaggedAllToAllTest, FourReplicasWithS64OffsetsAndRowsOfTwo) {
  auto exe = CompileFor(Module("s32[4,2]", "s64[4]", "{}"), 4);
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<std::vector<Literal>> args;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> input;
    std::vector<int64_t> in_off, sizes, out_off, recv;
    for (int j = 0; j < 4; ++j) {
      if (j != i) input.insert(input.end(), {10 * i + j, 100 * i + j});
      in_off.push_back(j == i ? 0 : (j < i ? j : j - 1));
      sizes.push_back(j == i ? 0 : 1);
      out_off.push_back(j == i ? 0 : (i < j ? i : i - 1));
      recv.push_back(j == i ? 0 : 1);
    }
    input.insert(input.end(), {99, 99});
    args.push_back(
        {Vec<int32_t>(xla::S32, {4, 2}, input),
         Vec<int32_t>(xla::S32, {4, 2}, {-1, -1, -1, -1, -1, -1, -1, -1}),
         S64(in_off), S64(sizes), S64(out_off), S64(recv)});
  }
  auto results = RunOnCores(**exe, 4, 1, args);
  for (int r = 0; r < 4; ++r)
    ASSERT_TRUE(results[r].ok()) << results[r].status();
  EXPECT_THAT(ValuesOf<int32_t>(results[0]),
              ElementsAreArray({10, 100, 20, 200, 30, 300, -1, -1}));
  EXPECT_THAT(ValuesOf<int32_t>(results[1]),
              ElementsAreArray({1, 1, 21, 201, 31, 301, -1, -1}));
  EXPECT_THAT(ValuesOf<int32_t>(results[2]),
              ElementsAreArray({2, 2, 12, 102, 32, 302, -1, -1}));
  EXPECT_THAT(ValuesOf<int32_t>(results[3]),
              ElementsAreArray({3, 3, 13, 103, 23, 203, -1, -1}));
}

// What every replica gets when one of them names rows that do not exist.
void ExpectBothFail(std::vector<std::vector<Literal>> args,
                    const std::string& part) {
  auto exe = CompileFor(Module("f32[4]", "s32[2]", "{{0,1}}"), 2);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto results = RunOnCores(**exe, 2, 1, args);
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(results[r].ok()) << "replica " << r;
    EXPECT_EQ(results[r].status().code(), absl::StatusCode::kInvalidArgument)
        << results[r].status();
    EXPECT_THAT(results[r].status().message(), HasSubstr("ra2a"));
    EXPECT_THAT(results[r].status().message(), HasSubstr(part));
  }
}

TEST(RaggedAllToAllTest, OutOfRangeOffsetsAndSizesAreInvalidArgument) {
  {
    auto args = TwoReplicaArguments();
    args[1][2] = S32({0, 3});  // rows [3, 5) of a 4-row input
    ExpectBothFail(std::move(args),
                   "replica 1's update 0 for peer 1 (input_offset 3, "
                   "send_size 2) reads rows outside its input's 4 rows");
  }
  {
    auto args = TwoReplicaArguments();
    args[0][4] = S32({-1, 0});
    ExpectBothFail(std::move(args),
                   "replica 0's update 0 for peer 0 (output_offset -1");
  }
  {
    auto args = TwoReplicaArguments();
    args[1][4] = S32({1, 3});  // rows [3, 5) of replica 1's output
    ExpectBothFail(std::move(args), "writes rows outside the output's 4 rows");
  }
  {
    auto args = TwoReplicaArguments();
    args[0][3] = S32({-2, 2});
    ExpectBothFail(std::move(args), "send_size -2");
  }
  {
    auto args = TwoReplicaArguments();
    args[1][5] = S32({1, 2});  // replica 0 sends 2 rows, replica 1 expects 1
    ExpectBothFail(std::move(args), "does not match the peer's recv_size 1");
  }
}

TEST(RaggedAllToAllTest, MalformedInstructionsFailBeforeRunning) {
  auto uneven = CompileFor(Module("f32[4]", "s32[3]", "{{0,1}}"), 2);
  ASSERT_TRUE(uneven.ok()) << uneven.status();
  std::vector<std::vector<Literal>> args(2);
  for (auto& a : args) {
    a = {F32({1, 2, 3, 4}), F32({0, 0, 0, 0}), S32({0, 0, 0}),
         S32({0, 0, 0}),    S32({0, 0, 0}),    S32({0, 0, 0})};
  }
  auto results = RunOnCores(**uneven, 2, 1, args);
  for (const auto& result : results) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(result.status().message(),
                HasSubstr("ra2a has 3 offsets and sizes but its group has 2"));
  }

  auto rank2 = CompileFor(Module("f32[4]", "s32[2,1]", "{{0,1}}"), 2);
  ASSERT_FALSE(rank2.ok());
  EXPECT_EQ(rank2.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(rank2.status().message(), HasSubstr("rank 2"));

  auto mixed = CompileFor(R"(
HloModule mixed
ENTRY e {
  input = f32[4] parameter(0)
  output = f32[4] parameter(1)
  a = s32[2] parameter(2)
  b = s64[2] parameter(3)
  ROOT ra2a = f32[4] ragged-all-to-all(input, output, a, b, a, a),
      replica_groups={{0,1}}
})",
                          2);
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mixed.status().message(), HasSubstr("must have one shape"));
}

}  // namespace
}  // namespace tpu::emulator
