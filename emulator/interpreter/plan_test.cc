// The execution plan's memory behaviour: dead buffers reused, values freed
// after their last use, fused elementwise trees streamed through
// broadcasts, and compile-time rejection of malformed programs.

#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"

namespace tpu::emulator::interpreter {
namespace {

using testing::CompileHlo;
using testing::RunHlo;
using testing::Values;
using testing::Vec;

TEST(PlanTest, ElementwiseChainReusesDeadBuffers) {
  // s32 chains are not fused, so each op runs on its own.
  const std::string text = R"(
ENTRY e {
  x = s32[1024] parameter(0)
  a = s32[1024] add(x, x)
  b = s32[1024] multiply(a, a)
  ROOT c = s32[1024] negate(b)
})";
  std::vector<int32_t> values(1024, 3);
  Literal arg = Vec<int32_t>(xla::S32, {1024}, values);
  ExecutionStats stats;
  // The test keeps `arg`, so the argument buffer is shared: one
  // intermediate buffer serves a, b and c.
  absl::StatusOr<Literal> out = RunHlo(text, {arg}, {}, nullptr, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int32_t>(*out)[7], -36);
  EXPECT_EQ(stats.peak_live_bytes, 4096);
  EXPECT_EQ(stats.instructions_executed, 3);
  // A uniquely owned argument is reused too: no intermediate bytes at all.
  Literal unique_arg = Vec<int32_t>(xla::S32, {1024}, values);
  const void* arg_bytes = unique_arg.untyped_data();
  std::vector<Literal> args;
  args.push_back(std::move(unique_arg));
  out = RunHlo(text, std::move(args), {}, nullptr, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(stats.peak_live_bytes, 0);
  EXPECT_EQ(out->untyped_data(), arg_bytes);
}

TEST(PlanTest, FreesValuesAfterLastUse) {
  // Five 4 KiB values in sequence, each used once: at most two are live.
  const std::string text = R"(
ENTRY e {
  x = s32[1024] parameter(0)
  a = s32[1024] add(x, x)
  b = s32[1024] multiply(a, x)
  c = s32[1024] subtract(b, x)
  d = s32[1024] add(c, x)
  ROOT e = s32[1024] multiply(d, x)
})";
  Literal arg = Vec<int32_t>(xla::S32, {1024}, std::vector<int32_t>(1024, 2));
  ExecutionStats stats;
  absl::StatusOr<Literal> out = RunHlo(text, {arg}, {}, nullptr, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int32_t>(*out)[0], ((2 + 2) * 2 - 2 + 2) * 2);
  EXPECT_LE(stats.peak_live_bytes, 2 * 4096);
}

TEST(PlanTest, ElementwiseFusionStreamsThroughBroadcasts) {
  const std::string text = R"(
ENTRY e {
  a = f32[3,4] parameter(0)
  b = f32[4] parameter(1)
  c = f32[3,4] parameter(2)
  s = f32[3] parameter(3)
  bb = f32[3,4] broadcast(b), dimensions={1}
  m = f32[3,4] multiply(a, bb)
  sb = f32[3,4] broadcast(s), dimensions={0}
  t = f32[3,4] add(m, sb)
  e = f32[3,4] exponential(c)
  ROOT r = f32[3,4] subtract(t, e)
})";
  std::vector<float> a(12), c(12);
  for (int i = 0; i < 12; ++i) {
    a[i] = i - 5.5f;
    c[i] = 0.1f * i;
  }
  std::vector<float> b = {1, -2, 0.5f, 3}, s = {10, 20, 30};
  ExecutionStats stats;
  absl::StatusOr<Literal> out =
      RunHlo(text,
             {Vec<float>(xla::F32, {3, 4}, a), Vec<float>(xla::F32, {4}, b),
              Vec<float>(xla::F32, {3, 4}, c), Vec<float>(xla::F32, {3}, s)},
             {}, nullptr, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  // One fused kernel instead of six.
  EXPECT_EQ(stats.instructions_executed, 1);
  std::vector<float> got = Values<float>(*out);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      const float want = (a[i * 4 + j] * b[j] + s[i]) - std::exp(c[i * 4 + j]);
      EXPECT_NEAR(got[i * 4 + j], want, 1e-5 * std::abs(want)) << i << "," << j;
    }
  }
}

// Results of 8 MiB and more leave the fused loop through non-temporal stores;
// every element must still arrive, including a partial last tile.
TEST(PlanTest, LargeFusedResultIsStreamedExactly) {
  const std::string text = R"(
ENTRY e {
  a = f32[2049,1025] parameter(0)
  b = f32[1025] parameter(1)
  bb = f32[2049,1025] broadcast(b), dimensions={1}
  m = f32[2049,1025] multiply(a, bb)
  ROOT r = f32[2049,1025] add(m, a)
})";
  const int rows = 2049, cols = 1025;
  std::vector<float> a(rows * cols), b(cols);
  for (int i = 0; i < rows * cols; ++i) a[i] = static_cast<float>(i % 97);
  for (int j = 0; j < cols; ++j) b[j] = static_cast<float>(j % 5) - 2;
  std::vector<Literal> args;
  args.push_back(Vec<float>(xla::F32, {rows, cols}, a));
  args.push_back(Vec<float>(xla::F32, {cols}, b));
  absl::StatusOr<Literal> out = RunHlo(text, std::move(args));
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> got = Values<float>(*out);
  ASSERT_EQ(got.size(), a.size());
  int wrong = 0;
  for (int i = 0; i < rows * cols; ++i) {
    if (got[i] != a[i] * b[i % cols] + a[i]) ++wrong;
  }
  EXPECT_EQ(wrong, 0);
}

TEST(PlanTest, CompileRejectsBadCalledComputationsAndShapes) {
  absl::Status s = CompileHlo(R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  x = s32[4] parameter(0)
  z = s32[] constant(0)
  ROOT r = s32[] reduce(x, z), dimensions={0}, to_apply=add
})")
                       .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("instruction r (reduce)"), std::string::npos) << s;
  s = CompileHlo(R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT r = f32[5] slice(x), slice={[0:5]}
})")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("out of bounds"), std::string::npos) << s;
  s = CompileHlo(R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT r = s32[4] shift-left(x, x)
})")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = CompileHlo(R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT r = f32[4] shift-left(x, x)
})")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_NE(s.message().find("shift-left on element type f32"),
            std::string::npos)
      << s;
}

TEST(PlanTest, WhileConditionReadsTheStateWithoutWritingIt) {
  // The condition reads the loop state in place. Its multiply would take a
  // dead, uniquely owned operand buffer for its result; the state's buffer
  // must not count as one, or the state would be squared at every check
  // (and the loop would end at 16384).
  const std::string text = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
cond {
  p = f32[4] parameter(0)
  squares = f32[4] multiply(p, p)
  zero = f32[] constant(0)
  sum = f32[] reduce(squares, zero), dimensions={0}, to_apply=add
  limit = f32[] constant(1000)
  ROOT more = pred[] compare(sum, limit), direction=LT
}
body {
  p = f32[4] parameter(0)
  ROOT twice = f32[4] add(p, p)
}
ENTRY e {
  x = f32[4] parameter(0)
  ROOT w = f32[4] while(x), condition=cond, body=body
})";
  std::vector<Literal> args;
  args.push_back(Vec<float>(xla::F32, {4}, {1, 1, 1, 1}));
  absl::StatusOr<Literal> out = RunHlo(text, std::move(args));
  ASSERT_TRUE(out.ok()) << out.status();
  // Sums of squares 4, 16, 64, 256 go on; 1024 stops.
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{16, 16, 16, 16}));
}

TEST(PlanTest, WhileConditionMayReturnTheStateItself) {
  // A pred[] state whose condition is its parameter: the condition's result
  // is the borrowed state, returned as a copy; the body flips it once.
  const std::string text = R"(
cond {
  ROOT p = pred[] parameter(0)
}
body {
  p = pred[] parameter(0)
  ROOT n = pred[] not(p)
}
ENTRY e {
  x = pred[] parameter(0)
  ROOT w = pred[] while(x), condition=cond, body=body
})";
  const bool yes = true;
  std::vector<Literal> args;
  args.push_back(
      Literal::FromVector<bool>(xla::PRED, {}, absl::MakeConstSpan(&yes, 1)));
  ExecutionStats stats;
  absl::StatusOr<Literal> out =
      RunHlo(text, std::move(args), {}, nullptr, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<bool>(*out), (std::vector<bool>{false}));
  // while; the condition twice (nothing but its parameter); not once.
  EXPECT_EQ(stats.instructions_executed, 2);
}

}  // namespace
}  // namespace tpu::emulator::interpreter
