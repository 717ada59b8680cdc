// batch-norm-*, ragged-dot, topk (op and custom-call), stochastic-convert,
// atan2 on complex operands and convolution on pred: hand-computed values,
// or a double-precision reference written here from operation_semantics.md.

#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"

namespace tpu::emulator::interpreter {
namespace {

using testing::RunHlo;
using testing::Values;
using testing::Vec;
using testing::VecBool;

Literal RunText(const std::string& text, std::vector<Literal> args) {
  absl::StatusOr<Literal> out = RunHlo(text, std::move(args));
  EXPECT_TRUE(out.ok()) << out.status() << "\n" << text;
  return out.ok() ? *std::move(out) : Literal();
}

TEST(BatchNormTest, TrainingAndInferenceHandComputed) {
  // Feature 0 holds {1, 3}: mean 2, variance 1. Feature 1 holds {2, 6}:
  // mean 4, variance 4. scale {1, 2}, offset {0, 1}, epsilon 0.
  Literal out = RunText(
      R"(
ENTRY e {
  x = f32[2,2] parameter(0)
  scale = f32[2] parameter(1)
  offset = f32[2] parameter(2)
  t = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, scale, offset), epsilon=0, feature_index=1
  mean = f32[2] get-tuple-element(t), index=1
  var = f32[2] get-tuple-element(t), index=2
  i = f32[2,2] batch-norm-inference(x, scale, offset, mean, var), epsilon=0, feature_index=1
  ROOT r = ((f32[2,2], f32[2], f32[2]), f32[2,2]) tuple(t, i)
})",
      {Vec<float>(xla::F32, {2, 2}, {1, 2, 3, 6}),
       Vec<float>(xla::F32, {2}, {1, 2}), Vec<float>(xla::F32, {2}, {0, 1})});
  const Literal& t = out.element(0);
  EXPECT_EQ(Values<float>(t.element(0)), (std::vector<float>{-1, -1, 1, 3}));
  EXPECT_EQ(Values<float>(t.element(1)), (std::vector<float>{2, 4}));
  EXPECT_EQ(Values<float>(t.element(2)), (std::vector<float>{1, 4}));
  EXPECT_EQ(Values<float>(out.element(1)), (std::vector<float>{-1, -1, 1, 3}));
}

TEST(BatchNormTest, GradMatchesDoubleReference) {
  // x is [3, 2] with features on dimension 1.
  const std::vector<double> x = {1, -2, 4, 0.5, 2, 3};
  const std::vector<double> dy = {0.5, 1, -1, 2, 0.25, -0.5};
  const std::vector<double> scale = {1.5, -0.75};
  const std::vector<double> mean = {2.5, 0.25};
  const std::vector<double> var = {1.25, 4};
  const double eps = 0.125;
  Literal out = RunText(
      R"(
ENTRY e {
  x = f64[3,2] parameter(0)
  scale = f64[2] parameter(1)
  mean = f64[2] parameter(2)
  var = f64[2] parameter(3)
  dy = f64[3,2] parameter(4)
  ROOT g = (f64[3,2], f64[2], f64[2]) batch-norm-grad(x, scale, mean, var, dy), epsilon=0.125, feature_index=1
})",
      {Vec<double>(xla::F64, {3, 2}, x), Vec<double>(xla::F64, {2}, scale),
       Vec<double>(xla::F64, {2}, mean), Vec<double>(xla::F64, {2}, var),
       Vec<double>(xla::F64, {3, 2}, dy)});
  const std::vector<double> dx = Values<double>(out.element(0));
  const std::vector<double> dscale = Values<double>(out.element(1));
  const std::vector<double> doffset = Values<double>(out.element(2));
  for (int c = 0; c < 2; ++c) {
    // operation_semantics.md, BatchNormGrad, for N = 3 values per feature.
    const double s = std::sqrt(var[c] + eps);
    double sum_dy = 0, sum_dy_xc = 0;
    for (int i = 0; i < 3; ++i) {
      sum_dy += dy[i * 2 + c];
      sum_dy_xc += dy[i * 2 + c] * (x[i * 2 + c] - mean[c]);
    }
    EXPECT_NEAR(doffset[c], sum_dy, 1e-12);
    EXPECT_NEAR(dscale[c], sum_dy_xc / s, 1e-12);
    for (int i = 0; i < 3; ++i) {
      const double xc = x[i * 2 + c] - mean[c];
      const double want =
          scale[c] / s *
          (dy[i * 2 + c] - sum_dy / 3 - xc * (sum_dy_xc / 3) / (var[c] + eps));
      EXPECT_NEAR(dx[i * 2 + c], want, 1e-12) << i << "," << c;
    }
  }
}

TEST(RaggedDotTest, TheThreeModesHandComputed) {
  // Mode 1 (ragged rows): sizes {1, 2}: row 0 uses rhs group 0, rows 1-2
  // group 1, row 3 no group (zeros).
  Literal rows =
      RunText(R"(
ENTRY e {
  lhs = f32[4,2] parameter(0)
  rhs = f32[2,2,1] parameter(1)
  sizes = s32[2] parameter(2)
  ROOT d = f32[4,1] ragged-dot(lhs, rhs, sizes), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
})",
              {Vec<float>(xla::F32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
               Vec<float>(xla::F32, {2, 2, 1}, {1, 1, 1, -1}),
               Vec<int32_t>(xla::S32, {2}, {1, 2})});
  EXPECT_EQ(Values<float>(rows), (std::vector<float>{3, -1, -1, 0}));
  // Mode 2 (ragged contraction): k = 4 split {1, 3}; one result per group.
  Literal contraction = RunText(R"(
ENTRY e {
  lhs = f32[1,4] parameter(0)
  rhs = f32[4,1] parameter(1)
  sizes = s64[2] parameter(2)
  ROOT d = f32[2,1,1] ragged-dot(lhs, rhs, sizes), lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}
})",
                                {Vec<float>(xla::F32, {1, 4}, {1, 2, 3, 4}),
                                 Vec<float>(xla::F32, {4, 1}, {1, 1, 1, 1}),
                                 Vec<int64_t>(xla::S64, {2}, {1, 3})});
  EXPECT_EQ(Values<float>(contraction), (std::vector<float>{1, 9}));
  // Mode 3 (ragged batch): one group of size 1 covers batch 0 only.
  Literal batch = RunText(R"(
ENTRY e {
  lhs = f32[2,1,2] parameter(0)
  rhs = f32[2,2,1] parameter(1)
  sizes = s32[1] parameter(2)
  ROOT d = f32[2,1,1] ragged-dot(lhs, rhs, sizes), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, lhs_ragged_dims={0}
})",
                          {Vec<float>(xla::F32, {2, 1, 2}, {1, 2, 3, 4}),
                           Vec<float>(xla::F32, {2, 2, 1}, {5, 6, 7, 8}),
                           Vec<int32_t>(xla::S32, {1}, {1})});
  EXPECT_EQ(Values<float>(batch), (std::vector<float>{17, 0}));
}

TEST(TopKTest, LargestAndSmallestWithTiesKeepLowerIndicesFirst) {
  const std::vector<float> x = {1, 3, 3, 2, 5, 0, -1, -1, 4, 4};
  Literal out = RunText(R"(
ENTRY e {
  x = f32[2,5] parameter(0)
  big = (f32[2,3], s32[2,3]) topk(x), k=3, largest=true
  small = (f32[2,3], s32[2,3]) topk(x), k=3, largest=false
  ROOT t = ((f32[2,3], s32[2,3]), (f32[2,3], s32[2,3])) tuple(big, small)
})",
                        {Vec<float>(xla::F32, {2, 5}, x)});
  EXPECT_EQ(Values<float>(out.element(0).element(0)),
            (std::vector<float>{5, 3, 3, 4, 4, 0}));
  EXPECT_EQ(Values<int32_t>(out.element(0).element(1)),
            (std::vector<int32_t>{4, 1, 2, 3, 4, 0}));
  EXPECT_EQ(Values<float>(out.element(1).element(0)),
            (std::vector<float>{1, 2, 3, -1, -1, 0}));
  EXPECT_EQ(Values<int32_t>(out.element(1).element(1)),
            (std::vector<int32_t>{0, 3, 1, 1, 2, 0}));
}

TEST(TopKTest, TopKCustomCallFollowsItsComparator) {
  Literal out = RunText(R"(
lt {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = s32[4] parameter(0)
  ROOT t = (s32[2], s32[2]) custom-call(x), custom_call_target="TopK", to_apply=lt
})",
                        {Vec<int32_t>(xla::S32, {4}, {7, -2, 9, -2})});
  EXPECT_EQ(Values<int32_t>(out.element(0)), (std::vector<int32_t>{-2, -2}));
  EXPECT_EQ(Values<int32_t>(out.element(1)), (std::vector<int32_t>{1, 3}));
}

TEST(StochasticConvertTest, RoundsUpWhenRandomIsBelowTheFraction) {
  // 1.25 has fraction 0.25 = 0x40000000 / 2^32.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Literal out = RunText(
      R"(
ENTRY e {
  x = f32[7] parameter(0)
  r = u32[7] parameter(1)
  ROOT s = s32[7] stochastic-convert(x, r)
})",
      {Vec<float>(xla::F32, {7},
                  {1.25f, 1.25f, -1.25f, -1.25f, 1e10f, -1e10f, nan}),
       Vec<uint32_t>(
           xla::U32, {7},
           {0x3FFFFFFFu, 0x40000000u, 0x3FFFFFFFu, 0x40000000u, 0, 0, 0})});
  EXPECT_EQ(
      Values<int32_t>(out),
      (std::vector<int32_t>{2, 1, -2, -1, 2147483647, -2147483647 - 1, 0}));
}

TEST(ComplexTest, Atan2OfComplexOperands) {
  using c64 = std::complex<float>;
  const std::vector<c64> y = {c64(1), c64(1), c64(-1), c64(0.5f, 0.25f)};
  const std::vector<c64> x = {c64(1), c64(0), c64(-1), c64(1, -0.5f)};
  Literal out =
      RunText(R"(
ENTRY e {
  y = c64[4] parameter(0)
  x = c64[4] parameter(1)
  ROOT a = c64[4] atan2(y, x)
})",
              {Vec<c64>(xla::C64, {4}, y), Vec<c64>(xla::C64, {4}, x)});
  const std::vector<c64> a = Values<c64>(out);
  // Real operands give the real atan2 (principal branch).
  EXPECT_NEAR(a[0].real(), M_PI / 4, 1e-6);
  EXPECT_NEAR(a[1].real(), M_PI / 2, 1e-6);
  EXPECT_NEAR(a[2].real(), -3 * M_PI / 4, 1e-6);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(a[i].imag(), 0, 1e-6);
  // For complex operands w = atan2(y, x) has cos w = x / r and sin w = y / r
  // with r = sqrt(x^2 + y^2), so tan w = y / x.
  const std::complex<double> w(a[3].real(), a[3].imag());
  const std::complex<double> want =
      std::complex<double>(y[3]) / std::complex<double>(x[3]);
  EXPECT_NEAR(std::abs(std::tan(w) - want), 0, 1e-5);
}

TEST(ConvolutionTest, PredConvolutionIsOrOfAnds) {
  Literal out =
      RunText(R"(
ENTRY e {
  x = pred[1,4,1] parameter(0)
  k = pred[2,1,1] parameter(1)
  ROOT c = pred[1,3,1] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f
})",
              {VecBool({1, 4, 1}, {1, 0, 0, 1}), VecBool({2, 1, 1}, {1, 1})});
  EXPECT_EQ(Values<bool>(out), (std::vector<bool>{true, false, true}));
}

}  // namespace
}  // namespace tpu::emulator::interpreter
