// s4, u4 and the f8 family: the codecs against hand-computed encodings, and
// programs on them (convert, arithmetic on the wide types, bit operations,
// dot, reduce, constants).

#include "emulator/interpreter/narrow_types.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"

namespace tpu::emulator::interpreter {
namespace {

using testing::CompileHlo;
using testing::RunHlo;
using testing::Values;
using testing::Vec;

constexpr xla::PrimitiveType kF8Types[] = {
    xla::F8E5M2,     xla::F8E4M3,     xla::F8E3M4,        xla::F8E4M3FN,
    xla::F8E4M3FNUZ, xla::F8E5M2FNUZ, xla::F8E4M3B11FNUZ, xla::F8E8M0FNU};

// A narrow array from raw bytes (rank 1 unless `dims` are given).
Literal Bytes(xla::PrimitiveType type, std::vector<uint8_t> bytes,
              std::vector<int64_t> dims = {}) {
  if (dims.empty()) dims = {static_cast<int64_t>(bytes.size())};
  absl::StatusOr<Literal> l =
      Literal::FromBuffer(Shape::Array(type, dims), [&] {
        auto buffer = AlignedBuffer::Allocate(bytes.size());
        std::memcpy(buffer->data(), bytes.data(), bytes.size());
        return buffer;
      }());
  EXPECT_TRUE(l.ok()) << l.status();
  return *std::move(l);
}

std::vector<uint8_t> RawBytes(const Literal& literal) {
  auto span = literal.data<uint8_t>();
  return std::vector<uint8_t>(span.begin(), span.end());
}

Literal RunText(const std::string& text, std::vector<Literal> args) {
  absl::StatusOr<Literal> out = RunHlo(text, std::move(args));
  EXPECT_TRUE(out.ok()) << out.status() << "\n" << text;
  return out.ok() ? *std::move(out) : Literal();
}

TEST(F8CodecTest, HandComputedEncodings) {
  struct Case {
    xla::PrimitiveType type;
    double value;
    uint8_t bits;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Case cases[] = {
      // e4m3fn: bias 7, max 448 = 0x7E, only S.1111.111 is NaN.
      {xla::F8E4M3FN, 1.0, 0x38},
      {xla::F8E4M3FN, -0.5, 0xB0},
      {xla::F8E4M3FN, 448, 0x7E},
      {xla::F8E4M3FN, 450, 0x7E},          // rounds down to the maximum
      {xla::F8E4M3FN, 470, 0x7F},          // rounds past it: NaN (no inf)
      {xla::F8E4M3FN, 0.001953125, 0x01},  // 2^-9, the smallest subnormal
      {xla::F8E4M3FN, nan, 0x7F},
      // e5m2: IEEE-like, bias 15, inf = 0x7C, max 57344 = 0x7B.
      {xla::F8E5M2, 1.0, 0x3C},
      {xla::F8E5M2, 3.75, 0x44},  // tie between 3.5 and 4: even (4)
      {xla::F8E5M2, 57344, 0x7B},
      {xla::F8E5M2, 1e6, 0x7C},
      {xla::F8E5M2, -INFINITY, 0xFC},
      // fnuz types: 0x80 is NaN, -0 is +0, no inf.
      {xla::F8E4M3FNUZ, 1.0, 0x40},
      {xla::F8E4M3FNUZ, -0.0, 0x00},
      {xla::F8E4M3FNUZ, 1e6, 0x80},
      {xla::F8E5M2FNUZ, 1.0, 0x40},
      {xla::F8E4M3B11FNUZ, 1.0, 0x58},
      {xla::F8E4M3B11FNUZ, 30, 0x7F},
      // e4m3 and e3m4: IEEE-like.
      {xla::F8E4M3, 1.0, 0x38},
      {xla::F8E4M3, 240, 0x77},
      {xla::F8E4M3, 1e3, 0x78},
      {xla::F8E3M4, 1.0, 0x30},
      {xla::F8E3M4, 1e3, 0x70},
      // e8m0fnu: powers of two, no sign, no zero.
      {xla::F8E8M0FNU, 1.0, 0x7F},
      {xla::F8E8M0FNU, 0.25, 0x7D},
      {xla::F8E8M0FNU, 3.0, 0x81},  // 1.5 * 2: the tie rounds up to 4
      {xla::F8E8M0FNU, -1.0, 0xFF},
      {xla::F8E8M0FNU, 0.0, 0x00},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(EncodeF8(c.type, c.value), c.bits)
        << PrimitiveTypeName(c.type) << " " << c.value;
  }
  EXPECT_EQ(DecodeF8(xla::F8E4M3FN, 0x7E), 448);
  EXPECT_EQ(DecodeF8(xla::F8E5M2, 0x7C), INFINITY);
  EXPECT_TRUE(std::isnan(DecodeF8(xla::F8E4M3FNUZ, 0x80)));
  EXPECT_EQ(DecodeF8(xla::F8E8M0FNU, 0x00), std::ldexp(1.0, -127));
}

TEST(F8CodecTest, EveryEncodingRoundTrips) {
  for (xla::PrimitiveType type : kF8Types) {
    for (int bits = 0; bits < 256; ++bits) {
      const double v = DecodeF8(type, static_cast<uint8_t>(bits));
      if (std::isnan(v)) continue;
      EXPECT_EQ(EncodeF8(type, v), bits)
          << PrimitiveTypeName(type) << " " << bits << " = " << v;
    }
  }
}

TEST(NarrowTypesTest, ConvertToAndFromF8AndInt4) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Literal out =
      RunText(R"(
ENTRY e {
  x = f32[5] parameter(0)
  i = s32[3] parameter(1)
  f8 = f8e4m3fn[5] convert(x)
  back = f32[5] convert(f8)
  s4 = s4[5] convert(x)
  wrapped = s4[3] convert(i)
  wide = s32[3] convert(wrapped)
  ROOT t = (f32[5], s4[5], s32[3]) tuple(back, s4, wide)
})",
              {Vec<float>(xla::F32, {5}, {0.3f, -2.7f, 100, -100, nan}),
               Vec<int32_t>(xla::S32, {3}, {17, -9, 7})});
  const std::vector<float> back = Values<float>(out.element(0));
  EXPECT_EQ(back[0], 0.3125f);  // nearest e4m3fn value to 0.3
  EXPECT_EQ(back[1], -2.75f);
  EXPECT_EQ(back[2], 96.0f);
  EXPECT_EQ(back[3], -96.0f);
  EXPECT_TRUE(std::isnan(back[4]));
  // Float to s4 truncates and saturates; NaN is 0. Stored in the low bits.
  EXPECT_EQ(RawBytes(out.element(1)),
            (std::vector<uint8_t>{0x0, 0xE, 0x7, 0x8, 0x0}));
  // Integer to s4 keeps the low four bits.
  EXPECT_EQ(Values<int32_t>(out.element(2)), (std::vector<int32_t>{1, 7, 7}));
}

TEST(NarrowTypesTest, Int4ArithmeticWrapsAndBitOperationsSeeFourBits) {
  Literal out = RunText(R"(
ENTRY e {
  a = s4[4] parameter(0)
  b = s4[4] parameter(1)
  u = u4[2] parameter(2)
  add = s4[4] add(a, b)
  div = s4[4] divide(a, b)
  srl = s4[4] shift-right-logical(a, b)
  pop = s4[4] popcnt(a)
  sra = u4[2] shift-right-arithmetic(u, u)
  clz = u4[2] count-leading-zeros(u)
  ROOT t = (s4[4], s4[4], s4[4], s4[4], u4[2], u4[2]) tuple(add, div, srl, pop, sra, clz)
})",
                        {Bytes(xla::S4, {7, 0x8, 0xF, 5}),  // 7, -8, -1, 5
                         Bytes(xla::S4, {1, 0xF, 1, 0}),    // 1, -1, 1, 0
                         Bytes(xla::U4, {15, 1})});
  // 7+1 wraps to -8; -8/-1 is -8 (INT_MIN / -1); x/0 is -1.
  EXPECT_EQ(RawBytes(out.element(0)),
            (std::vector<uint8_t>{0x8, 0x7, 0x0, 0x5}));
  EXPECT_EQ(RawBytes(out.element(1)),
            (std::vector<uint8_t>{0x7, 0x8, 0xF, 0xF}));
  // -1 (1111) >> 1 logically is 0111 = 7; an amount of -1 is 15 unsigned,
  // past the width: 0.
  EXPECT_EQ(RawBytes(out.element(2)),
            (std::vector<uint8_t>{0x3, 0x0, 0x7, 0x5}));
  EXPECT_EQ(RawBytes(out.element(3)), (std::vector<uint8_t>{3, 1, 4, 2}));
  // u4 15 = 1111 shifted arithmetically by 15 (out of range) fills with the
  // top bit; 1 >> 1 = 0. clz of 1111 is 0, of 0001 is 3.
  EXPECT_EQ(RawBytes(out.element(4)), (std::vector<uint8_t>{0xF, 0x0}));
  EXPECT_EQ(RawBytes(out.element(5)), (std::vector<uint8_t>{0, 3}));
}

TEST(NarrowTypesTest, DotReduceAndConstantsOnInt4) {
  Literal out = RunText(R"(
add {
  x = s4[] parameter(0)
  y = s4[] parameter(1)
  ROOT s = s4[] add(x, y)
}
ENTRY e {
  a = s4[2,2] parameter(0)
  c = s4[2,2] constant({{1, 0}, {1, 0}})
  d = s4[2,2] dot(a, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = s4[] constant(0)
  r = s4[2] reduce(a, zero), dimensions={1}, to_apply=add
  ROOT t = (s4[2,2], s4[2]) tuple(d, r)
})",
                        {Bytes(xla::S4, {7, 1, 7, 7}, {2, 2})});
  // Row 0: 7*1 + 1*1 = 8 wraps to -8; row 1: 14 wraps to -2.
  EXPECT_EQ(RawBytes(out.element(0)),
            (std::vector<uint8_t>{0x8, 0x0, 0xE, 0x0}));
  EXPECT_EQ(RawBytes(out.element(1)), (std::vector<uint8_t>{0x8, 0xE}));
}

TEST(NarrowTypesTest, F8ArithmeticRoundsOnceToTheType) {
  Literal out = RunText(R"(
ENTRY e {
  a = f8e5m2[2] parameter(0)
  b = f8e5m2[2] parameter(1)
  s = f8e5m2[2] add(a, b)
  r = f8e5m2[2] reduce-precision(s), exponent_bits=5, mantissa_bits=1
  ROOT t = (f8e5m2[2], f8e5m2[2]) tuple(s, r)
})",
                        {Bytes(xla::F8E5M2, {EncodeF8(xla::F8E5M2, 1.5),
                                             EncodeF8(xla::F8E5M2, 1.0)}),
                         Bytes(xla::F8E5M2, {EncodeF8(xla::F8E5M2, 2.5),
                                             EncodeF8(xla::F8E5M2, 0.25)})});
  // 1.5 + 2.5 = 4; 1 + 0.25 = 1.25 (exact in e5m2).
  const std::vector<uint8_t> s = RawBytes(out.element(0));
  EXPECT_EQ(DecodeF8(xla::F8E5M2, s[0]), 4.0);
  EXPECT_EQ(DecodeF8(xla::F8E5M2, s[1]), 1.25);
  // One mantissa bit: 1.25 is a tie between 1 and 1.5: even (1).
  EXPECT_EQ(DecodeF8(xla::F8E5M2, RawBytes(out.element(1))[1]), 1.0);
}

TEST(NarrowTypesTest, BitcastsKeepBytesOrSayWhy) {
  Literal out = RunText(R"(
ENTRY e {
  x = f8e4m3fn[2] parameter(0)
  ROOT b = u8[2] bitcast-convert(x)
})",
                        {Bytes(xla::F8E4M3FN, {0x38, 0x7F})});
  EXPECT_EQ(Values<uint8_t>(out), (std::vector<uint8_t>{0x38, 0x7F}));
  absl::StatusOr<std::unique_ptr<Executable>> bad = CompileHlo(R"(
ENTRY e {
  x = s4[2] parameter(0)
  ROOT b = s8[2] bitcast-convert(x)
})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace tpu::emulator::interpreter
