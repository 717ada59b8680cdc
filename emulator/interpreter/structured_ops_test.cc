// Gather, scatter, sort and control flow, written in HLO text: index
// clamping, duplicate updates, stable multi-operand sorts, loops,
// conditionals, calls and cancellation.

#include <atomic>

#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"

namespace tpu::emulator::interpreter {
namespace {

using testing::CompileHlo;
using testing::RunHloOrFail;
using testing::Scalar;
using testing::Values;
using testing::Vec;
using testing::VecBool;

constexpr char kAddS32[] = R"(
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}
)";

TEST(GatherTest, RowsWithClampedIndices) {
  Literal out =
      RunHloOrFail(R"(
ENTRY e {
  x = s32[3,3] parameter(0)
  i = s32[3] parameter(1)
  ROOT g = s32[3,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
})",
                   {Vec<int32_t>(xla::S32, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                    Vec<int32_t>(xla::S32, {3}, {2, 7, -1})});
  EXPECT_EQ(Values<int32_t>(out),
            (std::vector<int32_t>{7, 8, 9, 7, 8, 9, 1, 2, 3}));
}

TEST(GatherTest, TwoDimensionalWindowsAndBatching) {
  // 2x2 windows at (row, col) starts; the window dims come after the batch.
  Literal out = RunHloOrFail(
      R"(
ENTRY e {
  x = s32[3,4] parameter(0)
  i = s32[2,2] parameter(1)
  ROOT g = s32[2,2,2] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}
})",
      {Vec<int32_t>(xla::S32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}),
       Vec<int32_t>(xla::S32, {2, 2}, {0, 1, 1, 3})});
  // (0,1): {{1,2},{5,6}}; (1,3) clamps to (1,2): {{6,7},{10,11}}.
  EXPECT_EQ(Values<int32_t>(out),
            (std::vector<int32_t>{1, 2, 5, 6, 6, 7, 10, 11}));
  Literal batched =
      RunHloOrFail(R"(
ENTRY e {
  x = s32[2,3] parameter(0)
  i = s32[2,1] parameter(1)
  ROOT g = s32[2] gather(x, i), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}
})",
                   {Vec<int32_t>(xla::S32, {2, 3}, {0, 1, 2, 3, 4, 5}),
                    Vec<int32_t>(xla::S32, {2, 1}, {2, 1})});
  EXPECT_EQ(Values<int32_t>(batched), (std::vector<int32_t>{2, 4}));
}

TEST(ScatterTest, AddWithDuplicatesAndOutOfBoundsSkipped) {
  Literal out = RunHloOrFail(
      std::string(kAddS32) + R"(
ENTRY e {
  x = s32[3,3] parameter(0)
  i = s32[3] parameter(1)
  u = s32[3,3] parameter(2)
  ROOT s = s32[3,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})",
      {Vec<int32_t>(xla::S32, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
       Vec<int32_t>(xla::S32, {3}, {2, 2, 3}),
       Vec<int32_t>(xla::S32, {3, 3}, {10, 20, 30, 100, 200, 300, 5, 5, 5})});
  EXPECT_EQ(Values<int32_t>(out),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 117, 228, 339}));
}

TEST(ScatterTest, OverwriteAndGeneralComputation) {
  Literal out = RunHloOrFail(R"(
assign {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
mul_add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  two = f32[] constant(2)
  m = f32[] multiply(a, two)
  ROOT r = f32[] add(m, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  i = s32[2,1] parameter(1)
  u = f32[2] parameter(2)
  s1 = f32[4] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=assign
  s2 = f32[4] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=mul_add
  ROOT t = (f32[4], f32[4]) tuple(s1, s2)
})",
                             {Vec<float>(xla::F32, {4}, {1, 2, 3, 4}),
                              Vec<int32_t>(xla::S32, {2, 1}, {3, 0}),
                              Vec<float>(xla::F32, {2}, {10, 20})});
  EXPECT_EQ(Values<float>(out.element(0)), (std::vector<float>{20, 2, 3, 10}));
  EXPECT_EQ(Values<float>(out.element(1)), (std::vector<float>{22, 2, 3, 18}));
}

TEST(SortTest, MultiOperandStable) {
  Literal out =
      RunHloOrFail(R"(
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  k = f32[2,4] parameter(0)
  v = s32[2,4] parameter(1)
  ROOT s = (f32[2,4], s32[2,4]) sort(k, v), dimensions={1}, is_stable=true, to_apply=less
})",
                   {Vec<float>(xla::F32, {2, 4}, {3, 1, 2, 1, 0, -1, 0, -2}),
                    Vec<int32_t>(xla::S32, {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})});
  EXPECT_EQ(Values<float>(out.element(0)),
            (std::vector<float>{1, 1, 2, 3, -2, -1, 0, 0}));
  EXPECT_EQ(Values<int32_t>(out.element(1)),
            (std::vector<int32_t>{1, 3, 2, 0, 7, 5, 4, 6}));
}

TEST(SortTest, GeneralComparatorAlongDimensionZero) {
  // Descending by |x| through a comparator that is not a single compare.
  Literal out = RunHloOrFail(
      R"(
by_abs_desc {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  x = s32[] abs(a)
  y = s32[] abs(b)
  ROOT gt = pred[] compare(x, y), direction=GT
}
ENTRY e {
  k = s32[4,2] parameter(0)
  ROOT s = s32[4,2] sort(k), dimensions={0}, is_stable=true, to_apply=by_abs_desc
})",
      {Vec<int32_t>(xla::S32, {4, 2}, {1, 5, -3, -6, 2, 7, 3, 0})});
  EXPECT_EQ(Values<int32_t>(out),
            (std::vector<int32_t>{-3, 7, 3, -6, 2, 5, 1, 0}));
}

TEST(ControlFlowTest, WhileLoopSums) {
  Literal out = RunHloOrFail(R"(
cond {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  acc = s32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  acc2 = s32[] add(acc, i)
  ROOT t = (s32[], s32[]) tuple(i2, acc2)
}
ENTRY e {
  z = s32[] constant(0)
  init = (s32[], s32[]) tuple(z, z)
  ROOT w = (s32[], s32[]) while(init), condition=cond, body=body
})");
  EXPECT_EQ(Values<int32_t>(out.element(0)), (std::vector<int32_t>{10}));
  EXPECT_EQ(Values<int32_t>(out.element(1)), (std::vector<int32_t>{45}));
}

TEST(ControlFlowTest, WhileObservesCancellation) {
  absl::StatusOr<std::unique_ptr<Executable>> exe = CompileHlo(R"(
cond {
  s = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  s = s32[] parameter(0)
  ROOT r = s32[] add(s, s)
}
ENTRY e {
  z = s32[] constant(1)
  ROOT w = s32[] while(z), condition=cond, body=body
})");
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::atomic<bool> cancelled{true};
  ExecutionContext context;
  context.cancelled = &cancelled;
  absl::Status s = (*exe)->Execute({}, context, nullptr).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
}

TEST(ControlFlowTest, ConditionalPredAndIndexed) {
  const std::string branches = R"(
neg {
  x = f32[] parameter(0)
  ROOT n = f32[] negate(x)
}
dbl {
  x = f32[] parameter(0)
  ROOT d = f32[] add(x, x)
}
id {
  x = f32[] parameter(0)
  ROOT c = f32[] copy(x)
}
)";
  const std::string pred_module = branches + R"(
ENTRY e {
  p = pred[] parameter(0)
  x = f32[] parameter(1)
  ROOT c = f32[] conditional(p, x, x), true_computation=neg, false_computation=dbl
})";
  EXPECT_EQ(Values<float>(RunHloOrFail(
                pred_module, {VecBool({}, {1}), Scalar<float>(xla::F32, 3)})),
            (std::vector<float>{-3}));
  EXPECT_EQ(Values<float>(RunHloOrFail(
                pred_module, {VecBool({}, {0}), Scalar<float>(xla::F32, 3)})),
            (std::vector<float>{6}));
  const std::string indexed = branches + R"(
ENTRY e {
  i = s32[] parameter(0)
  x = f32[] parameter(1)
  ROOT c = f32[] conditional(i, x, x, x), branch_computations={neg, dbl, id}
})";
  std::vector<float> results;
  for (int32_t i : {0, 1, 2, 7, -1}) {
    results.push_back(
        Values<float>(RunHloOrFail(indexed, {Scalar<int32_t>(xla::S32, i),
                                             Scalar<float>(xla::F32, 3)}))[0]);
  }
  // Out-of-range indices run the last branch.
  EXPECT_EQ(results, (std::vector<float>{-3, 6, 3, 3, 3}));
}

TEST(ControlFlowTest, CallFusionMapAndReplicaId) {
  const std::string text = R"(
sq {
  x = f32[] parameter(0)
  ROOT m = f32[] multiply(x, x)
}
fused {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  ROOT s = f32[3] subtract(a, b)
}
plus1 {
  x = f32[3] parameter(0)
  one = f32[] constant(1)
  o = f32[3] broadcast(one), dimensions={}
  ROOT r = f32[3] add(x, o)
}
ENTRY e {
  x = f32[3] parameter(0)
  m = f32[3] map(x), dimensions={0}, to_apply=sq
  f = f32[3] fusion(m, x), kind=kLoop, calls=fused
  c = f32[3] call(f), to_apply=plus1
  r = u32[] replica-id()
  p = u32[] partition-id()
  ROOT t = (f32[3], u32[], u32[]) tuple(c, r, p)
})";
  absl::StatusOr<std::unique_ptr<Executable>> exe = CompileHlo(text);
  ASSERT_TRUE(exe.ok()) << exe.status();
  ExecutionContext context;
  context.replica_id = 3;
  context.partition_id = 1;
  absl::StatusOr<Literal> out = (*exe)->Execute(
      {Vec<float>(xla::F32, {3}, {1, 2, -3})}, context, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  // x*x - x + 1
  EXPECT_EQ(Values<float>(out->element(0)), (std::vector<float>{1, 3, 13}));
  EXPECT_EQ(Values<uint32_t>(out->element(1)), (std::vector<uint32_t>{3}));
  EXPECT_EQ(Values<uint32_t>(out->element(2)), (std::vector<uint32_t>{1}));
}

}  // namespace
}  // namespace tpu::emulator::interpreter
