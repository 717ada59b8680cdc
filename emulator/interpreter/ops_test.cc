// Per-operation tests written in HLO text: element types, XLA edge cases,
// data movement, reductions and dot numerics. Structured operations and the
// execution plan have files of their own.

#include <cmath>
#include <complex>
#include <limits>

#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

using testing::FloatValues;
using testing::RunHloOrFail;
using testing::Scalar;
using testing::Values;
using testing::Vec;

TEST(ElementwiseTest, ShiftsWiderThanTheType) {
  Literal out =
      RunHloOrFail(R"(
ENTRY e {
  x = s32[6] parameter(0)
  n = s32[6] parameter(1)
  l = s32[6] shift-left(x, n)
  a = s32[6] shift-right-arithmetic(x, n)
  g = s32[6] shift-right-logical(x, n)
  ROOT t = (s32[6], s32[6], s32[6]) tuple(l, a, g)
})",
                   {Vec<int32_t>(xla::S32, {6}, {1, 1, -8, -8, -8, 5}),
                    Vec<int32_t>(xla::S32, {6}, {31, 32, 1, 40, 28, -1})});
  EXPECT_EQ(Values<int32_t>(out.element(0)),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 0, -16,
                                  0, -2147483648, 0}));
  EXPECT_EQ(Values<int32_t>(out.element(1)),
            (std::vector<int32_t>{0, 0, -4, -1, -1, 0}));
  EXPECT_EQ(Values<int32_t>(out.element(2)),
            (std::vector<int32_t>{0, 0, 2147483644, 0, 15, 0}));
}

TEST(ElementwiseTest, SmallIntegersWrapAndBitOps) {
  Literal out = RunHloOrFail(R"(
ENTRY e {
  x = s8[3] parameter(0)
  u = u8[4] parameter(1)
  add = s8[3] add(x, x)
  pc = u8[4] popcnt(u)
  lz = u8[4] count-leading-zeros(u)
  nt = u8[4] not(u)
  ROOT t = (s8[3], u8[4], u8[4], u8[4]) tuple(add, pc, lz, nt)
})",
                             {Vec<int8_t>(xla::S8, {3}, {127, -128, 3}),
                              Vec<uint8_t>(xla::U8, {4}, {255, 1, 0, 16})});
  EXPECT_EQ(Values<int8_t>(out.element(0)), (std::vector<int8_t>{-2, 0, 6}));
  EXPECT_EQ(Values<uint8_t>(out.element(1)),
            (std::vector<uint8_t>{8, 1, 0, 1}));
  EXPECT_EQ(Values<uint8_t>(out.element(2)),
            (std::vector<uint8_t>{0, 7, 8, 3}));
  EXPECT_EQ(Values<uint8_t>(out.element(3)),
            (std::vector<uint8_t>{0, 254, 255, 239}));
}

TEST(ElementwiseTest, UnsignedDivisionByZeroAndPower) {
  Literal out = RunHloOrFail(R"(
ENTRY e {
  a = u32[3] parameter(0)
  b = u32[3] parameter(1)
  d = u32[3] divide(a, b)
  r = u32[3] remainder(a, b)
  p = u32[3] power(a, b)
  ROOT t = (u32[3], u32[3], u32[3]) tuple(d, r, p)
})",
                             {Vec<uint32_t>(xla::U32, {3}, {5, 7, 2}),
                              Vec<uint32_t>(xla::U32, {3}, {0, 2, 10})});
  EXPECT_EQ(Values<uint32_t>(out.element(0)),
            (std::vector<uint32_t>{0xffffffffu, 3, 0}));
  EXPECT_EQ(Values<uint32_t>(out.element(1)), (std::vector<uint32_t>{5, 1, 2}));
  EXPECT_EQ(Values<uint32_t>(out.element(2)),
            (std::vector<uint32_t>{1, 49, 1024}));
  Literal sp = RunHloOrFail(R"(
ENTRY e {
  a = s64[4] parameter(0)
  b = s64[4] parameter(1)
  ROOT p = s64[4] power(a, b)
})",
                            {Vec<int64_t>(xla::S64, {4}, {2, -1, 1, 3}),
                             Vec<int64_t>(xla::S64, {4}, {-1, -3, -5, 40})});
  EXPECT_EQ(Values<int64_t>(sp),
            (std::vector<int64_t>{
                0, -1, 1, static_cast<int64_t>(12157665459056928801ull)}));
}

TEST(ElementwiseTest, FloatUnaryFunctions) {
  Literal out = RunHloOrFail(R"(
ENTRY e {
  x = f64[4] parameter(0)
  s = f64[4] sqrt(x)
  f = f64[4] floor(x)
  c = f64[4] ceil(x)
  afz = f64[4] round-nearest-afz(x)
  even = f64[4] round-nearest-even(x)
  sg = f64[4] sign(x)
  ROOT t = (f64[4], f64[4], f64[4], f64[4], f64[4], f64[4]) tuple(s, f, c, afz, even, sg)
})",
                             {Vec<double>(xla::F64, {4}, {2.5, 0.5, -2.5, 4})});
  std::vector<double> s = Values<double>(out.element(0));
  EXPECT_DOUBLE_EQ(s[0], std::sqrt(2.5));
  EXPECT_TRUE(std::isnan(s[2]));
  EXPECT_EQ(Values<double>(out.element(1)), (std::vector<double>{2, 0, -3, 4}));
  EXPECT_EQ(Values<double>(out.element(2)), (std::vector<double>{3, 1, -2, 4}));
  EXPECT_EQ(Values<double>(out.element(3)), (std::vector<double>{3, 1, -3, 4}));
  EXPECT_EQ(Values<double>(out.element(4)), (std::vector<double>{2, 0, -2, 4}));
  EXPECT_EQ(Values<double>(out.element(5)), (std::vector<double>{1, 1, -1, 1}));
}

TEST(ElementwiseTest, MoreFloatFunctions) {
  Literal out = RunHloOrFail(R"(
ENTRY e {
  x = f32[3] parameter(0)
  a = f32[3] logistic(x)
  b = f32[3] exponential-minus-one(x)
  c = f32[3] log-plus-one(x)
  d = f32[3] rsqrt(x)
  s = f32[3] sine(x)
  k = f32[3] cosine(x)
  t = f32[3] tan(x)
  q = f32[3] cbrt(x)
  er = f32[3] erf(x)
  at = f32[3] atan2(x, x)
  fin = pred[3] is-finite(d)
  ROOT r = (f32[3], f32[3], f32[3], f32[3], f32[3], f32[3], f32[3], f32[3], f32[3], f32[3], pred[3]) tuple(a, b, c, d, s, k, t, q, er, at, fin)
})",
                             {Vec<float>(xla::F32, {3}, {0, 1, 8})});
  auto near = [&](int e, int i, double expect) {
    EXPECT_NEAR(Values<float>(out.element(e))[i], expect,
                1e-6 * std::max(1.0, std::abs(expect)))
        << "element " << e << " index " << i;
  };
  for (int i = 0; i < 3; ++i) {
    const double x = std::vector<double>{0, 1, 8}[i];
    near(0, i, 1 / (1 + std::exp(-x)));
    near(1, i, std::expm1(x));
    near(2, i, std::log1p(x));
    if (i > 0) near(3, i, 1 / std::sqrt(x));
    near(4, i, std::sin(x));
    near(5, i, std::cos(x));
    near(6, i, std::tan(x));
    near(7, i, std::cbrt(x));
    near(8, i, std::erf(x));
  }
  EXPECT_NEAR(Values<float>(out.element(9))[1], M_PI / 4, 1e-6);
  EXPECT_EQ(Values<bool>(out.element(10)),
            (std::vector<bool>{false, true, true}));  // rsqrt(0) = inf
}

TEST(ElementwiseTest, ComplexArithmetic) {
  using c64 = std::complex<float>;
  Literal out = RunHloOrFail(R"(
ENTRY e {
  a = c64[2] parameter(0)
  b = c64[2] parameter(1)
  m = c64[2] multiply(a, b)
  d = c64[2] divide(m, b)
  ab = f32[2] abs(b)
  re = f32[2] real(m)
  im = f32[2] imag(m)
  cx = c64[2] complex(re, im)
  eq = pred[2] compare(cx, m), direction=EQ
  ROOT t = (c64[2], c64[2], f32[2], pred[2]) tuple(m, d, ab, eq)
})",
                             {Vec<c64>(xla::C64, {2}, {{1, 2}, {0, 1}}),
                              Vec<c64>(xla::C64, {2}, {{3, 4}, {0, 1}})});
  EXPECT_EQ(Values<c64>(out.element(0)), (std::vector<c64>{{-5, 10}, {-1, 0}}));
  std::vector<c64> d = Values<c64>(out.element(1));
  EXPECT_NEAR(d[0].real(), 1, 1e-6);
  EXPECT_NEAR(d[0].imag(), 2, 1e-6);
  EXPECT_EQ(Values<float>(out.element(2)), (std::vector<float>{5, 1}));
  EXPECT_EQ(Values<bool>(out.element(3)), (std::vector<bool>{true, true}));
}

TEST(ElementwiseTest, F16AndBf16RoundToNearestEven) {
  using f16 = Eigen::half;
  Literal out =
      RunHloOrFail(R"(
ENTRY e {
  a = f16[2] parameter(0)
  b = f16[2] parameter(1)
  ROOT s = f16[2] add(a, b)
})",
                   {Vec<f16>(xla::F16, {2}, {f16(1.0f), f16(2048.0f)}),
                    Vec<f16>(xla::F16, {2}, {f16(0.00048828125f), f16(3.0f)})});
  // 1 + 2^-11 is a tie -> 1; 2048 + 3 = 2051 -> 2052 (spacing 2, tie to even).
  EXPECT_EQ(FloatValues(out), (std::vector<float>{1.0f, 2052.0f}));
}

TEST(ConvertTest, FloatToIntSaturatesEveryWidth) {
  const float nan = std::nanf("");
  Literal out =
      RunHloOrFail(R"(
ENTRY e {
  x = f32[5] parameter(0)
  a = u8[5] convert(x)
  b = s16[5] convert(x)
  c = u64[5] convert(x)
  d = s64[5] convert(x)
  ROOT t = (u8[5], s16[5], u64[5], s64[5]) tuple(a, b, c, d)
})",
                   {Vec<float>(xla::F32, {5}, {-1, 300, nan, 2.9f, 1e30f})});
  EXPECT_EQ(Values<uint8_t>(out.element(0)),
            (std::vector<uint8_t>{0, 255, 0, 2, 255}));
  EXPECT_EQ(Values<int16_t>(out.element(1)),
            (std::vector<int16_t>{-1, 300, 0, 2, 32767}));
  EXPECT_EQ(Values<uint64_t>(out.element(2)),
            (std::vector<uint64_t>{0, 300, 0, 2,
                                   std::numeric_limits<uint64_t>::max()}));
  EXPECT_EQ(Values<int64_t>(out.element(3)),
            (std::vector<int64_t>{-1, 300, 0, 2,
                                  std::numeric_limits<int64_t>::max()}));
}

TEST(ConvertTest, IntegerWrapsAndBitcastConvert) {
  Literal out =
      RunHloOrFail(R"(
ENTRY e {
  x = s32[3] parameter(0)
  a = u8[3] convert(x)
  b = f32[3] bitcast-convert(x)
  c = u16[3,2] bitcast-convert(x)
  p = pred[3] convert(x)
  ROOT t = (u8[3], f32[3], u16[3,2], pred[3]) tuple(a, b, c, p)
})",
                   {Vec<int32_t>(xla::S32, {3}, {257, 0x3f800000, -1})});
  EXPECT_EQ(Values<uint8_t>(out.element(0)), (std::vector<uint8_t>{1, 0, 255}));
  EXPECT_EQ(Values<float>(out.element(1))[1], 1.0f);
  EXPECT_EQ(Values<uint16_t>(out.element(2)),
            (std::vector<uint16_t>{257, 0, 0, 0x3f80, 0xffff, 0xffff}));
  EXPECT_EQ(Values<bool>(out.element(3)),
            (std::vector<bool>{true, true, true}));
}

TEST(CompareTest, TotalOrderVersusPartialOrder) {
  const float nan = std::nanf("");
  const float inf = INFINITY;
  Literal out =
      RunHloOrFail(R"(
ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  t = pred[4] compare(a, b), direction=LT, type=TOTALORDER
  p = pred[4] compare(a, b), direction=LT
  e = pred[4] compare(a, b), direction=EQ, type=TOTALORDER
  ROOT r = (pred[4], pred[4], pred[4]) tuple(t, p, e)
})",
                   {Vec<float>(xla::F32, {4}, {-0.0f, inf, -nan, nan}),
                    Vec<float>(xla::F32, {4}, {0.0f, nan, -inf, nan})});
  EXPECT_EQ(Values<bool>(out.element(0)),
            (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(Values<bool>(out.element(1)),
            (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(Values<bool>(out.element(2)),
            (std::vector<bool>{false, false, false, true}));
}

TEST(ElementwiseTest, ClampAndReducePrecision) {
  Literal out = RunHloOrFail(
      R"(
ENTRY e {
  x = f32[4] parameter(0)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  c = f32[4] clamp(lo, x, hi)
  r = f32[4] reduce-precision(x), exponent_bits=5, mantissa_bits=10
  ROOT t = (f32[4], f32[4]) tuple(c, r)
})",
      {Vec<float>(xla::F32, {4}, {-3, 0.5f, 1.00048828125f, 70000})});
  EXPECT_EQ(Values<float>(out.element(0)), (std::vector<float>{0, 0.5f, 1, 1}));
  // f16 rounding: 1 + 2^-11 ties to 1; 70000 overflows f16 to inf.
  EXPECT_EQ(Values<float>(out.element(1)),
            (std::vector<float>{-3, 0.5f, 1, INFINITY}));
}

TEST(DataMovementTest, SliceConcatPadReverseIota) {
  Literal out = RunHloOrFail(R"(
ENTRY e {
  x = s32[6] parameter(0)
  s = s32[3] slice(x), slice={[1:6:2]}
  c = s32[9] concatenate(s, x), dimensions={0}
  z = s32[] constant(0)
  p = s32[6] pad(s, z), padding=-1_2_1
  m = s32[2,3] reshape(x)
  r = s32[2,3] reverse(m), dimensions={1}
  i = s32[2,3] iota(), iota_dimension=1
  ROOT t = (s32[3], s32[9], s32[6], s32[2,3], s32[2,3]) tuple(s, c, p, r, i)
})",
                             {Vec<int32_t>(xla::S32, {6}, {0, 1, 2, 3, 4, 5})});
  EXPECT_EQ(Values<int32_t>(out.element(0)), (std::vector<int32_t>{1, 3, 5}));
  EXPECT_EQ(Values<int32_t>(out.element(1)),
            (std::vector<int32_t>{1, 3, 5, 0, 1, 2, 3, 4, 5}));
  // Interior: 1 0 3 0 5; low -1 drops the 1; high 2 appends two zeros.
  EXPECT_EQ(Values<int32_t>(out.element(2)),
            (std::vector<int32_t>{0, 3, 0, 5, 0, 0}));
  EXPECT_EQ(Values<int32_t>(out.element(3)),
            (std::vector<int32_t>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(Values<int32_t>(out.element(4)),
            (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
}

TEST(DataMovementTest, Pad2DAndConcatenateInnerDimension) {
  Literal out = RunHloOrFail(R"(
ENTRY e {
  x = f32[2,2] parameter(0)
  v = f32[] constant(9)
  p = f32[3,5] pad(x, v), padding=1_0x0_1_2
  c = f32[2,4] concatenate(x, x), dimensions={1}
  ROOT t = (f32[3,5], f32[2,4]) tuple(p, c)
})",
                             {Vec<float>(xla::F32, {2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(Values<float>(out.element(0)),
            (std::vector<float>{9, 9, 9, 9, 9, 1, 9, 9, 2, 9, 3, 9, 9, 4, 9}));
  EXPECT_EQ(Values<float>(out.element(1)),
            (std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4}));
}

TEST(DataMovementTest, DynamicSliceClampsStarts) {
  Literal out = RunHloOrFail(
      R"(
ENTRY e {
  x = s32[4,3] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  ds = s32[2,2] dynamic-slice(x, i, j), dynamic_slice_sizes={2,2}
  u = s32[2,2] constant({{-1,-2},{-3,-4}})
  dus = s32[4,3] dynamic-update-slice(x, u, i, j)
  ROOT t = (s32[2,2], s32[4,3]) tuple(ds, dus)
})",
      {Vec<int32_t>(xla::S32, {4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}),
       Scalar<int32_t>(xla::S32, 7), Scalar<int32_t>(xla::S32, -4)});
  // Starts (7, -4) clamp to (2, 0).
  EXPECT_EQ(Values<int32_t>(out.element(0)),
            (std::vector<int32_t>{6, 7, 9, 10}));
  EXPECT_EQ(Values<int32_t>(out.element(1)),
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5, -1, -2, 8, -3, -4, 11}));
}

TEST(ReduceTest, VariadicArgmax) {
  Literal out = RunHloOrFail(
      R"(
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, av, bv)
  i = s32[] select(keep, ai, bi)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[2,4] parameter(0)
  idx = s32[2,4] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[2], s32[2]) reduce(x, idx, ninf, zero), dimensions={1}, to_apply=argmax
})",
      {Vec<float>(xla::F32, {2, 4}, {1, 5, 5, 2, -1, -3, -0.5f, -2})});
  EXPECT_EQ(Values<float>(out.element(0)), (std::vector<float>{5, -0.5f}));
  EXPECT_EQ(Values<int32_t>(out.element(1)), (std::vector<int32_t>{1, 2}));
}

TEST(ReduceTest, MiddleDimensionsAndTypes) {
  Literal out =
      RunHloOrFail(R"(
add {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT r = bf16[] add(a, b)
}
mx {
  a = u8[] parameter(0)
  b = u8[] parameter(1)
  ROOT r = u8[] maximum(a, b)
}
ENTRY e {
  x = bf16[2,3,2] parameter(0)
  z = bf16[] constant(0)
  s = bf16[2,2] reduce(x, z), dimensions={1}, to_apply=add
  s2 = bf16[3] reduce(x, z), dimensions={0,2}, to_apply=add
  u = u8[4] parameter(1)
  uz = u8[] constant(0)
  m = u8[] reduce(u, uz), dimensions={0}, to_apply=mx
  ROOT t = (bf16[2,2], bf16[3], u8[]) tuple(s, s2, m)
})",
                   {[] {
                      std::vector<Eigen::bfloat16> v;
                      for (int i = 0; i < 12; ++i)
                        v.push_back(Eigen::bfloat16(i));
                      return Vec<Eigen::bfloat16>(xla::BF16, {2, 3, 2}, v);
                    }(),
                    Vec<uint8_t>(xla::U8, {4}, {3, 250, 7, 0})});
  EXPECT_EQ(FloatValues(out.element(0)), (std::vector<float>{6, 9, 24, 27}));
  EXPECT_EQ(FloatValues(out.element(1)), (std::vector<float>{14, 22, 30}));
  EXPECT_EQ(Values<uint8_t>(out.element(2)), (std::vector<uint8_t>{250}));
}

constexpr char kDotF32[] = R"(
ENTRY e {
  a = f32[1,2] parameter(0)
  b = f32[2,1] parameter(1)
  d0 = f32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d1 = f32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={high,high}
  d2 = f32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  ROOT t = (f32[1,1], f32[1,1], f32[1,1]) tuple(d0, d1, d2)
})";

TEST(DotTest, TpuNumericsRoundsDefaultPrecisionOperandsToBf16) {
  auto args = [] {
    std::vector<Literal> v;
    // 1 + 2^-10 is not a bf16 value (7 mantissa bits): it rounds to 1.
    v.push_back(Vec<float>(xla::F32, {1, 2}, {1.0009765625f, 1.0f}));
    v.push_back(Vec<float>(xla::F32, {2, 1}, {1.0f, 1.0f}));
    return v;
  };
  Literal exact = RunHloOrFail(kDotF32, args());
  CompileOptions tpu;
  tpu.tpu_numerics = true;
  Literal rounded = RunHloOrFail(kDotF32, args(), tpu);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Values<float>(exact.element(i))[0], 2.0009765625f) << i;
  }
  // DEFAULT: bf16 operands -> the 2^-10 is lost. HIGH (bf16x3) and HIGHEST
  // keep it.
  EXPECT_EQ(Values<float>(rounded.element(0))[0], 2.0f);
  EXPECT_EQ(Values<float>(rounded.element(1))[0], 2.0009765625f);
  EXPECT_EQ(Values<float>(rounded.element(2))[0], 2.0009765625f);
}

TEST(DotTest, IntegerAndTransposedOperands) {
  Literal out =
      RunHloOrFail(R"(
ENTRY e {
  a = s8[3,2] parameter(0)
  b = s8[2,3] parameter(1)
  ROOT d = s32[2,2] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={1}
})",
                   {Vec<int8_t>(xla::S8, {3, 2}, {100, 1, 100, 2, 100, 3}),
                    Vec<int8_t>(xla::S8, {2, 3}, {100, 100, 100, 1, 2, 3})});
  // [0][0] = 3 * 100 * 100 (no s8 overflow: products are in s32).
  EXPECT_EQ(Values<int32_t>(out), (std::vector<int32_t>{30000, 600, 600, 14}));
}

// s32 sums wrap as XLA defines (two's complement), and without undefined
// behaviour on the way (UBSan's corpus run found Eigen's s32 GEMM at it).
TEST(DotTest, SignedIntegerSumsWrap) {
  Literal out =
      RunHloOrFail(R"(
ENTRY e {
  a = s32[1,2] parameter(0)
  b = s32[2,1] parameter(1)
  ROOT d = s32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                   {Vec<int32_t>(xla::S32, {1, 2}, {1 << 30, 1 << 30}),
                    Vec<int32_t>(xla::S32, {2, 1}, {2, 1})});
  // 2^31 + 2^30 wraps to -2^30.
  EXPECT_EQ(Values<int32_t>(out), (std::vector<int32_t>{-(1 << 30)}));
}

}  // namespace
}  // namespace tpu::emulator::interpreter
