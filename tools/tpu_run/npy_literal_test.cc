#include "tools/tpu_run/npy_literal.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace tpu {
namespace {

TEST(NpyLiteralTest, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBfloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBfloat16Bits(-2.0f), 0xc000);
  // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties go to even (1).
  EXPECT_EQ(FloatToBfloat16Bits(1.00390625f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up to even.
  EXPECT_EQ(FloatToBfloat16Bits(1.01171875f), 0x3f82);
  // Just above halfway rounds up.
  EXPECT_EQ(FloatToBfloat16Bits(std::nextafter(1.00390625f, 2.0f)), 0x3f81);
  EXPECT_EQ(FloatToBfloat16Bits(std::numeric_limits<float>::infinity()),
            0x7f80);
  const uint16_t nan = FloatToBfloat16Bits(std::nanf(""));
  EXPECT_TRUE(std::isnan(Bfloat16BitsToFloat(nan)));
  // The largest float rounds to infinity, as in IEEE rounding.
  EXPECT_EQ(FloatToBfloat16Bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(Bfloat16BitsToFloat(0x4049), 3.140625f);
}

TEST(NpyLiteralTest, Float32ArrayRoundTripsBitExact) {
  NpyArray array;
  array.dtype = {'f', 4};
  array.shape = {2, 2};
  const float values[] = {1.5f, -0.0f, 3e38f, 1e-45f};
  array.data.assign(reinterpret_cast<const char*>(values), sizeof(values));
  absl::StatusOr<Literal> literal =
      LiteralFromNpy(array, Shape::Array(xla::F32, {2, 2}));
  ASSERT_TRUE(literal.ok()) << literal.status();
  EXPECT_EQ(std::memcmp(literal->untyped_data(), values, sizeof(values)), 0);
  absl::StatusOr<NpyArray> back = NpyFromLiteral(*literal);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data, array.data);
  EXPECT_EQ(back->shape, array.shape);
  EXPECT_EQ(back->dtype, array.dtype);
}

TEST(NpyLiteralTest, Bf16ComesFromFloat32AndGoesBackAsFloat32) {
  NpyArray array;
  array.dtype = {'f', 4};
  array.shape = {3};
  const float values[] = {1.0f, 1.00390625f, -3.140625f};
  array.data.assign(reinterpret_cast<const char*>(values), sizeof(values));
  absl::StatusOr<Literal> literal =
      LiteralFromNpy(array, Shape::Array(xla::BF16, {3}));
  ASSERT_TRUE(literal.ok()) << literal.status();
  const uint16_t* bits = static_cast<const uint16_t*>(literal->untyped_data());
  EXPECT_EQ(bits[0], 0x3f80);
  EXPECT_EQ(bits[1], 0x3f80);
  EXPECT_EQ(bits[2], 0xc049);
  absl::StatusOr<NpyArray> back = NpyFromLiteral(*literal);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->dtype, (NpyDtype{'f', 4}));
  float out[3];
  std::memcpy(out, back->data.data(), sizeof(out));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(out[2], -3.140625f);
}

TEST(NpyLiteralTest, PredNormalizesToZeroOrOne) {
  NpyArray array;
  array.dtype = {'b', 1};
  array.shape = {3};
  array.data = std::string("\x00\x01\x05", 3);
  absl::StatusOr<Literal> literal =
      LiteralFromNpy(array, Shape::Array(xla::PRED, {3}));
  ASSERT_TRUE(literal.ok()) << literal.status();
  const uint8_t* bytes = static_cast<const uint8_t*>(literal->untyped_data());
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[1], 1);
  EXPECT_EQ(bytes[2], 1);
}

TEST(NpyLiteralTest, MismatchesSayWhatToSave) {
  NpyArray array;
  array.dtype = {'f', 8};
  array.shape = {2, 3};
  array.data = std::string(48, '\0');
  absl::StatusOr<Literal> literal =
      LiteralFromNpy(array, Shape::Array(xla::F32, {2, 3}));
  ASSERT_FALSE(literal.ok());
  EXPECT_EQ(literal.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(literal.status().message(),
            "is float64 of shape (2, 3) but the parameter is f32[2,3]: save "
            "it as float32 with shape (2, 3)");

  array.dtype = {'f', 4};
  array.data = std::string(24, '\0');
  literal = LiteralFromNpy(array, Shape::Array(xla::F32, {3, 2}));
  ASSERT_FALSE(literal.ok());
  EXPECT_TRUE(absl::StrContains(literal.status().message(), "shape (3, 2)"))
      << literal.status();
}

TEST(NpyLiteralTest, DtypesForEveryType) {
  EXPECT_EQ(NpyDtypeFor(xla::PRED)->Name(), "bool");
  EXPECT_EQ(NpyDtypeFor(xla::S8)->Name(), "int8");
  EXPECT_EQ(NpyDtypeFor(xla::U64)->Name(), "uint64");
  EXPECT_EQ(NpyDtypeFor(xla::F16)->Name(), "float16");
  EXPECT_EQ(NpyDtypeFor(xla::BF16)->Name(), "float32");
  EXPECT_EQ(NpyDtypeFor(xla::C128)->Name(), "complex128");
  EXPECT_EQ(NpyDtypeFor(xla::TUPLE).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpu
