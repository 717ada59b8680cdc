#include "emulator/worker/inline_execution.h"

#include <string>

#include "gtest/gtest.h"
#include "hlo/text/hlo_parser.h"

namespace tpu::emulator {
namespace {

xla::HloModuleProto Parse(const std::string& text) {
  auto module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? *module : xla::HloModuleProto();
}

TEST(RunsInlineTest, ASmallElementwiseProgramRunsInline) {
  EXPECT_TRUE(RunsInline(Parse(R"(HloModule add
ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  ROOT s = f32[4] add(a, b)
})"),
                         /*num_replicas=*/1));
}

TEST(RunsInlineTest, ReplicatedProgramsDoNot) {
  EXPECT_FALSE(RunsInline(Parse(R"(HloModule add
ENTRY e {
  a = f32[4] parameter(0)
  ROOT s = f32[4] negate(a)
})"),
                          /*num_replicas=*/2));
}

TEST(RunsInlineTest, LoopsDoNot) {
  EXPECT_FALSE(RunsInline(Parse(R"(HloModule loop
cond {
  p = s32[] parameter(0)
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(p, ten), direction=LT
}
body {
  p = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT n = s32[] add(p, one)
}
ENTRY e {
  z = s32[] constant(0)
  ROOT w = s32[] while(z), condition=cond, body=body
})"),
                          /*num_replicas=*/1));
}

TEST(RunsInlineTest, CollectivesDoNot) {
  EXPECT_FALSE(RunsInline(Parse(R"(HloModule ar
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(a), to_apply=sum
})"),
                          /*num_replicas=*/1));
}

TEST(RunsInlineTest, LargeProgramsDoNot) {
  EXPECT_FALSE(RunsInline(Parse(R"(HloModule big
ENTRY e {
  a = f32[128,128] parameter(0)
  ROOT n = f32[128,128] negate(a)
})"),
                          /*num_replicas=*/1));
  // Exactly at the limit (two 8192-element shapes) still runs inline.
  EXPECT_TRUE(RunsInline(Parse(R"(HloModule edge
ENTRY e {
  a = f32[8192] parameter(0)
  ROOT n = f32[8192] negate(a)
})"),
                         /*num_replicas=*/1));
}

}  // namespace
}  // namespace tpu::emulator
