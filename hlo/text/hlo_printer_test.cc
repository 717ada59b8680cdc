#include "hlo/text/hlo_printer.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hlo/text/hlo_parser.h"
#include "hlo/text/test_util.h"

namespace tpu::hlo {
namespace {

using ::testing::HasSubstr;

// parse -> print -> parse gives the same proto, and printing is a fixed point.
void ExpectRoundTrip(const std::string& text) {
  absl::StatusOr<xla::HloModuleProto> first = ParseHloModule(text);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string printed = PrintHloModule(*first);
  absl::StatusOr<xla::HloModuleProto> second = ParseHloModule(printed);
  ASSERT_TRUE(second.ok()) << second.status() << "\n" << printed;
  EXPECT_EQ(testing::Diff(*first, *second), "") << printed;
  EXPECT_EQ(PrintHloModule(*second), printed);
}

class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, ParsePrintParse) {
  const std::string text = testing::ReadTestData(GetParam());
  ASSERT_FALSE(text.empty()) << GetParam();
  ExpectRoundTrip(text);
}

INSTANTIATE_TEST_SUITE_P(TestData, RoundTripTest,
                         ::testing::Values("all_ops.hlo", "constants.hlo",
                                           "scheduled.hlo", "graphsage_tf.hlo",
                                           "ssd_mobilenet_tf.hlo"));

TEST(HloPrinterTest, RoundTripsSmallModules) {
  ExpectRoundTrip(R"(
HloModule m, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY e {
  p = f32[2,2]{0,1:T(2,2)S(1)} parameter(0)
  ROOT d = f32[<=2,2]{1,0} dynamic-reshape(p, c), sharding={devices=[1,2]<=[2]}
  c = s32[] constant(2)
}
)");
  ExpectRoundTrip(R"(
HloModule m
ENTRY e {
  a = f32[4,4] parameter(0)
  b = f32[4,4] parameter(1)
  ROOT d = f32[4,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, algorithm=dot_bf16_bf16_f32, sparsity=L.1@2:4
}
)");
  ExpectRoundTrip(R"(
HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  x = f32[8] exponential(p), result_accuracy={tolerance={atol=0.5,rtol=0.25,ulps=2}}
  ROOT y = f32[8] tanh(x), result_accuracy={mode=highest}, frontend_attributes={"a b"="c"}
}
)");
}

TEST(HloPrinterTest, PrintsXlaSyntax) {
  absl::StatusOr<xla::HloModuleProto> m = ParseHloModule(R"(
HloModule simple
add { x = f32[] parameter(0)
      y = f32[] parameter(1)
      ROOT s = f32[] add(x, y) }
ENTRY main {
  a = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=add, metadata={op_name="sum"}
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string text = PrintHloModule(*m);
  EXPECT_EQ(text,
            "HloModule simple, entry_computation_layout={(f32[4]{0})->f32[]}\n"
            "\n"
            "%add (x: f32[], y: f32[]) -> f32[] {\n"
            "  %x = f32[] parameter(0)\n"
            "  %y = f32[] parameter(1)\n"
            "  ROOT %s = f32[] add(f32[] %x, f32[] %y)\n"
            "}\n"
            "\n"
            "ENTRY %main (a: f32[4]) -> f32[] {\n"
            "  %a = f32[4]{0} parameter(0)\n"
            "  %z = f32[] constant(0)\n"
            "  ROOT %r = f32[] reduce(f32[4]{0} %a, f32[] %z), dimensions={0}, "
            "to_apply=%add, metadata={op_name=\"sum\"}\n"
            "}\n");
  const auto& entry = m->computations(1);
  EXPECT_EQ(PrintHloInstruction(entry.instructions(2), entry, &*m),
            "%r = f32[] reduce(f32[4]{0} %a, f32[] %z), dimensions={0}, "
            "to_apply=%add, metadata={op_name=\"sum\"}");
  EXPECT_EQ(PrintHloInstruction(entry.instructions(2), entry),
            "%r = f32[] reduce(f32[4]{0} %a, f32[] %z), dimensions={0}, "
            "to_apply=%computation.1, metadata={op_name=\"sum\"}");
}

TEST(HloPrinterTest, ShapesAndLiterals) {
  absl::StatusOr<xla::ShapeProto> shape =
      ParseShape("(bf16[<=8,3]{0,1:T(8,128)(2,1)S(1)}, token[], s32[])");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(PrintShape(*shape),
            "(bf16[<=8,3]{0,1:T(8,128)(2,1)S(1)}, token[], s32[])");

  absl::StatusOr<xla::HloModuleProto> m = ParseHloModule(R"(
HloModule m
ENTRY e {
  a = f32[2,3]{0,1} constant({{1, 2.5, -inf}, {nan, 1e-07, 0x1p-1}})
  b = (pred[], c64[1]) constant((true, {(1, -2)}))
  ROOT c = bf16[2] constant({...})
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const auto& e = m->computations(0);
  EXPECT_EQ(PrintLiteral(e.instructions(0).literal()),
            "{{1, 2.5, -inf}, {nan, 1e-07, 0.5}}");
  EXPECT_EQ(PrintLiteral(e.instructions(1).literal()), "(true, {(1, -2)})");
  EXPECT_EQ(PrintLiteral(e.instructions(2).literal()), "{-0.3125, 0.125}");
}

TEST(HloPrinterTest, IotaReplicaGroupsPrintExpanded) {
  absl::StatusOr<xla::HloModuleProto> m = ParseHloModule(R"(
HloModule m
sum { x = f32[] parameter(0)
      y = f32[] parameter(1)
      ROOT s = f32[] add(x, y) }
ENTRY e {
  p = f32[8] parameter(0)
  ROOT r = f32[8] all-reduce(p), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=sum
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(PrintHloModule(*m), HasSubstr("replica_groups={{0,2},{1,3}}"));
}

}  // namespace
}  // namespace tpu::hlo
