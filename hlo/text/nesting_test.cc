// Hostile HLO text: nesting beyond the parser's limit and elided literals
// that ask for more values than exist are refused, never a crash.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hlo/text/hlo_parser.h"

namespace tpu::hlo {
namespace {

using ::testing::HasSubstr;

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string NestedTupleParameter(int depth) {
  return absl::StrCat("HloModule m\nENTRY e {\n  ROOT p = ", Repeat("(", depth),
                      "f32[]", Repeat(")", depth), " parameter(0)\n}\n");
}

TEST(NestingTest, TupleShapesNestAtMost256Deep) {
  EXPECT_TRUE(ParseHloModule(NestedTupleParameter(256)).ok());
  absl::StatusOr<xla::HloModuleProto> deep =
      ParseHloModule(NestedTupleParameter(257));
  EXPECT_EQ(deep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(deep.status().message(),
              HasSubstr("nesting deeper than 256 levels (tuple shapes, "
                        "literals, braces or operand instructions)"));
  // A hundred thousand levels: the same error, no stack overflow.
  EXPECT_EQ(ParseHloModule(NestedTupleParameter(100000)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NestingTest, LiteralBracesNestAtMost256Deep) {
  // A rank-300 constant: one brace level per dimension.
  const std::string dims = absl::StrCat("1", Repeat(",1", 299));
  const std::string text = absl::StrCat(
      "HloModule m\nENTRY e {\n  ROOT c = f32[", dims, "] constant(",
      Repeat("{", 300), "1", Repeat("}", 300), ")\n}\n");
  absl::StatusOr<xla::HloModuleProto> parsed = ParseHloModule(text);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("nesting deeper than 256"));
}

TEST(NestingTest, OperandInstructionsNestAtMost256Deep) {
  auto nested = [](int depth) {
    return absl::StrCat("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n",
                        "  ROOT n = f32[] negate(",
                        Repeat("f32[] negate(", depth), "p", Repeat(")", depth),
                        ")\n}\n");
  };
  EXPECT_TRUE(ParseHloModule(nested(200)).ok());
  absl::StatusOr<xla::HloModuleProto> deep = ParseHloModule(nested(100000));
  EXPECT_EQ(deep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(deep.status().message(), HasSubstr("nesting deeper than 256"));
}

TEST(NestingTest, HugeElidedLiteralIsRefused) {
  absl::StatusOr<xla::HloModuleProto> parsed = ParseHloModule(
      "HloModule m\nENTRY e {\n  ROOT c = f32[1099511627776] "
      "constant({...})\n}\n");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(),
              HasSubstr("an elided literal ({...}) of 1099511627776 elements "
                        "(f32); at most 1073741824 bytes (1 GiB) of values are "
                        "made up"));
}

TEST(NestingTest, ElidedLiteralsAreBoundedInBytes) {
  // 2^27 f64 values are 1 GiB, one more is refused; f32 may have twice as many.
  auto parse = [](const char* shape) {
    return ParseHloModule(absl::StrCat(
        "HloModule m\nENTRY e {\n  ROOT c = ", shape, " constant({...})\n}\n"));
  };
  absl::StatusOr<xla::HloModuleProto> f64 = parse("f64[134217729]");
  EXPECT_EQ(f64.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(f64.status().message(),
              HasSubstr("of 134217729 elements (f64); at most 1073741824 "
                        "bytes (1 GiB)"));
  EXPECT_TRUE(parse("s8[1024]").ok());
}

TEST(NestingTest, ElidedLiteralOfUnboundedOrOverflowingShapeIsRefused) {
  for (const char* shape : {"s4[?]", "f32[4611686018427387904,4]"}) {
    absl::StatusOr<xla::HloModuleProto> parsed = ParseHloModule(absl::StrCat(
        "HloModule m\nENTRY e {\n  ROOT c = ", shape, " constant({...})\n}\n"));
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << shape;
    EXPECT_THAT(parsed.status().message(),
                HasSubstr("an elided literal ({...}) needs a shape with a "
                          "known element count; this one has an unbounded "
                          "('?') dimension or too many elements"))
        << shape;
  }
}

}  // namespace
}  // namespace tpu::hlo
