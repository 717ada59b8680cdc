// The text current XLA prints and accepts beyond the core grammar
// (issue 14): stack-frame tables, named shardings, header forms, shape-less
// and nested instructions and the async shorthand. Each test checks the
// proto fields and that the printed text parses back to the same proto.

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hlo/text/hlo_parser.h"
#include "hlo/text/hlo_printer.h"
#include "hlo/text/test_util.h"

namespace tpu::hlo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

xla::HloModuleProto MustParse(const std::string& text) {
  absl::StatusOr<xla::HloModuleProto> module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? *module : xla::HloModuleProto();
}

const xla::HloInstructionProto& Find(const xla::HloModuleProto& module,
                                     const std::string& name) {
  const xla::HloInstructionProto* i = testing::FindInstruction(module, name);
  EXPECT_NE(i, nullptr) << "no instruction " << name;
  static const xla::HloInstructionProto* const kEmpty =
      new xla::HloInstructionProto();
  return i == nullptr ? *kEmpty : *i;
}

using testing::ParseErrorOf;

// --- Stack frames -----------------------------------------------------------

constexpr char kStackFrames[] =
    R"(HloModule jit_f, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

FileNames
1 "scripts/run.py"
2 "lib/\"q\".py"

FunctionNames
1 "<module>"
2 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=20 end_line=21 column=3 end_column=9}
2 {file_name_id=2 function_name_id=2 line=5 end_line=5 column=11 end_column=15}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}


ENTRY %main.3 (x.1: f32[2]) -> f32[2] {
  %x.1 = f32[2]{0} parameter(0), metadata={op_name="x"}
  ROOT %sine.2 = f32[2]{0} sine(%x.1), metadata={op_name="jit(f)/sin" stack_frame_id=2}
}
)";

TEST(StackFramesTest, TablesGoToTheModuleProto) {
  const xla::HloModuleProto m = MustParse(kStackFrames);
  const xla::StackFrameIndexProto& index = m.stack_frame_index();
  EXPECT_THAT(index.file_names(),
              ElementsAre("scripts/run.py", "lib/\"q\".py"));
  EXPECT_THAT(index.function_names(), ElementsAre("<module>", "f"));
  ASSERT_EQ(index.file_locations_size(), 2);
  const auto& location = index.file_locations(0);
  EXPECT_EQ(location.file_name_id(), 1);
  EXPECT_EQ(location.function_name_id(), 1);
  EXPECT_EQ(location.line(), 20);
  EXPECT_EQ(location.end_line(), 21);
  EXPECT_EQ(location.column(), 3);
  EXPECT_EQ(location.end_column(), 9);
  ASSERT_EQ(index.stack_frames_size(), 2);
  // XLA prints a parent one higher than it stores it.
  EXPECT_EQ(index.stack_frames(0).file_location_id(), 1);
  EXPECT_EQ(index.stack_frames(0).parent_frame_id(), 0);
  EXPECT_EQ(index.stack_frames(1).parent_frame_id(), 1);
  EXPECT_EQ(Find(m, "sine.2").metadata().stack_frame_id(), 2);
}

TEST(StackFramesTest, PrintedAsXlaPrintsThemAndRoundTrip) {
  const std::string printed = PrintHloModule(MustParse(kStackFrames));
  EXPECT_THAT(printed, HasSubstr("\n\nFileNames\n1 \"scripts/run.py\"\n"
                                 "2 \"lib/\\\"q\\\".py\"\n\nFunctionNames\n"));
  EXPECT_THAT(printed,
              HasSubstr("\nFileLocations\n1 {file_name_id=1 "
                        "function_name_id=1 line=20 end_line=21 column=3 "
                        "end_column=9}\n"));
  EXPECT_THAT(printed, HasSubstr("\nStackFrames\n1 {file_location_id=1 "
                                 "parent_frame_id=1}\n2 {file_location_id=2 "
                                 "parent_frame_id=2}\n"));
  EXPECT_EQ(testing::RoundTripProblem(kStackFrames), "");
}

TEST(StackFramesTest, OlderLocationsWithoutEndsAndNoTables) {
  const xla::HloModuleProto m = MustParse(R"(HloModule m
FileNames
FunctionNames
FileLocations
1 {file_name_id=1, function_name_id=1, line=2, column=3}
StackFrames
ENTRY e { ROOT c = f32[] constant(1) }
)");
  ASSERT_EQ(m.stack_frame_index().file_locations_size(), 1);
  EXPECT_EQ(m.stack_frame_index().file_locations(0).end_line(), 0);
  // Modules without tables print none.
  EXPECT_THAT(PrintHloModule(MustParse("HloModule m\nENTRY e {\n"
                                       "  ROOT c = f32[] constant(1)\n}\n")),
              ::testing::Not(HasSubstr("FileNames")));
}

TEST(StackFramesTest, Errors) {
  EXPECT_EQ(ParseErrorOf("HloModule m\nFileNames\n1 \"a\"\nFileLocations\n"),
            "line 4, column 1: expected 'FunctionNames', got "
            "'FileLocations'");
  EXPECT_EQ(
      ParseErrorOf("HloModule m\nFileNames\nFunctionNames\nFileLocations\n"
                   "1 {file_name_id=1 line=2 column=3}\nStackFrames\n"),
      "line 5, column 3: file location needs file_name_id, "
      "function_name_id, line and column");
  EXPECT_EQ(
      ParseErrorOf("HloModule m\nFileNames\nFunctionNames\nFileLocations\n"
                   "StackFrames\n1 {file_location_id=1 parent=0}\n"),
      "line 6, column 23: expected file_location_id or "
      "parent_frame_id, got 'parent'");
}

// --- Header -----------------------------------------------------------------

TEST(HeaderTest, ModuleNameWithColon) {
  const xla::HloModuleProto m = MustParse(R"(HloModule axpy_module:
ENTRY %axpy (a: f32[]) -> f32[] {
  ROOT %a = f32[] parameter(0)
}
)");
  EXPECT_EQ(m.name(), "axpy_module");
}

// --- Named shardings --------------------------------------------------------

xla::OpSharding ShardingOf(const std::string& sharding,
                           const std::string& shape = "f32[8,8]") {
  const std::string text = "HloModule m\nENTRY e {\n  ROOT p = " + shape +
                           " parameter(0), sharding=" + sharding + "\n}\n";
  EXPECT_EQ(testing::RoundTripProblem(text), "") << sharding;
  return Find(MustParse(text), "p").sharding();
}

TEST(NamedShardingTest, MaximalMesh) {
  const xla::OpSharding s = ShardingOf("{maximal_mesh[device_id=3]}");
  ASSERT_TRUE(s.has_named_sharding());
  EXPECT_EQ(s.type(), xla::OpSharding::REPLICATED);  // Unset, as XLA leaves it.
  EXPECT_EQ(s.named_sharding().mesh().axes_size(), 0);
  EXPECT_THAT(s.named_sharding().mesh().device_ids(), ElementsAre(3));
  EXPECT_EQ(PrintHloModule(MustParse("HloModule m\nENTRY e {\n  ROOT p = "
                                     "f32[] parameter(0), sharding="
                                     "{maximal_mesh[device_id=3]}\n}\n")),
            "HloModule m, entry_computation_layout={(f32[])->f32[]}\n\n"
            "ENTRY %e (p: f32[]) -> f32[] {\n"
            "  ROOT %p = f32[] parameter(0), "
            "sharding={maximal_mesh[device_id=3]}\n}\n");
}

TEST(NamedShardingTest, ReplicatedManualAndUnreduced) {
  xla::OpSharding s = ShardingOf("{mesh[], replicated}");
  ASSERT_TRUE(s.has_named_sharding());
  EXPECT_TRUE(s.named_sharding().has_mesh());
  EXPECT_EQ(s.named_sharding().mesh().axes_size(), 0);
  EXPECT_EQ(s.named_sharding().dim_shardings_size(), 0);

  s = ShardingOf("{mesh[x=2,y=4], manual}");
  ASSERT_EQ(s.named_sharding().mesh().axes_size(), 2);
  EXPECT_EQ(s.named_sharding().mesh().axes(1).name(), "y");
  EXPECT_EQ(s.named_sharding().mesh().axes(1).size(), 4);
  ASSERT_EQ(s.named_sharding().manual_axes_size(), 2);
  EXPECT_EQ(s.named_sharding().manual_axes(1).mesh_axis_index(), 1);

  s = ShardingOf("{mesh[x=2], unreduced, metadata={op_name=\"u\"}}");
  EXPECT_EQ(s.named_sharding().unreduced_axes_size(), 1);
  ASSERT_EQ(s.named_sharding().metadata_size(), 1);
  EXPECT_EQ(s.named_sharding().metadata(0).op_name(), "u");
}

TEST(NamedShardingTest, DimensionsAxesAndDeviceIds) {
  const xla::OpSharding s = ShardingOf(
      "{mesh['a'=2,'b c'=4], device_ids=(0,2,4,6,1,3,5,7), "
      "[{a}, {\"b c\":(1)2, ?}], replicated={'b c':(2)2}}");
  const xla::NamedShardingProto& n = s.named_sharding();
  EXPECT_EQ(n.mesh().axes(1).name(), "b c");
  EXPECT_THAT(n.mesh().device_ids(), ElementsAre(0, 2, 4, 6, 1, 3, 5, 7));
  ASSERT_EQ(n.dim_shardings_size(), 2);
  EXPECT_TRUE(n.dim_shardings(0).is_closed());
  EXPECT_EQ(n.dim_shardings(0).axes(0).mesh_axis_index(), 0);
  EXPECT_FALSE(n.dim_shardings(0).axes(0).has_sub_axis_info());
  EXPECT_FALSE(n.dim_shardings(1).is_closed());
  EXPECT_EQ(n.dim_shardings(1).axes(0).mesh_axis_index(), 1);
  EXPECT_EQ(n.dim_shardings(1).axes(0).sub_axis_info().pre_size(), 1);
  EXPECT_EQ(n.dim_shardings(1).axes(0).sub_axis_info().size(), 2);
  ASSERT_EQ(n.replicated_axes_size(), 1);
  EXPECT_EQ(n.replicated_axes(0).sub_axis_info().pre_size(), 2);
}

TEST(NamedShardingTest, IotaDeviceIdsAreExpanded) {
  xla::OpSharding s =
      ShardingOf("{mesh[a=2,b=2], device_ids=([2,2]T(1,0)), [{a}, {}]}");
  EXPECT_THAT(s.named_sharding().mesh().device_ids(), ElementsAre(0, 2, 1, 3));
  EXPECT_TRUE(s.named_sharding().dim_shardings(1).is_closed());
  s = ShardingOf("{mesh[a=4], device_ids=([4]), [{?}, {a}]}");
  EXPECT_EQ(s.named_sharding().mesh().device_ids_size(), 0);  // Plain iota.
  EXPECT_FALSE(s.named_sharding().dim_shardings(0).is_closed());
}

TEST(NamedShardingTest, TuplesOfNamedAndOlderForms) {
  const xla::OpSharding s = ShardingOf(
      "{{maximal_mesh[device_id=0]}, {mesh[a=2], [{a}]}, {replicated}, "
      "{devices=[2,1]0,1}}",
      "(f32[2], f32[2], f32[], f32[2,2])");
  EXPECT_EQ(s.type(), xla::OpSharding::TUPLE);
  ASSERT_EQ(s.tuple_shardings_size(), 4);
  EXPECT_TRUE(s.tuple_shardings(0).has_named_sharding());
  EXPECT_TRUE(s.tuple_shardings(1).has_named_sharding());
  EXPECT_FALSE(s.tuple_shardings(2).has_named_sharding());
  EXPECT_EQ(s.tuple_shardings(3).type(), xla::OpSharding::OTHER);
}

TEST(NamedShardingTest, Errors) {
  const std::string prefix =
      "HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0), sharding=";
  EXPECT_EQ(ParseErrorOf(prefix + "{mesh[a=2], [{b}]}\n}\n"),
            "line 3, column 56: unknown mesh axis 'b'");
  EXPECT_EQ(ParseErrorOf(prefix + "{maximal_mesh[device=0]}\n}\n"),
            "line 3, column 56: expected 'device_id', got 'device'");
  EXPECT_EQ(ParseErrorOf(prefix + "{mesh[a=2], [{a}], sharded={a}}\n}\n"),
            "line 3, column 61: expected replicated=, unreduced=, manual= or "
            "metadata=, got 'sharded'");
}

}  // namespace
}  // namespace tpu::hlo
