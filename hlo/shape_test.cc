#include "hlo/shape.h"

#include "gtest/gtest.h"

namespace tpu {
namespace {

TEST(ShapeTest, ByteWidthAndNames) {
  EXPECT_EQ(ByteWidth(xla::PRED), 1);
  EXPECT_EQ(ByteWidth(xla::BF16), 2);
  EXPECT_EQ(ByteWidth(xla::C64), 8);
  EXPECT_EQ(ByteWidth(xla::C128), 16);
  EXPECT_EQ(ByteWidth(xla::TUPLE), 0);
  EXPECT_EQ(PrimitiveTypeName(xla::BF16), "bf16");
  EXPECT_EQ(PrimitiveTypeName(xla::F8E5M2), "f8e5m2");
  EXPECT_EQ(*PrimitiveTypeFromName("u16"), xla::U16);
  EXPECT_EQ(PrimitiveTypeFromName("f7").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ShapeTest, ToStringAndByteSize) {
  Shape a = Shape::Array(xla::F32, {2, 3});
  EXPECT_EQ(a.ToString(), "f32[2,3]");
  EXPECT_EQ(a.ByteSize(), 24);
  EXPECT_EQ(a.element_count(), 6);
  Shape t =
      Shape::Tuple({Shape::Array(xla::F32, {2}), Shape::Scalar(xla::S32)});
  EXPECT_EQ(t.ToString(), "(f32[2], s32[])");
  EXPECT_EQ(t.ByteSize(), 16);
  EXPECT_EQ(Shape::Token().ToString(), "token[]");
  EXPECT_EQ(Shape::Scalar(xla::PRED).ByteSize(), 1);
}

TEST(ShapeTest, ProtoRoundTripAndLeaves) {
  Shape t =
      Shape::Tuple({Shape::Array(xla::BF16, {4, 1}),
                    Shape::Tuple({Shape::Scalar(xla::U8)}), Shape::Token()});
  absl::StatusOr<Shape> back = Shape::FromProto(t.ToProto());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
  std::vector<ShapeIndex> indices;
  t.ForEachLeaf(
      [&](const Shape&, const ShapeIndex& index) { indices.push_back(index); });
  ASSERT_EQ(indices.size(), 3u);
  EXPECT_EQ(indices[1], (ShapeIndex{1, 0}));
  EXPECT_EQ(t.Subshape({1, 0}).element_type(), xla::U8);
  EXPECT_EQ(t.Leaves().size(), 3u);
}

TEST(ShapeTest, FromProtoRejectsBadShapes) {
  xla::ShapeProto proto = Shape::Array(xla::F32, {2}).ToProto();
  proto.set_dimensions(0, -1);
  EXPECT_EQ(Shape::FromProto(proto).status().code(),
            absl::StatusCode::kInvalidArgument);
  proto = Shape::Array(xla::F32, {2, 2}).ToProto();
  proto.mutable_layout()->set_minor_to_major(1, 1);  // {1,1}: not a permutation
  EXPECT_EQ(Shape::FromProto(proto).status().code(),
            absl::StatusCode::kInvalidArgument);
  proto = Shape::Array(xla::F32, {2}).ToProto();
  proto.set_element_type(xla::S2);  // Not an element type we hold.
  absl::Status status = Shape::FromProto(proto).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("s2"), std::string::npos) << status;
}

}  // namespace
}  // namespace tpu
