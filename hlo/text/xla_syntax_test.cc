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

// --- Instructions written inline as operands --------------------------------

TEST(NestedInstructionTest, NamedAnonAndPlacedBeforeTheirUser) {
  const xla::HloModuleProto m = MustParse(R"(HloModule m
ENTRY e {
  r = f32[8,7] reshape(f32[1,8,1,7] parameter(0))
  ROOT a = f32[8,7] add(r, f32[8,7] reshape(f32[56] parameter(1)))
}
)");
  const xla::HloComputationProto& e = m.computations(0);
  ASSERT_EQ(e.instructions_size(), 5);
  EXPECT_EQ(Find(m, "parameter.anon").parameter_number(), 0);
  EXPECT_EQ(Find(m, "parameter.anon.1").parameter_number(), 1);
  EXPECT_THAT(Find(m, "r").operand_ids(),
              ElementsAre(Find(m, "parameter.anon").id()));
  EXPECT_THAT(Find(m, "a").operand_ids(),
              ElementsAre(Find(m, "r").id(), Find(m, "reshape.anon").id()));
  EXPECT_EQ(e.root_id(), Find(m, "a").id());
  EXPECT_EQ(e.program_shape().parameters_size(), 2);
}

TEST(NestedInstructionTest, LastInstructionStaysTheRoot) {
  const std::string text = R"(HloModule m
body {
  p = s32[] parameter(0)
  a = s32[] add(p, s32[] constant(1))
}
ENTRY e {
  ROOT w = s32[] while(s32[] constant(0)), condition=c, body=body
}
c {
  x = s32[] parameter(0)
  ROOT lt = pred[] compare(x, s32[] constant(5)), direction=LT
}
)";
  const xla::HloModuleProto m = MustParse(text);
  for (const auto& c : m.computations()) {
    if (c.name() == "body") {
      EXPECT_EQ(c.root_id(), Find(m, "a").id());
    }
  }
  EXPECT_EQ(Find(m, "constant.anon").literal().s32s(0), 1);
  EXPECT_EQ(testing::RoundTripProblem(text), "");
}

TEST(NestedInstructionTest, Errors) {
  EXPECT_EQ(ParseErrorOf("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n"
                         "  ROOT a = f32[] add(p, f32[] frob(p))\n}\n"),
            "line 4, column 31: unknown opcode 'frob'");
}

// --- Shape inference --------------------------------------------------------

TEST(ShapeInferenceTest, ElementwiseStructuralAndReductions) {
  const std::string text = R"(HloModule m
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = add(x, y)
}
ENTRY e {
  p = f32[2,3]{0,1} parameter(0)
  q = s32[4,2] parameter(1)
  n = negate(p)
  c = compare(p, n), direction=LT
  t = tuple(p, q)
  g = get-tuple-element(t), index=1
  d = dot(p, p), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  r = reduce(p, z), dimensions={1}, to_apply=sum
  tr = transpose(q), dimensions={1,0}
  pd = pad(q, s32[] constant(0)), padding=1_2_1x0_0
  cc = concatenate(q, q), dimensions={0}
  b = broadcast(z), dimensions={}
  cx = complex(p, p)
  ROOT k = call(p, p), to_apply=pair
}
pair {
  u = f32[2,3] parameter(0)
  v = f32[2,3] parameter(1)
  ROOT w = (f32[2,3], f32[2,3]) tuple(u, v)
}
)";
  const xla::HloModuleProto m = MustParse(text);
  auto shape = [&](const std::string& name) {
    return PrintShape(Find(m, name).shape());
  };
  EXPECT_EQ(shape("s"), "f32[]");
  EXPECT_EQ(shape("n"), "f32[2,3]{0,1}");  // Elementwise keeps the layout.
  EXPECT_EQ(shape("c"), "pred[2,3]{0,1}");
  EXPECT_EQ(Find(m, "c").comparison_type(), "FLOAT");
  EXPECT_EQ(shape("t"), "(f32[2,3]{0,1}, s32[4,2]{1,0})");
  EXPECT_EQ(shape("g"), "s32[4,2]{1,0}");
  EXPECT_EQ(shape("d"), "f32[3,3]{1,0}");
  EXPECT_EQ(shape("r"), "f32[2]{0}");
  EXPECT_EQ(shape("tr"), "s32[2,4]{1,0}");
  EXPECT_EQ(shape("pd"), "s32[10,2]{1,0}");
  EXPECT_EQ(shape("cc"), "s32[8,2]{1,0}");
  EXPECT_EQ(shape("b"), "f32[]");  // XLA reads dimensions as new sizes.
  EXPECT_EQ(shape("cx"), "c64[2,3]{0,1}");
  EXPECT_EQ(shape("k"), "(f32[2,3]{1,0}, f32[2,3]{1,0})");
  EXPECT_EQ(testing::RoundTripProblem(text), "");
}

TEST(ShapeInferenceTest, ConvolutionAndGather) {
  const xla::HloModuleProto m = MustParse(R"(HloModule m
ENTRY main {
  p0 = f32[16,3,3,64] parameter(0)
  p1 = f32[16,2,3,64] parameter(1)
  conv = convolution(p0, p1), window={size=2x3 pad=1_1x0_0 lhs_dilate=1x3 rhs_dilate=1x2}, dim_labels=f01b_i01o->01fb, batch_group_count=64
  o = f32[3,4] parameter(2)
  i = s32[5,1] parameter(3)
  ROOT g = gather(o, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
}
)");
  EXPECT_EQ(PrintShape(Find(m, "conv").shape()), "f32[4,3,64,1]{3,2,1,0}");
  EXPECT_EQ(PrintShape(Find(m, "g").shape()), "f32[5,4]{1,0}");
}

TEST(ShapeInferenceTest, Errors) {
  EXPECT_EQ(ParseErrorOf("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                         "  ROOT r = reshape(p)\n}\n"),
            "line 4, column 12: expected shape, got 'reshape'");
  EXPECT_EQ(ParseErrorOf("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                         "  q = f32[3] parameter(1)\n"
                         "  ROOT r = add(p, q)\n}\n"),
            "line 5, column 8: cannot infer the shape of 'r': operands "
            "f32[2]{0} and f32[3]{0} have different dimensions");
  EXPECT_EQ(ParseErrorOf("HloModule m\nENTRY e {\n  p = (f32[2]) parameter(0)\n"
                         "  ROOT r = get-tuple-element(p), index=3\n}\n"),
            "line 4, column 8: cannot infer the shape of 'r': no element 3 "
            "in (f32[2]{0})");
}

// --- Async shorthand --------------------------------------------------------

constexpr char kAsyncShorthand[] = R"(HloModule test
ENTRY AsyncOps {
  init = f32[] constant(42.0)
  async-start = ((f32[]), f32[], u32[]) negate-start(init), metadata={op_name="n"}, sharding={replicated}
  async-update = ((f32[]), f32[], u32[]) negate-update(async-start)
  ROOT async-done = f32[] negate-done(async-update)
}
)";

TEST(AsyncShorthandTest, BecomesAsyncOpsCallingAWrappedComputation) {
  const xla::HloModuleProto m = MustParse(kAsyncShorthand);
  ASSERT_EQ(m.computations_size(), 2);
  const xla::HloComputationProto& wrapped = m.computations(0);
  EXPECT_EQ(wrapped.name(), "async_wrapped");
  EXPECT_EQ(wrapped.execution_thread(), "main");
  ASSERT_EQ(wrapped.instructions_size(), 2);
  const xla::HloInstructionProto& param = wrapped.instructions(0);
  EXPECT_EQ(param.name(), "async_param");
  EXPECT_EQ(param.opcode(), "parameter");
  EXPECT_EQ(PrintShape(param.shape()), "f32[]");
  const xla::HloInstructionProto& op = wrapped.instructions(1);
  EXPECT_EQ(op.name(), "async_op");
  EXPECT_EQ(op.opcode(), "negate");
  EXPECT_THAT(op.operand_ids(), ElementsAre(param.id()));
  EXPECT_EQ(op.metadata().op_name(), "n");
  EXPECT_FALSE(op.has_sharding());
  EXPECT_EQ(wrapped.root_id(), op.id());
  EXPECT_EQ(PrintShape(wrapped.program_shape().result()), "f32[]");

  for (const char* name : {"async-start", "async-update", "async-done"}) {
    const xla::HloInstructionProto& i = Find(m, name);
    EXPECT_EQ(i.opcode(), name);
    EXPECT_THAT(i.called_computation_ids(), ElementsAre(wrapped.id())) << name;
  }
  const xla::HloInstructionProto& start = Find(m, "async-start");
  EXPECT_THAT(start.operand_ids(), ElementsAre(Find(m, "init").id()));
  EXPECT_EQ(start.metadata().op_name(), "n");
  EXPECT_EQ(start.sharding().type(), xla::OpSharding::REPLICATED);
  EXPECT_TRUE(start.has_sharding());
  EXPECT_EQ(start.async_execution_thread(), "");
  EXPECT_THAT(PrintHloModule(m),
              HasSubstr("%async-start = ((f32[]), f32[], u32[]) "
                        "async-start(f32[] %init), calls=%async_wrapped"));
  EXPECT_EQ(testing::RoundTripProblem(kAsyncShorthand), "");
}

TEST(AsyncShorthandTest, WrappedOpKeepsItsAttributesAndNamesStayUnique) {
  const xla::HloModuleProto m = MustParse(R"(HloModule m
async_wrapped {
  ROOT c = f32[] constant(0)
}
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[3,2] parameter(1)
  s = ((f32[2,3], f32[3,2]), f32[2,2], u32[]) dot-start(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT d = f32[2,2] dot-done(s)
}
)");
  const xla::HloInstructionProto& op = Find(m, "async_op");
  EXPECT_EQ(op.opcode(), "dot");
  EXPECT_THAT(op.dot_dimension_numbers().lhs_contracting_dimensions(),
              ElementsAre(1));
  EXPECT_EQ(op.precision_config().operand_precision_size(), 2);
  EXPECT_FALSE(Find(m, "s").has_dot_dimension_numbers());
  EXPECT_EQ(Find(m, "async_param.1").parameter_number(), 1);
  EXPECT_EQ(PrintShape(Find(m, "async_param.1").shape()), "f32[3,2]{1,0}");
  bool renamed = false;
  for (const auto& c : m.computations())
    renamed |= c.name() == "async_wrapped.1";
  EXPECT_TRUE(renamed);
}

TEST(AsyncShorthandTest, Errors) {
  EXPECT_EQ(ParseErrorOf("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n"
                         "  ROOT d = f32[] negate-done(x)\n}\n"),
            "line 4, column 30: expected an earlier negate-start or "
            "negate-update, got 'x'");
  EXPECT_EQ(ParseErrorOf("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n"
                         "  ROOT s = f32[] negate-start(x)\n}\n"),
            "line 4, column 18: an async start needs the shape ((operands), "
            "outputs, state)");
  EXPECT_EQ(ParseErrorOf("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n"
                         "  ROOT s = negate-start(x)\n}\n"),
            "line 4, column 12: expected shape, got 'negate-start'");
}

}  // namespace
}  // namespace tpu::hlo
