#include "hlo/text/hlo_parser.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hlo/text/hlo_text_util.h"
#include "hlo/text/test_util.h"

namespace tpu::hlo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Finds an instruction by name anywhere in the module; fails the test if
// absent.
const xla::HloInstructionProto& Find(const xla::HloModuleProto& module,
                                     const std::string& name) {
  for (const auto& c : module.computations()) {
    for (const auto& i : c.instructions()) {
      if (i.name() == name) return i;
    }
  }
  ADD_FAILURE() << "no instruction " << name;
  static const xla::HloInstructionProto* const kEmpty =
      new xla::HloInstructionProto();
  return *kEmpty;
}

const xla::HloComputationProto& FindComputation(
    const xla::HloModuleProto& module, const std::string& name) {
  for (const auto& c : module.computations()) {
    if (c.name() == name) return c;
  }
  ADD_FAILURE() << "no computation " << name;
  static const xla::HloComputationProto* const kEmpty =
      new xla::HloComputationProto();
  return *kEmpty;
}

xla::HloModuleProto MustParse(const std::string& text) {
  absl::StatusOr<xla::HloModuleProto> module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? *module : xla::HloModuleProto();
}

std::vector<uint16_t> Halves(const std::string& bytes) {
  std::vector<uint16_t> out;
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(bytes[i]) |
                  (static_cast<uint8_t>(bytes[i + 1]) << 8));
  }
  return out;
}

constexpr char kSimple[] = R"(
HloModule simple

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (a: f32[4], b: f32[4]) -> f32[] {
  %a = f32[4]{0} parameter(0)
  %b = f32[4] parameter(1)
  %m = f32[4]{0} multiply(%a, %b)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4]{0} %m, f32[] %zero), dimensions={0}, to_apply=%add
}
)";

TEST(HloParserTest, SimpleModuleStructure) {
  xla::HloModuleProto m = MustParse(kSimple);
  EXPECT_EQ(m.name(), "simple");
  ASSERT_EQ(m.computations_size(), 2);
  EXPECT_EQ(m.computations(0).name(), "add");  // Callees first.
  EXPECT_EQ(m.computations(1).name(), "main");
  EXPECT_EQ(m.entry_computation_name(), "main");
  EXPECT_EQ(m.entry_computation_id(), m.computations(1).id());

  // Ids are unique over computations and instructions.
  absl::flat_hash_set<int64_t> ids;
  for (const auto& c : m.computations()) {
    EXPECT_TRUE(ids.insert(c.id()).second);
    for (const auto& i : c.instructions())
      EXPECT_TRUE(ids.insert(i.id()).second);
  }
  EXPECT_EQ(ids.size(), 2u + 3 + 5);

  const auto& main = m.computations(1);
  const auto& r = Find(m, "r");
  EXPECT_EQ(main.root_id(), r.id());
  EXPECT_EQ(r.opcode(), "reduce");
  EXPECT_THAT(r.dimensions(), ElementsAre(0));
  EXPECT_THAT(r.operand_ids(),
              ElementsAre(Find(m, "m").id(), Find(m, "zero").id()));
  EXPECT_THAT(r.called_computation_ids(), ElementsAre(m.computations(0).id()));
  EXPECT_EQ(Find(m, "b").parameter_number(), 1);

  // Shapes: default layouts filled in, is_dynamic_dimension per dimension.
  const auto& b_shape = Find(m, "b").shape();
  EXPECT_EQ(b_shape.element_type(), xla::F32);
  EXPECT_THAT(b_shape.dimensions(), ElementsAre(4));
  EXPECT_THAT(b_shape.is_dynamic_dimension(), ElementsAre(false));
  EXPECT_THAT(b_shape.layout().minor_to_major(), ElementsAre(0));
  EXPECT_EQ(b_shape.layout().format(), xla::DENSE);

  // Program shapes.
  const auto& ps = main.program_shape();
  ASSERT_EQ(ps.parameters_size(), 2);
  EXPECT_THAT(ps.parameter_names(), ElementsAre("a", "b"));
  EXPECT_EQ(ps.result().element_type(), xla::F32);
  EXPECT_EQ(m.host_program_shape().parameters_size(), 2);
  EXPECT_EQ(m.host_program_shape().parameter_names_size(), 0);
  EXPECT_EQ(m.computations(0).execution_thread(), "main");
  EXPECT_FALSE(m.has_schedule());
}

TEST(HloParserTest, InstructionsStoredOperandsFirst) {
  xla::HloModuleProto m = MustParse(R"(
HloModule order
ENTRY e {
  ROOT r = f32[] add(a, b)
  b = f32[] negate(a)
  a = f32[] parameter(0)
}
)");
  const auto& c = m.computations(0);
  ASSERT_EQ(c.instructions_size(), 3);
  EXPECT_EQ(c.instructions(0).name(), "a");
  EXPECT_EQ(c.instructions(1).name(), "b");
  EXPECT_EQ(c.instructions(2).name(), "r");
  EXPECT_EQ(c.root_id(), c.instructions(2).id());
}

TEST(HloParserTest, EntryAnywhereAndNoEntryMeansLast) {
  xla::HloModuleProto with_entry = MustParse(R"(
HloModule m
ENTRY %first { ROOT %c = f32[] call(), to_apply=%second }
%second { ROOT %k = f32[] constant(2) }
)");
  EXPECT_EQ(with_entry.entry_computation_name(), "first");
  EXPECT_EQ(with_entry.computations(0).name(), "second");

  xla::HloModuleProto without = MustParse(R"(
HloModule m
a { ROOT k = f32[] constant(1) }
b { ROOT k = f32[] constant(2) }
)");
  EXPECT_EQ(without.entry_computation_name(), "b");
}

TEST(HloParserTest, CorpusGraphsage) {
  std::string text = testing::ReadTestData("graphsage_tf.hlo");
  ASSERT_FALSE(text.empty());
  xla::HloModuleProto m = MustParse(text);
  EXPECT_EQ(m.computations_size(), 5);
  EXPECT_EQ(m.computations(4).name(), m.entry_computation_name());
  EXPECT_EQ(m.host_program_shape().parameters_size(), 3);
  EXPECT_THAT(m.host_program_shape().result().dimensions(),
              ElementsAre(1, 121));
  int constants = 0, elided = 0;
  for (const auto& i : m.computations(4).instructions()) {
    if (i.opcode() != "constant") continue;
    ++constants;
    const auto& lit = i.literal();
    EXPECT_EQ(lit.shape().dimensions_size(), i.shape().dimensions_size());
    if (text_internal::ElementCount(i.shape()) > 1 &&
        i.shape().element_type() == xla::F32) {
      ++elided;
      EXPECT_EQ(lit.f32s_size(), text_internal::ElementCount(i.shape()));
    }
  }
  EXPECT_EQ(constants, 32);
  EXPECT_GE(elided, 1);
  const auto& gather = [&]() -> const xla::HloInstructionProto& {
    for (const auto& i : m.computations(4).instructions()) {
      if (i.opcode() == "gather") return i;
    }
    return m.computations(4).instructions(0);
  }();
  EXPECT_EQ(gather.opcode(), "gather");
  EXPECT_TRUE(gather.has_gather_dimension_numbers());
  EXPECT_GT(gather.gather_slice_sizes_size(), 0);
}

TEST(HloParserTest, CorpusSsdMobilenetElidedConstantsFilledDeterministically) {
  std::string text = testing::ReadTestData("ssd_mobilenet_tf.hlo");
  ASSERT_FALSE(text.empty());
  xla::HloModuleProto m = MustParse(text);
  ASSERT_EQ(m.computations_size(), 1);
  // %add.2 = bf16[1917]{0} constant({...})
  const auto& add2 = Find(m, "add.2");
  ASSERT_EQ(add2.literal().bf16s().size(), 2u * 1917);
  std::vector<uint16_t> values = Halves(add2.literal().bf16s());
  for (int i : {0, 1, 2, 16, 1916}) {
    const float expected = static_cast<float>((i * 7 + 3) % 17 - 8) / 16.0f;
    EXPECT_EQ(text_internal::Bf16ToFloat(values[i]), expected) << i;
  }
  int convolutions = 0;
  for (const auto& i : m.computations(0).instructions()) {
    if (i.opcode() != "convolution") continue;
    ++convolutions;
    EXPECT_TRUE(i.has_window());
    EXPECT_TRUE(i.has_convolution_dimension_numbers());
    EXPECT_GE(i.feature_group_count(), 1);
    EXPECT_EQ(i.precision_config().operand_precision_size(), 2);
  }
  EXPECT_EQ(convolutions, 47);
  // Parsing twice gives identical protos (deterministic fill and ids).
  EXPECT_EQ(testing::Diff(m, MustParse(text)), "");
}

TEST(HloParserTest, ShapesWithLayoutsTilesMemorySpaceAndDynamicDims) {
  auto shape = ParseShape("f32[8,<=128]{0,1:T(8,128)(2,1)E(32)S(1)}");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_THAT(shape->dimensions(), ElementsAre(8, 128));
  EXPECT_THAT(shape->is_dynamic_dimension(), ElementsAre(false, true));
  EXPECT_THAT(shape->layout().minor_to_major(), ElementsAre(0, 1));
  ASSERT_EQ(shape->layout().tiles_size(), 2);
  EXPECT_THAT(shape->layout().tiles(0).dimensions(), ElementsAre(8, 128));
  EXPECT_THAT(shape->layout().tiles(1).dimensions(), ElementsAre(2, 1));
  EXPECT_EQ(shape->layout().element_size_in_bits(), 32);
  EXPECT_EQ(shape->layout().memory_space(), 1);

  auto tuple = ParseShape("(s32[], (token[], pred[2]), opaque[])");
  ASSERT_TRUE(tuple.ok()) << tuple.status();
  EXPECT_EQ(tuple->element_type(), xla::TUPLE);
  ASSERT_EQ(tuple->tuple_shapes_size(), 3);
  EXPECT_EQ(tuple->tuple_shapes(1).tuple_shapes(0).element_type(), xla::TOKEN);
  EXPECT_FALSE(tuple->tuple_shapes(1).tuple_shapes(0).has_layout());
  EXPECT_EQ(tuple->tuple_shapes(2).element_type(), xla::OPAQUE_TYPE);
  EXPECT_THAT(tuple->tuple_shapes(1).tuple_shapes(1).layout().minor_to_major(),
              ElementsAre(0));

  auto scalar_space = ParseShape("f32[]{:S(2)}");
  ASSERT_TRUE(scalar_space.ok()) << scalar_space.status();
  EXPECT_EQ(scalar_space->layout().memory_space(), 2);
}

// Found by fuzz/hlo_text_fuzzer: a layout naming a dimension the shape does
// not have made the constant's permutation read past the dimensions.
TEST(HloParserTest, LayoutMustBeAPermutationOfTheDimensions) {
  for (const char* text : {"s16[2]{8}", "f32[2,3]{1,1}", "f32[2,3]{-1,0}"}) {
    auto shape = ParseShape(text);
    ASSERT_FALSE(shape.ok()) << text;
    EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(shape.status().message()),
                HasSubstr("is not a permutation of the dimensions 0 to "))
        << shape.status();
  }
  absl::Status status = ParseShape("s16[2]{8}").status();
  EXPECT_EQ(std::string(status.message()),
            "line 1, column 8: layout {8} is not a permutation of the "
            "dimensions 0 to 0 of a rank-1 shape");
  auto module = ParseHloModule(
      "HloModule m\nENTRY %c {\n  ROOT %s16 = s16[2]{8} "
      "constant({-32768, 32767})\n}\n");
  EXPECT_EQ(module.status().code(), absl::StatusCode::kInvalidArgument);
}

// Found by fuzz/hlo_text_fuzzer: the storage for a constant was reserved
// from its shape before any element was read, so an unbounded dimension
// (a negative count) threw std::length_error out of the parser.
TEST(HloParserTest, ConstantOfUnboundedShapeIsAnErrorNotAThrow) {
  auto module = ParseHloModule(
      "HloModule m\nENTRY %c {\n  ROOT %u4 = u4[?]{0} constant({0, 15})\n}\n");
  EXPECT_EQ(module.status(), absl::InvalidArgumentError(
                                 "line 3, column 33: expected '}', got '0'"));
}

TEST(HloParserTest, ConstantsOfEveryKind) {
  xla::HloModuleProto m = MustParse(testing::ReadTestData("constants.hlo"));
  EXPECT_THAT(Find(m, "pred").literal().preds(),
              ElementsAre(true, false, true, true));
  EXPECT_EQ(Find(m, "s8").literal().s8s(), std::string("\x80\x00\x7f", 3));
  EXPECT_EQ(Find(m, "u8").literal().u8s(), std::string("\x00\xff", 2));
  EXPECT_THAT(Halves(Find(m, "s16").literal().s16s()),
              ElementsAre(0x8000, 0x7fff));
  EXPECT_THAT(Halves(Find(m, "u16").literal().u16s()), ElementsAre(1, 0xffff));
  EXPECT_THAT(Find(m, "s32").literal().s32s(), ElementsAre(1, -2, 3, -4));
  EXPECT_THAT(Find(m, "s64").literal().s64s(),
              ElementsAre(std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max()));
  EXPECT_THAT(Find(m, "u32").literal().u32s(), ElementsAre(4294967295u));
  EXPECT_THAT(Find(m, "u64").literal().u64s(),
              ElementsAre(18446744073709551615ull));
  // f16: 1 = 0x3c00, -2.5 = 0xc100, 65504 = 0x7bff, inf = 0x7c00.
  EXPECT_THAT(Halves(Find(m, "f16").literal().f16s()),
              ElementsAre(0x3c00, 0xc100, 0x7bff, 0x7c00));
  // bf16: 1 = 0x3f80, -0.1001 rounds to 0xbdcd, 3.39e38 = 0x7f7f.
  EXPECT_THAT(Halves(Find(m, "bf16").literal().bf16s()),
              ElementsAre(0x3f80, 0xbdcd, 0x7f7f));
  const auto& f32 = Find(m, "f32").literal().f32s();
  ASSERT_EQ(f32.size(), 6);
  EXPECT_EQ(f32[0], 0.1f);
  EXPECT_EQ(f32[1], -INFINITY);
  EXPECT_EQ(f32[2], INFINITY);
  EXPECT_TRUE(std::isnan(f32[3]));
  EXPECT_TRUE(std::signbit(f32[4]));
  EXPECT_EQ(f32[5], 1e-45f);
  EXPECT_THAT(Find(m, "hex").literal().f32s(), ElementsAre(12.0f, -0.25f));
  EXPECT_THAT(Find(m, "f64").literal().f64s(), ElementsAre(0.1, 1e300));
  EXPECT_THAT(Find(m, "c64").literal().c64s(), ElementsAre(1, -1, 0.5, 2));
  EXPECT_THAT(Find(m, "c128").literal().c128s(), ElementsAre(1e-300, 2));
  EXPECT_EQ(Find(m, "s4").literal().s4s(), std::string("\xf8\x00\x07", 3));
  EXPECT_EQ(Find(m, "u4").literal().u4s(), std::string("\x00\x0f", 2));
  // f8e4m3fn: 1 = 0x38, -448 = 0xfe, 0.5 = 0x30.
  EXPECT_EQ(Find(m, "f8").literal().f8e4m3fns(),
            std::string("\x38\xfe\x30", 3));
  // f8e5m2: 1.5 = 0x3e, -57344 = 0xfb.
  EXPECT_EQ(Find(m, "f8b").literal().f8e5m2s(), std::string("\x3e\xfb", 2));
  // Layout {0,1}: stored column-major.
  EXPECT_THAT(Find(m, "col").literal().f32s(), ElementsAre(1, 4, 2, 5, 3, 6));
  const auto& tup = Find(m, "tup").literal();
  ASSERT_EQ(tup.tuple_literals_size(), 2);
  EXPECT_THAT(tup.tuple_literals(0).s32s(), ElementsAre(1));
  EXPECT_THAT(tup.tuple_literals(1).tuple_literals(0).f32s(),
              ElementsAre(2, 3));
  EXPECT_THAT(tup.tuple_literals(1).tuple_literals(1).preds(),
              ElementsAre(false));
  EXPECT_EQ(Find(m, "empty").literal().f32s_size(), 0);
  EXPECT_THAT(Find(m, "elided").literal().f32s(),
              ElementsAre(-0.3125f, 0.125f, -0.5f, -0.0625f, 0.375f, -0.25f));
  EXPECT_EQ(Find(m, "elided").literal().shape().element_type(), xla::F32);
}

TEST(HloParserTest, ElidedNarrowIntegersKeepTheLowBitsOfThePattern) {
  xla::HloModuleProto m = MustParse(
      "HloModule m\nENTRY e {\n  u = u2[5]{0} constant({...})\n"
      "  ROOT s = s4[15]{0} constant({...})\n}\n");
  // Pattern + 8 = 3, 10, 0, 7, 14: two bits each.
  EXPECT_EQ(Find(m, "u").literal().u2s(),
            std::string("\x03\x02\x00\x03\x02", 5));
  // Element 14's pattern value is 8, which s4 holds as -8.
  const std::string s4s = Find(m, "s").literal().s4s();
  ASSERT_EQ(s4s.size(), 15u);
  EXPECT_EQ(s4s[14], '\xf8');
  EXPECT_EQ(s4s[9], '\x07');
}

TEST(HloParserTest, AllOpsAttributes) {
  xla::HloModuleProto m = MustParse(testing::ReadTestData("all_ops.hlo"));
  EXPECT_EQ(m.entry_computation_name(), "main");
  // Entry is stored after all the computations it calls.
  EXPECT_EQ(m.computations(m.computations_size() - 1).name(), "main");

  const auto& neg = Find(m, "neg");
  EXPECT_EQ(neg.metadata().op_type(), "Neg");
  EXPECT_EQ(neg.metadata().source_line(), 3);
  EXPECT_EQ(neg.metadata().source_column(), 7);
  EXPECT_EQ(Find(m, "exp").frontend_attributes().map().at("color"), "red");
  EXPECT_THAT(Find(m, "sum").control_predecessor_ids(),
              ElementsAre(Find(m, "abs").id()));
  EXPECT_THAT(Find(m, "tr").shape().layout().minor_to_major(),
              ElementsAre(0, 1));

  const auto& sl = Find(m, "sl2");
  ASSERT_EQ(sl.slice_dimensions_size(), 2);
  EXPECT_EQ(sl.slice_dimensions(1).start(), 0);
  EXPECT_EQ(sl.slice_dimensions(1).limit(), 3);
  EXPECT_EQ(sl.slice_dimensions(1).stride(), 2);
  EXPECT_EQ(sl.slice_dimensions(0).stride(), 1);
  EXPECT_THAT(Find(m, "iota").dimensions(), ElementsAre(0));

  EXPECT_EQ(Find(m, "cmp").comparison_direction(), "LT");
  EXPECT_EQ(Find(m, "cmp").comparison_type(), "SIGNED");
  EXPECT_EQ(Find(m, "cmpf").comparison_type(), "TOTALORDER");
  EXPECT_EQ(Find(m, "lt").comparison_type(), "FLOAT");

  const auto& pad = Find(m, "pad").padding_config();
  ASSERT_EQ(pad.dimensions_size(), 2);
  EXPECT_EQ(pad.dimensions(1).edge_padding_low(), 2);
  EXPECT_EQ(pad.dimensions(1).interior_padding(), 1);
  EXPECT_THAT(Find(m, "ds").dynamic_slice_sizes(), ElementsAre(1, 2));

  const auto& dot = Find(m, "dot");
  EXPECT_THAT(dot.dot_dimension_numbers().lhs_contracting_dimensions(),
              ElementsAre(1));
  EXPECT_THAT(
      dot.precision_config().operand_precision(),
      ElementsAre(xla::PrecisionConfig::HIGH, xla::PrecisionConfig::HIGHEST));
  EXPECT_THAT(Find(m, "bdot").dot_dimension_numbers().rhs_batch_dimensions(),
              ElementsAre(0));

  const auto& conv2 = Find(m, "conv2");
  ASSERT_EQ(conv2.window().dimensions_size(), 2);
  EXPECT_EQ(conv2.window().dimensions(0).size(), 3);
  EXPECT_EQ(conv2.window().dimensions(0).stride(), 2);
  EXPECT_EQ(conv2.window().dimensions(0).padding_high(), 1);
  EXPECT_EQ(conv2.window().dimensions(0).window_dilation(), 1);
  EXPECT_FALSE(conv2.window().dimensions(0).window_reversal());
  EXPECT_TRUE(conv2.window().dimensions(1).window_reversal());
  const auto& dn = conv2.convolution_dimension_numbers();
  EXPECT_EQ(dn.input_batch_dimension(), 0);
  EXPECT_EQ(dn.input_feature_dimension(), 3);
  EXPECT_THAT(dn.input_spatial_dimensions(), ElementsAre(1, 2));
  EXPECT_EQ(dn.kernel_input_feature_dimension(), 2);
  EXPECT_EQ(dn.kernel_output_feature_dimension(), 3);
  EXPECT_THAT(dn.kernel_spatial_dimensions(), ElementsAre(0, 1));
  EXPECT_EQ(conv2.feature_group_count(), 1);
  EXPECT_EQ(conv2.batch_group_count(), 1);

  const auto& gather = Find(m, "gather");
  EXPECT_THAT(gather.gather_dimension_numbers().offset_dims(), ElementsAre(1));
  EXPECT_EQ(gather.gather_dimension_numbers().index_vector_dim(), 1);
  EXPECT_THAT(gather.gather_slice_sizes(), ElementsAre(1, 3));
  EXPECT_TRUE(gather.indices_are_sorted());
  const auto& scatter = Find(m, "scatter");
  EXPECT_THAT(
      scatter.scatter_dimension_numbers().scatter_dims_to_operand_dims(),
      ElementsAre(0));
  EXPECT_EQ(scatter.scatter_dimension_numbers().index_vector_dim(), 1);
  EXPECT_TRUE(scatter.unique_indices());
  EXPECT_TRUE(Find(m, "sort").is_stable());
  EXPECT_EQ(Find(m, "gte").tuple_index(), 0);

  // while = {body, condition}; conditional = {true, false}.
  const auto& w = Find(m, "w");
  EXPECT_THAT(w.called_computation_ids(),
              ElementsAre(FindComputation(m, "body").id(),
                          FindComputation(m, "cond").id()));
  EXPECT_EQ(w.backend_config(), R"({"known_trip_count":{"n":"5"}})");
  EXPECT_THAT(Find(m, "cnd").called_computation_ids(),
              ElementsAre(FindComputation(m, "branch_a").id(),
                          FindComputation(m, "branch_b").id()));
  EXPECT_EQ(Find(m, "cnd2").called_computation_ids_size(), 3);
  EXPECT_EQ(Find(m, "fusion").fusion_kind(), "kLoop");
  EXPECT_TRUE(FindComputation(m, "fused").is_fusion_computation());
  EXPECT_FALSE(FindComputation(m, "add23").is_fusion_computation());

  const auto& cc = Find(m, "cc");
  EXPECT_EQ(cc.custom_call_target(), "my_target");
  EXPECT_EQ(cc.backend_config(), "opaque \"data\"");
  EXPECT_TRUE(cc.custom_call_has_side_effect());
  EXPECT_EQ(cc.custom_call_api_version(), xla::API_VERSION_STATUS_RETURNING);
  EXPECT_EQ(cc.custom_call_schedule(), xla::SCHEDULE_LATEST);
  EXPECT_TRUE(cc.constrain_layout());
  ASSERT_EQ(cc.operand_shapes_with_layout_size(), 1);
  EXPECT_THAT(cc.operand_shapes_with_layout(0).layout().minor_to_major(),
              ElementsAre(0, 1));
  ASSERT_EQ(cc.output_operand_aliasing_size(), 1);
  EXPECT_THAT(cc.output_operand_aliasing(0).output_shape_index(),
              ElementsAre(0));

  EXPECT_EQ(Find(m, "rng").distribution(), xla::RNG_UNIFORM);
  EXPECT_EQ(Find(m, "rbg").rng_algorithm(), xla::RNG_THREE_FRY);
  EXPECT_EQ(Find(m, "rgs").delta(), 4);
  EXPECT_EQ(Find(m, "fft").fft_type(), xla::FFT);
  EXPECT_THAT(Find(m, "fft").fft_length(), ElementsAre(8));
  EXPECT_TRUE(Find(m, "chol").cholesky_options().lower());
  const auto& ts = Find(m, "ts").triangular_solve_options();
  EXPECT_TRUE(ts.left_side());
  EXPECT_TRUE(ts.unit_diagonal());
  EXPECT_EQ(ts.transpose_a(), xla::TriangularSolveOptions::NO_TRANSPOSE);
  EXPECT_FLOAT_EQ(Find(m, "bnt").epsilon(), 0.001f);
  EXPECT_EQ(Find(m, "bnt").feature_index(), 3);
  EXPECT_EQ(Find(m, "inf").infeed_config(), "cfg");
  EXPECT_EQ(Find(m, "outf").outfeed_config(), "out");
  EXPECT_THAT(Find(m, "outf").outfeed_shape().dimensions(), ElementsAre(2, 3));
  EXPECT_EQ(Find(m, "send").channel_id(), 5);
  EXPECT_TRUE(Find(m, "send").is_host_transfer());

  const auto& ar = Find(m, "ar");
  ASSERT_EQ(ar.replica_groups_size(), 2);
  EXPECT_THAT(ar.replica_groups(1).replica_ids(), ElementsAre(2, 3));
  EXPECT_TRUE(ar.use_global_device_ids());
  EXPECT_EQ(ar.channel_id(), 7);
  // [2,4]<=[4,2]T(1,0): iota(8) as 4x2, transposed to 2x4 ->
  // {0,2,4,6},{1,3,5,7}.
  const auto& ar2 = Find(m, "ar2");
  ASSERT_EQ(ar2.replica_groups_size(), 2);
  EXPECT_THAT(ar2.replica_groups(0).replica_ids(), ElementsAre(0, 2, 4, 6));
  EXPECT_THAT(ar2.replica_groups(1).replica_ids(), ElementsAre(1, 3, 5, 7));
  EXPECT_THAT(Find(m, "ag").replica_groups(0).replica_ids(), ElementsAre(0, 1));
  EXPECT_THAT(Find(m, "ag").dimensions(), ElementsAre(0));
  EXPECT_EQ(Find(m, "rsc").replica_groups_size(), 0);
  const auto& cp = Find(m, "cp");
  ASSERT_EQ(cp.source_target_pairs_size(), 3);
  EXPECT_EQ(cp.source_target_pairs(2).source(), 2);
  EXPECT_EQ(cp.source_target_pairs(2).target(), 0);

  EXPECT_EQ(Find(m, "p0").sharding().type(), xla::OpSharding::REPLICATED);
  const auto& sh = Find(m, "sh").sharding();
  EXPECT_EQ(sh.type(), xla::OpSharding::OTHER);
  EXPECT_THAT(sh.tile_assignment_dimensions(), ElementsAre(2, 1));
  EXPECT_THAT(sh.tile_assignment_devices(), ElementsAre(0, 1));
  const auto& sh2 = Find(m, "sh2").sharding();
  EXPECT_THAT(sh2.iota_reshape_dims(), ElementsAre(4));
  EXPECT_TRUE(sh2.replicate_on_last_tile_dim());
  const auto& sh3 = Find(m, "sh3").sharding();
  ASSERT_EQ(sh3.tuple_shardings_size(), 2);
  EXPECT_EQ(sh3.tuple_shardings(0).type(), xla::OpSharding::MAXIMAL);
  EXPECT_THAT(sh3.tuple_shardings(0).tile_assignment_devices(), ElementsAre(1));
  EXPECT_THAT(sh3.tuple_shardings(1).iota_transpose_perm(), ElementsAre(1, 0));
  EXPECT_THAT(sh3.tuple_shardings(1).last_tile_dims(),
              ElementsAre(xla::OpSharding::MANUAL));
  EXPECT_EQ(Find(m, "dom").domain_entry_sharding().type(),
            xla::OpSharding::MAXIMAL);
  EXPECT_EQ(Find(m, "dom").domain_exit_sharding().type(),
            xla::OpSharding::REPLICATED);
  EXPECT_EQ(Find(m, "cs").cross_program_prefetch_index(), 0);
  EXPECT_EQ(Find(m, "cs").optional_cross_program_prefetch_index_case(),
            xla::HloInstructionProto::kCrossProgramPrefetchIndex);
  EXPECT_EQ(Find(m, "topk").k(), 2);
  EXPECT_TRUE(Find(m, "topk").largest());
  EXPECT_EQ(Find(m, "ast").async_execution_thread(), "thread1");
  EXPECT_EQ(FindComputation(m, "async_comp").execution_thread(), "thread1");
  const auto& stats = Find(m, "stats").statistics_viz();
  EXPECT_EQ(stats.stat_index_to_visualize(), 1);
  ASSERT_EQ(stats.statistics_size(), 2);
  EXPECT_EQ(stats.statistics(1).stat_name(), "stat-2");
  EXPECT_EQ(stats.statistics(1).stat_val(), 44);
  EXPECT_EQ(Find(m, "cc").custom_call_api_version(),
            xla::API_VERSION_STATUS_RETURNING);
  EXPECT_EQ(Find(m, "state").literal().u64s(1), 18446744073709551615ull);
}

TEST(HloParserTest, ScheduledModuleHeader) {
  xla::HloModuleProto m = MustParse(testing::ReadTestData("scheduled.hlo"));
  const auto& host = m.host_program_shape();
  ASSERT_EQ(host.parameters_size(), 2);
  ASSERT_EQ(host.parameters(0).layout().tiles_size(), 1);
  EXPECT_THAT(host.parameters(0).layout().tiles(0).dimensions(),
              ElementsAre(128));
  ASSERT_EQ(m.input_output_alias().entries_size(), 2);
  EXPECT_EQ(m.input_output_alias().entries(0).kind(), xla::MAY_ALIAS);
  EXPECT_EQ(m.input_output_alias().entries(1).kind(), xla::MUST_ALIAS);
  EXPECT_EQ(m.input_output_alias().entries(1).parameter_number(), 1);
  EXPECT_THAT(m.input_output_alias().entries(1).output_shape_index(),
              ElementsAre(1));
  ASSERT_EQ(m.buffer_donor().entries_size(), 1);
  EXPECT_EQ(m.buffer_donor().entries(0).parameter_number(), 1);
  EXPECT_EQ(m.frontend_attributes().map().at("xla.sdy.meshes"),
            "{mesh = #sdy.mesh<[\"x\"=2]>}");
  // Schedule: text order of every computation.
  ASSERT_TRUE(m.has_schedule());
  EXPECT_EQ(m.schedule().sequences_size(), 2);
  const auto& entry = FindComputation(m, "main.5");
  const auto& seq = m.schedule().sequences().at(entry.id());
  ASSERT_EQ(seq.instruction_ids_size(), 7);
  EXPECT_EQ(seq.instruction_ids(0), Find(m, "p0").id());
  EXPECT_EQ(seq.instruction_ids(6), Find(m, "t").id());
}

TEST(HloParserTest, UnknownAttributesAreSkipped) {
  xla::HloModuleProto m = MustParse(R"(
HloModule m, new_module_attr={x=[1,2], y="}"}, other=3
ENTRY e {
  p = f32[2] parameter(0), some_new_attr={{1,2},(3)}, origin={{"a"}}
  ROOT n = f32[2] negate(p), future=[2,4]<=[8]T(0), metadata={op_name="n" new_key=5}
}
)");
  EXPECT_EQ(Find(m, "n").metadata().op_name(), "n");
  EXPECT_THAT(Find(m, "n").operand_ids(), ElementsAre(Find(m, "p").id()));
}

TEST(HloParserTest, ShardingMetadataAndShardGroups) {
  xla::HloModuleProto m = MustParse(R"(
HloModule m
ENTRY e {
  p = f32[4,4] parameter(0), sharding={devices=[2,2]0,1,2,3 metadata={op_name="a"}}
  q = f32[4,4] copy(p), sharding={replicated shard_as 3}
  ROOT r = f32[4,4] copy(q), sharding={manual metadata={{op_name="x"}, {op_name="y"}}}
}
)");
  EXPECT_EQ(Find(m, "p").sharding().metadata(0).op_name(), "a");
  EXPECT_TRUE(Find(m, "q").sharding().is_shard_group());
  EXPECT_EQ(Find(m, "q").sharding().shard_group_id(), 3);
  EXPECT_EQ(Find(m, "q").sharding().shard_group_type(), xla::OpSharding::AS);
  EXPECT_EQ(Find(m, "r").sharding().type(), xla::OpSharding::MANUAL);
  EXPECT_EQ(Find(m, "r").sharding().metadata_size(), 2);
}

TEST(HloParserTest, OperandIndexCommentsAndOldStyleConstants) {
  xla::HloModuleProto m = MustParse(R"(
HloModule m
ENTRY e {
  a = s32[] constant(1)
  c = s32[2] constant(s32[2] {5, 6})
  ROOT t = (s32[], s32[], s32[], s32[], s32[], s32[]) tuple(a, a, a, a, a, /*index=5*/a)
}
)");
  EXPECT_EQ(Find(m, "t").operand_ids_size(), 6);
  EXPECT_THAT(Find(m, "c").literal().s32s(), ElementsAre(5, 6));
}

// --- Errors: exact line and column -----------------------------------------

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<xla::HloModuleProto> m = ParseHloModule(text);
  EXPECT_FALSE(m.ok());
  if (m.ok()) return "";
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(m.status().message());
}

TEST(HloParserErrorTest, MissingHeader) {
  EXPECT_EQ(ErrorOf("ENTRY e { ROOT c = f32[] constant(0) }"),
            "line 1, column 1: expected 'HloModule', got 'ENTRY'");
}

TEST(HloParserErrorTest, BadShape) {
  EXPECT_EQ(
      ErrorOf("HloModule m\nENTRY e {\n  ROOT c = f33[] constant(0)\n}\n"),
      "line 3, column 12: expected shape, got 'f33'");
}

TEST(HloParserErrorTest, MissingCloseParen) {
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n"
                    "  ROOT n = f32[] negate(p\n}\n"),
            "line 5, column 1: expected ',' or ')', got '}'");
}

TEST(HloParserErrorTest, UnknownOperand) {
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT n = f32[] negate(%q)\n}\n"),
            "line 3, column 25: unknown operand 'q'");
}

TEST(HloParserErrorTest, UnknownComputation) {
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT c = f32[] call(), "
                    "to_apply=%nope\n}\n"),
            "line 3, column 35: unknown computation 'nope'");
}

TEST(HloParserErrorTest, UnknownOpcode) {
  EXPECT_EQ(
      ErrorOf("HloModule m\nENTRY e {\n  ROOT c = f32[] frobnicate()\n}\n"),
      "line 3, column 18: unknown opcode 'frobnicate'");
}

TEST(HloParserErrorTest, BadLiteral) {
  EXPECT_EQ(
      ErrorOf(
          "HloModule m\nENTRY e {\n  ROOT c = f32[3] constant({1, 2})\n}\n"),
      "line 3, column 33: expected ',', got '}'");
  EXPECT_EQ(
      ErrorOf("HloModule m\nENTRY e {\n  ROOT c = s8[] constant(300)\n}\n"),
      "line 3, column 26: value 300 out of range for s8");
}

TEST(HloParserErrorTest, BadAttributes) {
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  p = s32[] parameter(0)\n"
                    "  ROOT c = pred[] compare(p, p), direction=XX\n}\n"),
            "line 4, column 44: expected comparison direction (EQ, NE, GE, GT, "
            "LE, LT), got 'XX'");
  EXPECT_EQ(
      ErrorOf(
          "HloModule m\nENTRY e {\n  p = f32[8] parameter(0)\n"
          "  ROOT c = f32[8] all-reduce(p), replica_groups=[3,3]<=[8]\n}\n"),
      "line 4, column 49: iota replica groups [3,3] do not cover 8 devices");
}

TEST(HloParserErrorTest, DuplicatesAndCycles) {
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n"
                    "  a = f32[] negate(a)\n}\n"),
            "line 4, column 3: duplicate instruction name 'a'");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  a = f32[] negate(b)\n"
                    "  ROOT b = f32[] negate(a)\n}\n"),
            "line 4, column 25: cycle through instruction 'a'");
  EXPECT_EQ(
      ErrorOf("HloModule m\nf {\n  ROOT c = f32[] call(), to_apply=f\n}\n"),
      "line 3, column 35: computation 'f' calls itself (cycle)");
}

TEST(HloParserErrorTest, DeclaredOperandShapeMismatch) {
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                    "  ROOT n = f32[2] negate(f32[3] p)\n}\n"),
            "line 4, column 26: operand 'p' is declared with a shape that "
            "differs from its definition");
}

TEST(HloParserErrorTest, UnterminatedStringAndEndOfInput) {
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT c = f32[] custom-call(), "
                    "custom_call_target=\"abc\n}\n"),
            "line 3, column 52: unterminated string");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT c = f32[] constant(1)\n"),
            "line 4, column 1: expected instruction or '}', got end of input");
}

}  // namespace
}  // namespace tpu::hlo
