// Phase-1 operations end to end through Executable::Compile/Execute:
// parameter, constant, tuple, get-tuple-element, arithmetic, compare, select,
// convert, broadcast, reshape, transpose, dot, reduce.

#include "emulator/interpreter/executable.h"

#include <cmath>

#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

using testing::ComputationBuilder;
using testing::HloModuleBuilder;
using testing::RunModule;
using testing::S;
using testing::Scalar;
using testing::Values;
using testing::Vec;

// Runs entry = opcode(p0, p1) on two arrays.
Literal RunBinary(const std::string& opcode, const Literal& a,
                  const Literal& b) {
  HloModuleBuilder m(opcode);
  ComputationBuilder& e = m.Entry();
  int64_t x = e.Param(a.shape());
  int64_t y = e.Param(b.shape());
  e.Binary(opcode, x, y);
  absl::StatusOr<Literal> out = RunModule(m.Build(), {a, b});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : Literal();
}

Literal RunUnary(const std::string& opcode, const Literal& a) {
  HloModuleBuilder m(opcode);
  ComputationBuilder& e = m.Entry();
  e.Unary(opcode, e.Param(a.shape()));
  absl::StatusOr<Literal> out = RunModule(m.Build(), {a});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : Literal();
}

TEST(ExecutableTest, F32Arithmetic) {
  Literal a = Vec<float>(xla::F32, {4}, {1, -2, 3.5f, 0});
  Literal b = Vec<float>(xla::F32, {4}, {2, 4, -0.5f, 8});
  EXPECT_EQ(Values<float>(RunBinary("add", a, b)),
            (std::vector<float>{3, 2, 3, 8}));
  EXPECT_EQ(Values<float>(RunBinary("subtract", a, b)),
            (std::vector<float>{-1, -6, 4, -8}));
  EXPECT_EQ(Values<float>(RunBinary("multiply", a, b)),
            (std::vector<float>{2, -8, -1.75f, 0}));
  EXPECT_EQ(Values<float>(RunBinary("divide", a, b)),
            (std::vector<float>{0.5f, -0.5f, -7, 0}));
  EXPECT_EQ(Values<float>(RunBinary("maximum", a, b)),
            (std::vector<float>{2, 4, 3.5f, 8}));
  EXPECT_EQ(Values<float>(RunBinary("minimum", a, b)),
            (std::vector<float>{1, -2, -0.5f, 0}));
  EXPECT_EQ(Values<float>(RunUnary("negate", a)),
            (std::vector<float>{-1, 2, -3.5f, -0.0f}));
  EXPECT_EQ(Values<float>(RunUnary("abs", a)),
            (std::vector<float>{1, 2, 3.5f, 0}));
}

TEST(ExecutableTest, MaxMinPropagateNaN) {
  const float nan = std::nanf("");
  Literal a = Vec<float>(xla::F32, {3}, {nan, 1, nan});
  Literal b = Vec<float>(xla::F32, {3}, {1, nan, nan});
  for (const char* op : {"maximum", "minimum"}) {
    for (float v : Values<float>(RunBinary(op, a, b))) {
      EXPECT_TRUE(std::isnan(v)) << op;
    }
  }
}

TEST(ExecutableTest, Transcendentals) {
  Literal a = Vec<float>(xla::F32, {3}, {0, 1, -2});
  std::vector<float> e = Values<float>(RunUnary("exponential", a));
  std::vector<float> t = Values<float>(RunUnary("tanh", a));
  for (int i = 0; i < 3; ++i) {
    const float x = a.data<float>()[i];
    EXPECT_NEAR(e[i], std::exp(x), 1e-6 * std::exp(x));
    EXPECT_NEAR(t[i], std::tanh(x), 1e-6);
  }
  std::vector<float> l =
      Values<float>(RunUnary("log", Vec<float>(xla::F32, {3}, {1, 2, 0})));
  EXPECT_EQ(l[0], 0.0f);
  EXPECT_NEAR(l[1], std::log(2.0f), 1e-7);
  EXPECT_TRUE(std::isinf(l[2]) && l[2] < 0);
}

TEST(ExecutableTest, S32EdgeCases) {
  const int32_t min = std::numeric_limits<int32_t>::min();
  Literal a = Vec<int32_t>(xla::S32, {5}, {7, -7, 7, min, 5});
  Literal b = Vec<int32_t>(xla::S32, {5}, {2, 2, 0, -1, -3});
  // Truncating division; x/0 = -1; INT_MIN/-1 = INT_MIN.
  EXPECT_EQ(Values<int32_t>(RunBinary("divide", a, b)),
            (std::vector<int32_t>{3, -3, -1, min, -1}));
  // Remainder takes the dividend's sign; x%0 = x; INT_MIN % -1 = 0.
  EXPECT_EQ(Values<int32_t>(RunBinary("remainder", a, b)),
            (std::vector<int32_t>{1, -1, 7, 0, 2}));
  // Wrapping overflow.
  EXPECT_EQ(Values<int32_t>(RunBinary("add", a, a))[3], 0);
  EXPECT_EQ(Values<int32_t>(RunUnary("negate", a))[3], min);
  EXPECT_EQ(Values<int32_t>(RunUnary("abs", a)),
            (std::vector<int32_t>{7, 7, 7, min, 5}));
  EXPECT_EQ(Values<int32_t>(RunBinary("maximum", a, b)),
            (std::vector<int32_t>{7, 2, 7, -1, 5}));
}

TEST(ExecutableTest, Bf16ArithmeticRoundsOnce) {
  using bf16 = Eigen::bfloat16;
  Literal a = Vec<bf16>(xla::BF16, {2}, {bf16(1.0f), bf16(256.0f)});
  Literal b = Vec<bf16>(xla::BF16, {2}, {bf16(0.00390625f), bf16(1.0f)});
  // 1 + 2^-8 needs 9 mantissa bits: rounds to even (1.0); 256 + 1 = 257
  // rounds to 256 (bf16 has 8 significant bits).
  EXPECT_EQ(testing::FloatValues(RunBinary("add", a, b)),
            (std::vector<float>{1.0f, 256.0f}));
  EXPECT_EQ(testing::FloatValues(RunBinary("multiply", a, a)),
            (std::vector<float>{1.0f, 65536.0f}));
}

TEST(ExecutableTest, CompareAndSelect) {
  const float nan = std::nanf("");
  HloModuleBuilder m("cmp");
  ComputationBuilder& e = m.Entry();
  int64_t x = e.Param(S(xla::F32, {4}));
  int64_t y = e.Param(S(xla::F32, {4}));
  int64_t lt = e.Compare("LT", x, y);
  int64_t ne = e.Compare("NE", x, y);
  int64_t sel = e.Op("select", S(xla::F32, {4}), {lt, x, y});
  e.Tuple({lt, ne, sel});
  absl::StatusOr<Literal> out =
      RunModule(m.Build(), {Vec<float>(xla::F32, {4}, {1, 5, nan, 2}),
                            Vec<float>(xla::F32, {4}, {2, 3, 1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<bool>(out->element(0)),
            (std::vector<bool>{true, false, false, false}));
  // NaN != anything is true.
  EXPECT_EQ(Values<bool>(out->element(1)),
            (std::vector<bool>{true, true, true, false}));
  std::vector<float> s = Values<float>(out->element(2));
  EXPECT_EQ(s[0], 1);
  EXPECT_EQ(s[1], 3);
  EXPECT_EQ(s[2], 1);
  EXPECT_EQ(s[3], 2);
}

TEST(ExecutableTest, ConvertSaturatesAndRounds) {
  const float nan = std::nanf("");
  HloModuleBuilder m("convert");
  ComputationBuilder& e = m.Entry();
  int64_t x = e.Param(S(xla::F32, {5}));
  e.Tuple({e.Convert(x, xla::S32), e.Convert(x, xla::BF16),
           e.Convert(x, xla::PRED)});
  absl::StatusOr<Literal> out = RunModule(
      m.Build(), {Vec<float>(xla::F32, {5}, {1e10f, -1e10f, nan, -2.7f, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(
      Values<int32_t>(out->element(0)),
      (std::vector<int32_t>{std::numeric_limits<int32_t>::max(),
                            std::numeric_limits<int32_t>::min(), 0, -2, 0}));
  std::vector<float> b = testing::FloatValues(out->element(1));
  EXPECT_EQ(b[3], -2.703125f);  // nearest bf16 to -2.7
  EXPECT_EQ(Values<bool>(out->element(2)),
            (std::vector<bool>{true, true, true, true, false}));
}

TEST(ExecutableTest, BroadcastReshapeTranspose) {
  HloModuleBuilder m("shape_ops");
  ComputationBuilder& e = m.Entry();
  int64_t x = e.Param(S(xla::S32, {2, 3}));
  int64_t v = e.Param(S(xla::S32, {3}));
  int64_t t = e.Op("transpose", S(xla::S32, {3, 2}), {x},
                   [](xla::HloInstructionProto& i) {
                     i.add_dimensions(1);
                     i.add_dimensions(0);
                   });
  int64_t r = e.Reshape(x, S(xla::S32, {3, 2}));
  int64_t b = e.Broadcast(v, S(xla::S32, {2, 3}), {1});
  int64_t b2 = e.Broadcast(v, S(xla::S32, {3, 2}), {0});
  e.Tuple({t, r, b, b2});
  absl::StatusOr<Literal> out =
      RunModule(m.Build(), {Vec<int32_t>(xla::S32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                            Vec<int32_t>(xla::S32, {3}, {7, 8, 9})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int32_t>(out->element(0)),
            (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(Values<int32_t>(out->element(1)),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Values<int32_t>(out->element(2)),
            (std::vector<int32_t>{7, 8, 9, 7, 8, 9}));
  EXPECT_EQ(Values<int32_t>(out->element(3)),
            (std::vector<int32_t>{7, 7, 8, 8, 9, 9}));
}

TEST(ExecutableTest, DotMatrixAndBatched) {
  HloModuleBuilder m("dot");
  ComputationBuilder& e = m.Entry();
  int64_t a = e.Param(S(xla::F32, {2, 3}));
  int64_t b = e.Param(S(xla::F32, {3, 2}));
  int64_t mm = e.Dot(a, b, S(xla::F32, {2, 2}), {1}, {0});
  // a^T-style contraction: contract a's dim 0 with b's dim 1 -> [3, 3].
  int64_t tt = e.Dot(a, b, S(xla::F32, {3, 3}), {0}, {1});
  e.Tuple({mm, tt});
  absl::StatusOr<Literal> out = RunModule(
      m.Build(), {Vec<float>(xla::F32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                  Vec<float>(xla::F32, {3, 2}, {7, 8, 9, 10, 11, 12})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(out->element(0)),
            (std::vector<float>{58, 64, 139, 154}));
  // out[i][j] = sum_k a[k][i] * b[j][k]
  EXPECT_EQ(Values<float>(out->element(1)),
            (std::vector<float>{39, 49, 59, 54, 68, 82, 69, 87, 105}));

  HloModuleBuilder m2("batched");
  ComputationBuilder& e2 = m2.Entry();
  int64_t x = e2.Param(S(xla::S32, {2, 2, 2}));
  int64_t y = e2.Param(S(xla::S32, {2, 2, 2}));
  e2.Dot(x, y, S(xla::S32, {2, 2, 2}), {2}, {1}, {0}, {0});
  out =
      RunModule(m2.Build(),
                {Vec<int32_t>(xla::S32, {2, 2, 2}, {1, 2, 3, 4, 1, 0, 0, 1}),
                 Vec<int32_t>(xla::S32, {2, 2, 2}, {5, 6, 7, 8, 2, 3, 4, 5})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int32_t>(*out),
            (std::vector<int32_t>{19, 22, 43, 50, 2, 3, 4, 5}));
}

TEST(ExecutableTest, DotBf16OperandsF32Result) {
  using bf16 = Eigen::bfloat16;
  HloModuleBuilder m("dot_bf16");
  ComputationBuilder& e = m.Entry();
  int64_t a = e.Param(S(xla::BF16, {1, 2}));
  int64_t b = e.Param(S(xla::BF16, {2, 1}));
  e.Dot(a, b, S(xla::F32, {1, 1}), {1}, {0});
  absl::StatusOr<Literal> out = RunModule(
      m.Build(), {Vec<bf16>(xla::BF16, {1, 2}, {bf16(1.5f), bf16(256.0f)}),
                  Vec<bf16>(xla::BF16, {2, 1}, {bf16(3.0f), bf16(1.0f)})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{260.5f}));
}

TEST(ExecutableTest, ReduceRowsColumnsAndAll) {
  HloModuleBuilder m("reduce");
  ComputationBuilder& add = m.ScalarBinary("add", xla::F32);
  ComputationBuilder& max = m.ScalarBinary("maximum", xla::F32);
  ComputationBuilder& e = m.Entry();
  int64_t x = e.Param(S(xla::F32, {2, 3}));
  int64_t zero = e.Constant(Scalar<float>(xla::F32, 0));
  int64_t ninf = e.Constant(Scalar<float>(xla::F32, -INFINITY));
  int64_t rows = e.Reduce({x}, {zero}, {1}, add, S(xla::F32, {2}));
  int64_t cols = e.Reduce({x}, {zero}, {0}, add, S(xla::F32, {3}));
  int64_t all = e.Reduce({x}, {ninf}, {0, 1}, max, S(xla::F32, {}));
  e.Tuple({rows, cols, all});
  absl::StatusOr<Literal> out =
      RunModule(m.Build(), {Vec<float>(xla::F32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(out->element(0)), (std::vector<float>{6, 15}));
  EXPECT_EQ(Values<float>(out->element(1)), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(Values<float>(out->element(2)), (std::vector<float>{6}));
}

TEST(ExecutableTest, ReduceWithGeneralComputation) {
  // reducer(a, b) = a * 2 + b: not a plain op, so it runs per element.
  HloModuleBuilder m("reduce_generic");
  ComputationBuilder& r = m.Computation("twice_plus");
  int64_t a = r.Param(S(xla::S32, {}));
  int64_t b = r.Param(S(xla::S32, {}));
  int64_t two = r.Constant(Scalar<int32_t>(xla::S32, 2));
  r.Binary("add", r.Binary("multiply", a, two), b);
  ComputationBuilder& e = m.Entry();
  int64_t x = e.Param(S(xla::S32, {2, 3}));
  int64_t zero = e.Constant(Scalar<int32_t>(xla::S32, 0));
  e.Reduce({x}, {zero}, {1}, r, S(xla::S32, {2}));
  absl::StatusOr<Literal> out = RunModule(
      m.Build(), {Vec<int32_t>(xla::S32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  // ((0*2+1)*2+2)*2+3 = 11; ((0*2+4)*2+5)*2+6 = 32.
  EXPECT_EQ(Values<int32_t>(*out), (std::vector<int32_t>{11, 32}));
}

TEST(ExecutableTest, PredLogic) {
  Literal a = testing::VecBool({4}, {1, 1, 0, 0});
  Literal b = testing::VecBool({4}, {1, 0, 1, 0});
  EXPECT_EQ(Values<bool>(RunBinary("and", a, b)),
            (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(Values<bool>(RunBinary("or", a, b)),
            (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(Values<bool>(RunUnary("not", a)),
            (std::vector<bool>{false, false, true, true}));
}

TEST(ExecutableTest, TupleParameterAndGetTupleElement) {
  HloModuleBuilder m("tuple");
  ComputationBuilder& e = m.Entry();
  int64_t p = e.Param(Shape::Tuple({S(xla::F32, {2}), S(xla::S32, {})}));
  int64_t f = e.GetTupleElement(p, 0);
  int64_t i = e.GetTupleElement(p, 1);
  e.Tuple({i, e.Binary("add", f, f)});
  absl::StatusOr<Literal> out =
      RunModule(m.Build(), {Literal::Tuple({Vec<float>(xla::F32, {2}, {1, 2}),
                                            Scalar<int32_t>(xla::S32, 9)})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int32_t>(out->element(0)), (std::vector<int32_t>{9}));
  EXPECT_EQ(Values<float>(out->element(1)), (std::vector<float>{2, 4}));
}

TEST(ExecutableTest, CompileErrorsNameInstruction) {
  {
    HloModuleBuilder m("bad_shape");
    ComputationBuilder& e = m.Entry();
    int64_t x = e.Param(S(xla::F32, {2}));
    int64_t y = e.Param(S(xla::F32, {3}));
    e.Op("add", S(xla::F32, {2}), {x, y});
    absl::Status s = Executable::Compile(m.Build(), {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("computation entry, instruction add."),
              std::string::npos)
        << s;
  }
  {
    HloModuleBuilder m("unknown_op");
    ComputationBuilder& e = m.Entry();
    e.Op("frobnicate", S(xla::F32, {2}), {e.Param(S(xla::F32, {2}))});
    absl::Status s = Executable::Compile(m.Build(), {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
    EXPECT_NE(s.message().find("\"frobnicate\""), std::string::npos) << s;
  }
  {
    HloModuleBuilder m("bad_type");
    ComputationBuilder& e = m.Entry();
    int64_t x = e.Param(S(xla::PRED, {2}));
    e.Binary("atan2", x, x);
    absl::Status s = Executable::Compile(m.Build(), {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
    EXPECT_NE(s.message().find("atan2 on element type pred"), std::string::npos)
        << s;
    EXPECT_NE(s.message().find("instruction atan2."), std::string::npos) << s;
  }
  {
    HloModuleBuilder m("custom");
    ComputationBuilder& e = m.Entry();
    e.Op("custom-call", S(xla::F32, {}), {}, [](xla::HloInstructionProto& i) {
      i.set_custom_call_target("MyKernel");
    });
    absl::Status s = Executable::Compile(m.Build(), {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
    EXPECT_NE(s.message().find("\"MyKernel\""), std::string::npos) << s;
  }
}

TEST(ExecutableTest, ExecuteChecksArguments) {
  HloModuleBuilder m("args");
  ComputationBuilder& e = m.Entry();
  e.Unary("negate", e.Param(S(xla::F32, {2})));
  absl::StatusOr<std::unique_ptr<Executable>> exe =
      Executable::Compile(m.Build(), {});
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->program_shape().parameters_size(), 1);
  absl::Status s = (*exe)
                       ->Execute({Vec<float>(xla::F32, {3}, {1, 2, 3})},
                                 ExecutionContext(), nullptr)
                       .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("f32[3]"), std::string::npos) << s;
  s = (*exe)->Execute({}, ExecutionContext(), nullptr).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST(ExecutableTest, MultiThreadedMatchesSingleThreaded) {
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  HloModuleBuilder m("mt");
  ComputationBuilder& add = m.ScalarBinary("add", xla::F32);
  ComputationBuilder& e = m.Entry();
  int64_t a = e.Param(S(xla::F32, {64, 256}));
  int64_t b = e.Param(S(xla::F32, {256, 32}));
  int64_t d = e.Dot(a, b, S(xla::F32, {64, 32}), {1}, {0});
  int64_t t = e.Unary("tanh", d);
  e.Reduce({t}, {e.Constant(Scalar<float>(xla::F32, 0))}, {0}, add,
           S(xla::F32, {32}));
  std::vector<float> av(64 * 256), bv(256 * 32);
  for (size_t i = 0; i < av.size(); ++i) av[i] = std::sin(0.1f * i) * 0.1f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = std::cos(0.3f * i) * 0.1f;
  auto args = [&] {
    std::vector<Literal> v;
    v.push_back(Vec<float>(xla::F32, {64, 256}, av));
    v.push_back(Vec<float>(xla::F32, {256, 32}, bv));
    return v;
  };
  absl::StatusOr<Literal> one = RunModule(m.Build(), args());
  absl::StatusOr<Literal> two = RunModule(m.Build(), args(), {}, &device);
  ASSERT_TRUE(one.ok() && two.ok());
  std::vector<float> x = Values<float>(*one), y = Values<float>(*two);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-4);
}

}  // namespace
}  // namespace tpu::emulator::interpreter
