#include "emulator/faults/fault_rule.h"

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::emulator::faults {
namespace {

using ::testing::HasSubstr;

absl::Status ParseError(absl::string_view text) {
  absl::StatusOr<Rule> rule = ParseRule(text);
  EXPECT_FALSE(rule.ok()) << text;
  return rule.status();
}

TEST(FaultRuleTest, ParsesEveryFilter) {
  absl::StatusOr<Rule> rule = ParseRule(
      "  collective core=1 client=3 program=step instruction=ar.1 nth=2 "
      "skip ");
  ASSERT_TRUE(rule.ok()) << rule.status();
  EXPECT_EQ(rule->kind, OpKind::kCollective);
  EXPECT_EQ(rule->core, 1);
  EXPECT_EQ(rule->client, 3u);
  EXPECT_EQ(rule->program, "step");
  EXPECT_EQ(rule->instruction, "ar.1");
  EXPECT_EQ(rule->nth, 2);
  EXPECT_FALSE(rule->first.has_value());
  EXPECT_EQ(rule->action.kind, ActionKind::kSkip);
  EXPECT_EQ(rule->text,
            "collective core=1 client=3 program=step instruction=ar.1 nth=2 "
            "skip");
}

TEST(FaultRuleTest, ParsesEveryAction) {
  auto delay = ParseRule("execute core=1 nth=1 delay=250ms");
  ASSERT_TRUE(delay.ok());
  EXPECT_EQ(delay->action.kind, ActionKind::kDelay);
  EXPECT_EQ(delay->action.delay, absl::Milliseconds(250));
  auto two = ParseRule("alloc delay=2s");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->action.delay, absl::Seconds(2));
  EXPECT_EQ(ParseRule("execute hang")->action.kind, ActionKind::kHang);
  auto fail = ParseRule("load fail=FAILED_PRECONDITION:not today: sorry");
  ASSERT_TRUE(fail.ok());
  EXPECT_EQ(fail->action.status,
            absl::FailedPreconditionError("not today: sorry"));
  EXPECT_EQ(ParseRule("compile fail=INTERNAL")->action.status,
            absl::InternalError(""));
  EXPECT_EQ(ParseRule("transfer_to drop_stream")->action.kind,
            ActionKind::kDropStream);
  EXPECT_EQ(ParseRule("any crash")->action.kind, ActionKind::kCrash);
  EXPECT_EQ(ParseRule("alloc core=0 hbm=1GiB")->action.bytes, int64_t{1} << 30);
  EXPECT_EQ(ParseRule("alloc hbm=64KiB")->action.bytes, 65536);
  EXPECT_EQ(ParseRule("alloc hbm=2MB")->action.bytes, 2000000);
  EXPECT_EQ(ParseRule("alloc hbm=4096")->action.bytes, 4096);
  EXPECT_EQ(ParseRule("execute slow=2.5")->action.factor, 2.5);
  auto random = ParseRule("dealloc seed=7 probability=0.25 fail=ABORTED");
  ASSERT_TRUE(random.ok());
  EXPECT_EQ(random->seed, 7u);
  EXPECT_EQ(random->probability, 0.25);
  auto first = ParseRule("copy first=3 hang");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->first, 3);
  EXPECT_EQ(first->kind, OpKind::kCopy);
}

TEST(FaultRuleTest, EmptyRuleNeedsAKind) {
  EXPECT_EQ(ParseError("   ").message(),
            "column 1: expected an operation kind (alloc, dealloc, "
            "transfer_to, transfer_from, copy, compile, load, unload, "
            "execute, collective, any) but found the end of the rule");
}

TEST(FaultRuleTest, UnknownKind) {
  absl::Status status = ParseError("exec hang");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("column 1: expected an operation kind (alloc, "));
  EXPECT_THAT(status.message(), HasSubstr("but found \"exec\""));
}

TEST(FaultRuleTest, MisspelledActionNamesItsColumn) {
  EXPECT_EQ(ParseError("execute core=1 falil=INTERNAL").message(),
            "column 16: expected a filter (core=, client=, program=, "
            "instruction=, nth=, first=, every, seed=, probability=) or an "
            "action (delay=, hang, fail=, drop_stream, crash, hbm=, slow=, "
            "skip) but found \"falil=INTERNAL\"");
}

TEST(FaultRuleTest, MissingAction) {
  EXPECT_EQ(ParseError("execute core=1").message(),
            "column 15: expected an action (delay=, hang, fail=, "
            "drop_stream, crash, hbm=, slow=, skip) but found the end of the "
            "rule");
}

TEST(FaultRuleTest, WordAfterTheAction) {
  EXPECT_EQ(ParseError("execute hang core=1").message(),
            "column 14: expected the end of the rule after the action "
            "\"hang\" but found \"core=1\"");
}

TEST(FaultRuleTest, BadFilterValues) {
  EXPECT_EQ(ParseError("execute core=x hang").message(),
            "column 14: expected a non-negative integer after core= but "
            "found \"x\"");
  EXPECT_EQ(ParseError("execute nth=0 hang").message(),
            "column 13: expected a positive integer after nth= but found "
            "\"0\"");
  EXPECT_EQ(ParseError("execute first=-2 hang").message(),
            "column 15: expected a positive integer after first= but found "
            "\"-2\"");
  EXPECT_EQ(ParseError("execute program= hang").message(),
            "column 17: expected a name after program= but found "
            "\"program=\"");
  EXPECT_EQ(ParseError("execute probability=1.5 hang").message(),
            "column 21: expected a probability from 0 to 1 after "
            "probability= but found \"1.5\"");
  EXPECT_EQ(ParseError("execute seed=abc probability=0.5 hang").message(),
            "column 14: expected a non-negative integer seed after seed= but "
            "found \"abc\"");
}

TEST(FaultRuleTest, RepeatedOrConflictingFilters) {
  EXPECT_EQ(ParseError("execute core=1 core=2 hang").message(),
            "column 16: core= is given twice; give each filter once");
  EXPECT_EQ(ParseError("execute nth=1 first=2 hang").message(),
            "column 15: nth=, first= and every are alternatives; give at "
            "most one");
  EXPECT_EQ(ParseError("execute seed=3 hang").message(),
            "column 9: seed= only seeds probability=; add probability=P (0 to "
            "1) or drop seed=");
}

TEST(FaultRuleTest, BadActionValues) {
  EXPECT_EQ(ParseError("execute delay=soon").message(),
            "column 15: expected a duration after delay= (e.g. 250ms, 2s) "
            "but found \"soon\"");
  EXPECT_EQ(ParseError("execute fail=NOPE:x").message(),
            "column 14: expected a canonical status code after fail= (e.g. "
            "FAILED_PRECONDITION, UNAVAILABLE, INTERNAL) but found \"NOPE\"");
  EXPECT_EQ(ParseError("alloc hbm=lots").message(),
            "column 11: expected a byte count after hbm= (e.g. 1048576, "
            "64MiB, 1GiB) but found \"lots\"");
  EXPECT_EQ(ParseError("execute slow=0.5").message(),
            "column 14: expected a factor of at least 1 after slow= (e.g. 4, "
            "2.5) but found \"0.5\"");
  EXPECT_EQ(ParseError("execute hang=5s").message(),
            "column 9: the action hang takes no value");
  EXPECT_THAT(ParseError("execute delay").message(),
              HasSubstr("column 14: expected '=' and a value after delay"));
}

TEST(FaultRuleTest, ActionsThatDoNotFitTheKind) {
  EXPECT_EQ(ParseError("execute core=1 skip").message(),
            "column 16: skip applies to collective operations only (the core "
            "never arrives at the collective), but this rule's kind is "
            "execute; use kind collective");
  EXPECT_THAT(ParseError("alloc slow=2").message(),
              HasSubstr("column 7: slow applies to programs"));
  EXPECT_THAT(ParseError("compile hbm=1MiB").message(),
              HasSubstr("column 9: hbm= changes the capacity"));
  EXPECT_THAT(ParseError("execute instruction=ar hang").message(),
              HasSubstr("instruction= selects collectives only"));
}

}  // namespace
}  // namespace tpu::emulator::faults
