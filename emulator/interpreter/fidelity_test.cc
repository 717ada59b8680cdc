// Where the interpreter follows XLA's definitions to the letter: shifts by
// every amount on every integer type, opt-barrier under its real name,
// zero-length and resized FFTs, dynamic-slice with one index vector.

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"
#include "hlo/shape.h"

namespace tpu::emulator::interpreter {
namespace {

using testing::RunHlo;
using testing::Values;
using testing::Vec;

// Reference shifts written arithmetically (multiplication and floor division
// by powers of two on 128-bit integers), independently of the bit operations
// the kernels use. XLA's evaluator: the amount is read as an unsigned value
// of the element type; an amount >= the bit width shifts everything out.
template <typename T>
struct ShiftReference {
  static constexpr int kBits = sizeof(T) * 8;
  using U = std::make_unsigned_t<T>;
  static __int128 Modulus() { return static_cast<__int128>(1) << kBits; }
  static __int128 AsSigned(T x) {  // the bits of x read as two's complement
    __int128 v = static_cast<U>(x);
    return v >= Modulus() / 2 ? v - Modulus() : v;
  }
  static bool OutOfRange(T n) { return static_cast<U>(n) >= kBits; }
  static T Wrap(__int128 v) {
    v %= Modulus();
    if (v < 0) v += Modulus();
    return static_cast<T>(static_cast<U>(v));
  }
  static T Left(T x, T n) {
    if (OutOfRange(n)) return 0;
    return Wrap(static_cast<__int128>(static_cast<U>(x)) *
                (static_cast<__int128>(1) << static_cast<U>(n)));
  }
  static T Logical(T x, T n) {
    if (OutOfRange(n)) return 0;
    return Wrap(static_cast<__int128>(static_cast<U>(x)) /
                (static_cast<__int128>(1) << static_cast<U>(n)));
  }
  static T Arithmetic(T x, T n) {
    const __int128 v = AsSigned(x);
    if (OutOfRange(n)) return v < 0 ? Wrap(-1) : 0;
    const __int128 d = static_cast<__int128>(1) << static_cast<U>(n);
    __int128 q = v / d;
    if (v % d != 0 && v < 0) --q;  // floor
    return Wrap(q);
  }
};

template <typename T>
void CheckShifts(xla::PrimitiveType type) {
  SCOPED_TRACE(PrimitiveTypeName(type));
  constexpr int kBits = sizeof(T) * 8;
  const std::vector<T> values = {T(0),
                                 T(1),
                                 static_cast<T>(-1),
                                 std::numeric_limits<T>::min(),
                                 std::numeric_limits<T>::max(),
                                 static_cast<T>(200),
                                 static_cast<T>(0x5A)};
  // Negative, zero, inside, equal to and beyond the width, and the largest.
  const std::vector<T> amounts = {static_cast<T>(-1),
                                  T(0),
                                  T(1),
                                  T(kBits - 1),
                                  T(kBits),
                                  T(kBits + 1),
                                  static_cast<T>(2 * kBits),
                                  static_cast<T>(255),
                                  std::numeric_limits<T>::max(),
                                  std::numeric_limits<T>::min()};
  std::vector<T> x, n;
  for (T v : values) {
    for (T a : amounts) {
      x.push_back(v);
      n.push_back(a);
    }
  }
  const int64_t count = static_cast<int64_t>(x.size());
  const std::string t = absl::StrCat(PrimitiveTypeName(type), "[", count, "]");
  const std::string text =
      absl::StrCat("ENTRY e {\n  x = ", t, " parameter(0)\n  n = ", t,
                   " parameter(1)\n  l = ", t, " shift-left(x, n)\n  a = ", t,
                   " shift-right-arithmetic(x, n)\n  g = ", t,
                   " shift-right-logical(x, n)\n  ROOT r = (", t, ", ", t, ", ",
                   t, ") tuple(l, a, g)\n}\n");
  absl::StatusOr<Literal> out =
      RunHlo(text, {Vec<T>(type, {count}, x), Vec<T>(type, {count}, n)});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<T> left = Values<T>(out->element(0));
  const std::vector<T> arith = Values<T>(out->element(1));
  const std::vector<T> logical = Values<T>(out->element(2));
  for (int64_t i = 0; i < count; ++i) {
    SCOPED_TRACE(absl::StrCat("x=", static_cast<int64_t>(x[i]),
                              " n=", static_cast<int64_t>(n[i])));
    EXPECT_EQ(left[i], ShiftReference<T>::Left(x[i], n[i]));
    EXPECT_EQ(arith[i], ShiftReference<T>::Arithmetic(x[i], n[i]));
    EXPECT_EQ(logical[i], ShiftReference<T>::Logical(x[i], n[i]));
  }
}

TEST(ShiftTest, EveryTypeAndAmountMatchesXla) {
  CheckShifts<int8_t>(xla::S8);
  CheckShifts<int16_t>(xla::S16);
  CheckShifts<int32_t>(xla::S32);
  CheckShifts<int64_t>(xla::S64);
  CheckShifts<uint8_t>(xla::U8);
  CheckShifts<uint16_t>(xla::U16);
  CheckShifts<uint32_t>(xla::U32);
  CheckShifts<uint64_t>(xla::U64);
}

TEST(ShiftTest, HandComputedCases) {
  absl::StatusOr<Literal> out = RunHlo(
      R"(
ENTRY e {
  x = u8[4] parameter(0)
  n = u8[4] parameter(1)
  a = u8[4] shift-right-arithmetic(x, n)
  g = u8[4] shift-right-logical(x, n)
  l = u8[4] shift-left(x, n)
  ROOT r = (u8[4], u8[4], u8[4]) tuple(a, g, l)
})",
      {Vec<uint8_t>(xla::U8, {4}, {200, 200, 100, 3}),
       Vec<uint8_t>(xla::U8, {4}, {255, 1, 8, 7})});
  ASSERT_TRUE(out.ok()) << out.status();
  // 200 = 0b11001000: its top bit is the sign for the arithmetic shift.
  EXPECT_EQ(Values<uint8_t>(out->element(0)),
            (std::vector<uint8_t>{255, 228, 0, 0}));
  EXPECT_EQ(Values<uint8_t>(out->element(1)),
            (std::vector<uint8_t>{0, 100, 0, 0}));
  EXPECT_EQ(Values<uint8_t>(out->element(2)),
            (std::vector<uint8_t>{0, 144, 0, 128}));
  absl::StatusOr<Literal> wide = RunHlo(
      R"(
ENTRY e {
  x = s64[3] parameter(0)
  n = s64[3] parameter(1)
  ROOT a = s64[3] shift-right-arithmetic(x, n)
})",
      {Vec<int64_t>(xla::S64, {3}, {-5, -5, 5}),
       Vec<int64_t>(xla::S64, {3}, {-1, 1, 64})});
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(Values<int64_t>(*wide), (std::vector<int64_t>{-1, -3, 0}));
}

TEST(StructuralTest, OptBarrierUnderItsXlaName) {
  absl::StatusOr<Literal> out = RunHlo(
      R"(
ENTRY e {
  x = f32[2] parameter(0)
  i = s32[] parameter(1)
  t = (f32[2], s32[]) tuple(x, i)
  ROOT o = (f32[2], s32[]) opt-barrier(t)
})",
      {Vec<float>(xla::F32, {2}, {1.5f, -2}),
       testing::Scalar<int32_t>(xla::S32, 7)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(out->element(0)), (std::vector<float>{1.5f, -2}));
  EXPECT_EQ(Values<int32_t>(out->element(1)), (std::vector<int32_t>{7}));
}

TEST(FftTest, ZeroLengthTransformsKeepZeroSizedDimensions) {
  // RFFT of length 0 keeps the last dimension at 0 (not 0/2+1 = 1).
  absl::StatusOr<Literal> rfft = RunHlo(
      R"(
ENTRY e {
  x = f32[3,0] parameter(0)
  ROOT f = c64[3,0] fft(x), fft_type=RFFT, fft_length={0}
})",
      {Literal::Zeros(Shape::Array(xla::F32, {3, 0}))});
  ASSERT_TRUE(rfft.ok()) << rfft.status();
  EXPECT_EQ(rfft->shape(), Shape::Array(xla::C64, {3, 0}));
  // IRFFT of length 0 takes a last dimension of 0 or of 0/2+1 = 1.
  for (int64_t last : {0, 1}) {
    absl::StatusOr<Literal> irfft =
        RunHlo(absl::StrCat("ENTRY e {\n  x = c64[2,", last,
                            "] parameter(0)\n  ROOT f = f32[2,0] fft(x), "
                            "fft_type=IRFFT, fft_length={0}\n}\n"),
               {Literal::Zeros(Shape::Array(xla::C64, {2, last}))});
    ASSERT_TRUE(irfft.ok()) << irfft.status();
    EXPECT_EQ(irfft->shape(), Shape::Array(xla::F32, {2, 0}));
  }
  absl::StatusOr<Literal> fft = RunHlo(
      R"(
ENTRY e {
  x = c64[4,0] parameter(0)
  ROOT f = c64[4,0] fft(x), fft_type=FFT, fft_length={0}
})",
      {Literal::Zeros(Shape::Array(xla::C64, {4, 0}))});
  ASSERT_TRUE(fft.ok()) << fft.status();
  EXPECT_EQ(fft->shape(), Shape::Array(xla::C64, {4, 0}));
}

TEST(FftTest, LengthsOtherThanTheOperandsPadOrTruncate) {
  // XLA's evaluator zero-pads the operand to fft_length, transforms, and
  // keeps the operand's shape: here a 5-point DFT of (1, 2, 3, 4, 0) whose
  // first four values come back.
  using c64 = std::complex<float>;
  absl::StatusOr<Literal> out = RunHlo(
      R"(
ENTRY e {
  x = c64[4] parameter(0)
  ROOT f = c64[4] fft(x), fft_type=FFT, fft_length={5}
})",
      {Vec<c64>(xla::C64, {4}, {c64(1), c64(2), c64(3), c64(4)})});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<c64> got = Values<c64>(*out);
  for (int k = 0; k < 4; ++k) {
    std::complex<double> want = 0;
    for (int n = 0; n < 4; ++n) {
      want += (n + 1.0) * std::polar(1.0, -2 * M_PI * k * n / 5);
    }
    EXPECT_NEAR(got[k].real(), want.real(), 1e-5) << k;
    EXPECT_NEAR(got[k].imag(), want.imag(), 1e-5) << k;
  }
  // A zero in fft_length makes the transform zeros, whatever the operand.
  absl::StatusOr<Literal> zero = RunHlo(
      R"(
ENTRY e {
  x = c64[1,1,1,1] parameter(0)
  ROOT f = c64[1,1,1,1] fft(x), fft_type=FFT, fft_length={1,0,1}
})",
      {Vec<c64>(xla::C64, {1, 1, 1, 1}, {c64(42.24f, 24.42f)})});
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_EQ(Values<c64>(*zero), (std::vector<c64>{c64(0, 0)}));
}

TEST(DynamicSliceTest, OneIndexVectorOperand) {
  const std::vector<int32_t> x = {0, 1, 2,  3,  4,  5,  6,  7,
                                  8, 9, 10, 11, 12, 13, 14, 15};
  absl::StatusOr<Literal> out = RunHlo(
      R"(
ENTRY e {
  x = s32[4,4] parameter(0)
  i = s32[2] parameter(1)
  u = s32[2,2] parameter(2)
  s = s32[2,2] dynamic-slice(x, i), dynamic_slice_sizes={2,2}
  d = s32[4,4] dynamic-update-slice(x, u, i)
  ROOT t = (s32[2,2], s32[4,4]) tuple(s, d)
})",
      {Vec<int32_t>(xla::S32, {4, 4}, x), Vec<int32_t>(xla::S32, {2}, {1, 3}),
       Vec<int32_t>(xla::S32, {2, 2}, {-1, -2, -3, -4})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Start (1, 3) clamps to (1, 2) so that the 2x2 window fits.
  EXPECT_EQ(Values<int32_t>(out->element(0)),
            (std::vector<int32_t>{6, 7, 10, 11}));
  EXPECT_EQ(Values<int32_t>(out->element(1)),
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5, -1, -2, 8, 9, -3, -4, 12,
                                  13, 14, 15}));
}

}  // namespace
}  // namespace tpu::emulator::interpreter
