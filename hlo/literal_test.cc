#include "hlo/literal.h"

#include "Eigen/Core"
#include "gtest/gtest.h"

namespace tpu {
namespace {

TEST(LiteralTest, FromVectorAndToString) {
  std::vector<float> v = {1, 2, 3, 4};
  Literal l = Literal::FromVector<float>(xla::F32, {2, 2}, v);
  EXPECT_EQ(l.ToString(), "f32[2,2] {{1, 2}, {3, 4}}");
  EXPECT_EQ(l.data<float>()[3], 4.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(l.untyped_data()) % 64, 0u);
}

TEST(LiteralTest, CopyOnWrite) {
  std::vector<int32_t> v = {1, 2};
  Literal a = Literal::FromVector<int32_t>(xla::S32, {2}, v);
  Literal b = a;
  EXPECT_EQ(a.buffer(), b.buffer());
  b.mutable_data<int32_t>()[0] = 7;
  EXPECT_NE(a.buffer(), b.buffer());
  EXPECT_EQ(a.data<int32_t>()[0], 1);
  EXPECT_EQ(b.data<int32_t>()[0], 7);
  EXPECT_NE(a, b);
}

TEST(LiteralTest, ProtoRoundTripEveryType) {
  std::vector<Literal> elements;
  bool preds[3] = {true, false, true};
  elements.push_back(Literal::FromVector<bool>(xla::PRED, {3}, preds));
  int8_t s8[2] = {-1, 5};
  elements.push_back(Literal::FromVector<int8_t>(xla::S8, {2}, s8));
  uint16_t u16[2] = {65535, 3};
  elements.push_back(Literal::FromVector<uint16_t>(xla::U16, {2}, u16));
  Eigen::bfloat16 bf[2] = {Eigen::bfloat16(1.5f), Eigen::bfloat16(-2.0f)};
  elements.push_back(Literal::FromVector<Eigen::bfloat16>(xla::BF16, {2}, bf));
  Eigen::half h[1] = {Eigen::half(0.25f)};
  elements.push_back(Literal::FromVector<Eigen::half>(xla::F16, {1}, h));
  int64_t s64[1] = {-(int64_t{1} << 40)};
  elements.push_back(Literal::FromVector<int64_t>(xla::S64, {}, s64));
  uint32_t u32[1] = {0xffffffffu};
  elements.push_back(Literal::FromVector<uint32_t>(xla::U32, {1}, u32));
  double f64[2] = {1e300, -0.0};
  elements.push_back(Literal::FromVector<double>(xla::F64, {2}, f64));
  std::complex<float> c64[1] = {{1, -2}};
  elements.push_back(
      Literal::FromVector<std::complex<float>>(xla::C64, {1}, c64));
  std::complex<double> c128[1] = {{3, 4}};
  elements.push_back(
      Literal::FromVector<std::complex<double>>(xla::C128, {1}, c128));
  Literal tuple = Literal::Tuple(std::move(elements));
  absl::StatusOr<Literal> back = Literal::FromProto(tuple.ToProto());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, tuple);
  EXPECT_EQ(back->Leaves().size(), 10u);
  EXPECT_EQ(tuple.ToProto().bf16s(), "");  // tuple: no values at the top
}

TEST(LiteralTest, FromProtoHonorsColumnMajorLayout) {
  xla::LiteralProto proto;
  proto.mutable_shape()->set_element_type(xla::S32);
  proto.mutable_shape()->add_dimensions(2);
  proto.mutable_shape()->add_dimensions(3);
  proto.mutable_shape()->mutable_layout()->add_minor_to_major(0);
  proto.mutable_shape()->mutable_layout()->add_minor_to_major(1);
  // Column-major storage of {{1,2,3},{4,5,6}}.
  for (int v : {1, 4, 2, 5, 3, 6}) proto.add_s32s(v);
  absl::StatusOr<Literal> l = Literal::FromProto(proto);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->ToString(), "s32[2,3] {{1, 2, 3}, {4, 5, 6}}");
}

TEST(LiteralTest, FromProtoRejectsWrongCounts) {
  xla::LiteralProto proto;
  proto.mutable_shape()->set_element_type(xla::F32);
  proto.mutable_shape()->add_dimensions(3);
  proto.add_f32s(1);
  absl::Status status = Literal::FromProto(proto).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("f32s"), std::string::npos);
  proto.clear_f32s();
  proto.mutable_shape()->set_element_type(xla::BF16);
  proto.set_bf16s("abc");
  EXPECT_EQ(Literal::FromProto(proto).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LiteralTest, FromBufferChecksSize) {
  auto buffer = AlignedBuffer::Allocate(8);
  EXPECT_TRUE(Literal::FromBuffer(Shape::Array(xla::F32, {2}), buffer).ok());
  EXPECT_EQ(
      Literal::FromBuffer(Shape::Array(xla::F32, {3}), buffer).status().code(),
      absl::StatusCode::kInvalidArgument);
  Literal z = Literal::Zeros(
      Shape::Tuple({Shape::Array(xla::F32, {2}), Shape::Token()}));
  EXPECT_EQ(z.tuple_size(), 2);
  EXPECT_EQ(z.element(0).data<float>()[1], 0.0f);
}

}  // namespace
}  // namespace tpu
