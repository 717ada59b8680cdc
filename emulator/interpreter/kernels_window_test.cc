// reduce-window and select-and-scatter through Executable::Compile/Execute:
// hand-computed cases plus a naive reference loop written from XLA's
// operation semantics.

#include <cmath>
#include <cstdint>
#include <vector>

#include "emulator/interpreter/executable.h"
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

struct Win {
  int64_t size, stride = 1, lo = 0, hi = 0, base_dil = 1, win_dil = 1;
};

void SetWindow(xla::HloInstructionProto& i, const std::vector<Win>& window) {
  for (const Win& w : window) {
    xla::WindowDimension* d = i.mutable_window()->add_dimensions();
    d->set_size(w.size);
    d->set_stride(w.stride);
    d->set_padding_low(w.lo);
    d->set_padding_high(w.hi);
    d->set_base_dilation(w.base_dil);
    d->set_window_dilation(w.win_dil);
  }
}

int64_t OutSize(int64_t in, const Win& w) {
  const int64_t base = in == 0 ? 0 : (in - 1) * w.base_dil + 1;
  const int64_t padded = base + w.lo + w.hi;
  const int64_t win = (w.size - 1) * w.win_dil + 1;
  return padded < win ? 0 : (padded - win) / w.stride + 1;
}

std::vector<int64_t> OutDims(const std::vector<int64_t>& in,
                             const std::vector<Win>& window) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d)
    out.push_back(OutSize(in[d], window[d]));
  return out;
}

int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Naive: calls visit(input_flat_index) for every valid tap of output `o`.
template <typename Fn>
void ForTaps(const std::vector<int64_t>& in, const std::vector<Win>& window,
             int64_t o, Fn visit) {
  const std::vector<int64_t> out = OutDims(in, window);
  const int64_t rank = in.size();
  std::vector<int64_t> pos(rank);
  for (int64_t d = rank - 1; d >= 0; --d) {
    pos[d] = o % out[d];
    o /= out[d];
  }
  int64_t taps = 1;
  for (const Win& w : window) taps *= w.size;
  for (int64_t t = 0; t < taps; ++t) {
    int64_t r = t, flat = 0;
    std::vector<int64_t> k(rank);
    for (int64_t d = rank - 1; d >= 0; --d) {
      k[d] = r % window[d].size;
      r /= window[d].size;
    }
    bool valid = true;
    for (int64_t d = 0; d < rank; ++d) {
      const Win& w = window[d];
      const int64_t u = pos[d] * w.stride - w.lo + k[d] * w.win_dil;
      if (u < 0 || u % w.base_dil != 0 || u / w.base_dil >= in[d]) {
        valid = false;
        break;
      }
      flat = flat * in[d] + u / w.base_dil;
    }
    if (valid) visit(flat);
  }
}

absl::StatusOr<Literal> RunReduceWindow(const Literal& x, const Literal& init,
                                        const std::string& op,
                                        const std::vector<Win>& window) {
  HloModuleBuilder m("rw");
  ComputationBuilder& r = m.ScalarBinary(op, x.shape().element_type());
  ComputationBuilder& e = m.Entry();
  int64_t p = e.Param(x.shape());
  int64_t i = e.Param(init.shape());
  e.Call("reduce-window",
         S(x.shape().element_type(), OutDims(x.shape().dimensions(), window)),
         {p, i}, {&r},
         [&](xla::HloInstructionProto& inst) { SetWindow(inst, window); });
  return RunModule(m.Build(), {x, init});
}

TEST(ReduceWindowTest, HandComputedMaxPoolWithPadding) {
  // 1-D max over windows of 2, stride 2, padding 1 on both sides of
  // [3 1 4 1 5]: windows {pad,3} {1,4} {1,5} -> 3 4 5. Padding is skipped,
  // so init (-inf) does not show up.
  absl::StatusOr<Literal> out = RunReduceWindow(
      Vec<float>(xla::F32, {5}, {3, 1, 4, 1, 5}),
      Scalar<float>(xla::F32, -INFINITY), "maximum", {Win{2, 2, 1, 1}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{3, 4, 5}));
}

TEST(ReduceWindowTest, HandComputedSumPoolWithInitAndBaseDilation) {
  // [1 2 3] base-dilated by 2 -> [1 . 2 . 3]; windows of 2, stride 1:
  // {1,.} {.,2} {2,.} {.,3} -> 1 2 2 3, plus init 10 each.
  absl::StatusOr<Literal> out = RunReduceWindow(
      Vec<int32_t>(xla::S32, {3}, {1, 2, 3}), Scalar<int32_t>(xla::S32, 10),
      "add", {Win{2, 1, 0, 0, 2, 1}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int32_t>(*out), (std::vector<int32_t>{11, 12, 12, 13}));
}

TEST(ReduceWindowTest, MatchesReference2D) {
  const std::vector<int64_t> dims = {7, 6};
  std::vector<float> v(Count(dims));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>((i * 7) % 11) - 5;
  const Literal x = Vec<float>(xla::F32, dims, v);
  for (const std::vector<Win>& window :
       {std::vector<Win>{Win{3, 2, 1, 1}, Win{2, 1, 0, 1}},
        std::vector<Win>{Win{2, 1, 0, 0, 1, 2}, Win{3, 2, 2, 0, 2, 1}},
        std::vector<Win>{Win{3, 1, -1, 2}, Win{1, 3, -1, -1}}}) {
    for (const char* op : {"add", "maximum", "minimum", "multiply"}) {
      const float init = std::string(op) == "multiply" ? 1.0f : 0.5f;
      absl::StatusOr<Literal> out =
          RunReduceWindow(x, Scalar<float>(xla::F32, init), op, window);
      ASSERT_TRUE(out.ok()) << out.status();
      const std::vector<int64_t> od = OutDims(dims, window);
      ASSERT_EQ(out->shape(), S(xla::F32, od));
      std::vector<float> got = Values<float>(*out);
      for (int64_t o = 0; o < Count(od); ++o) {
        float acc = init;
        ForTaps(dims, window, o, [&](int64_t i) {
          const std::string s = op;
          if (s == "add") acc += v[i];
          if (s == "maximum") acc = std::max(acc, v[i]);
          if (s == "minimum") acc = std::min(acc, v[i]);
          if (s == "multiply") acc *= v[i];
        });
        EXPECT_EQ(got[o], acc) << op << " output " << o;
      }
    }
  }
}

TEST(ReduceWindowTest, ElementTypes) {
  using bf16 = Eigen::bfloat16;
  using f16 = Eigen::half;
  const std::vector<Win> w = {Win{2, 1, 0, 1}};
  {
    absl::StatusOr<Literal> out =
        RunReduceWindow(Vec<bf16>(xla::BF16, {3}, {bf16(1), bf16(2), bf16(3)}),
                        Scalar<bf16>(xla::BF16, bf16(0)), "add", w);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(testing::FloatValues(*out), (std::vector<float>{3, 5, 3}));
  }
  {
    absl::StatusOr<Literal> out =
        RunReduceWindow(Vec<f16>(xla::F16, {3}, {f16(1), f16(-2), f16(3)}),
                        Scalar<f16>(xla::F16, f16(-100)), "maximum", w);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(testing::FloatValues(*out), (std::vector<float>{1, 3, 3}));
  }
  {
    absl::StatusOr<Literal> out =
        RunReduceWindow(Vec<double>(xla::F64, {3}, {1.5, 2, 3}),
                        Scalar<double>(xla::F64, 0), "add", w);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<double>(*out), (std::vector<double>{3.5, 5, 3}));
  }
  {
    const int64_t max = std::numeric_limits<int64_t>::max();
    absl::StatusOr<Literal> out =
        RunReduceWindow(Vec<int64_t>(xla::S64, {3}, {max, 1, 7}),
                        Scalar<int64_t>(xla::S64, 0), "add", w);
    ASSERT_TRUE(out.ok()) << out.status();
    // max + 1 wraps.
    EXPECT_EQ(
        Values<int64_t>(*out),
        (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 8, 7}));
  }
  {
    absl::StatusOr<Literal> out =
        RunReduceWindow(Vec<uint8_t>(xla::U8, {3}, {200, 100, 5}),
                        Scalar<uint8_t>(xla::U8, 0), "add", w);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<uint8_t>(*out), (std::vector<uint8_t>{44, 105, 5}));
  }
  {
    absl::StatusOr<Literal> out =
        RunReduceWindow(testing::VecBool({3}, {1, 0, 1}),
                        Scalar<bool>(xla::PRED, false), "or", w);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<bool>(*out), (std::vector<bool>{true, true, true}));
  }
  {
    using c64 = std::complex<float>;
    absl::StatusOr<Literal> out = RunReduceWindow(
        Vec<c64>(xla::C64, {3}, {c64(1, 1), c64(2, -1), c64(0, 3)}),
        Scalar<c64>(xla::C64, c64(0, 0)), "add", w);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<c64>(*out),
              (std::vector<c64>{c64(3, 0), c64(2, 2), c64(0, 3)}));
  }
}

TEST(ReduceWindowTest, NanPropagatesThroughMax) {
  absl::StatusOr<Literal> out =
      RunReduceWindow(Vec<float>(xla::F32, {3}, {NAN, 1, 2}),
                      Scalar<float>(xla::F32, -INFINITY), "maximum", {Win{2}});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> v = Values<float>(*out);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 2);
}

TEST(ReduceWindowTest, VariadicArgmaxWithGenericComputation) {
  // (value, index) pairs; the reducer keeps the larger value, and the
  // smaller index on ties.
  HloModuleBuilder m("argmax");
  ComputationBuilder& r = m.Computation("argmax");
  int64_t av = r.Param(S(xla::F32, {}));
  int64_t ai = r.Param(S(xla::S32, {}));
  int64_t bv = r.Param(S(xla::F32, {}));
  int64_t bi = r.Param(S(xla::S32, {}));
  int64_t gt = r.Compare("GT", av, bv);
  int64_t eq = r.Compare("EQ", av, bv);
  int64_t lt_i = r.Compare("LT", ai, bi);
  int64_t tie = r.Op("and", S(xla::PRED, {}), {eq, lt_i});
  int64_t take_a = r.Op("or", S(xla::PRED, {}), {gt, tie});
  int64_t v = r.Op("select", S(xla::F32, {}), {take_a, av, bv});
  int64_t i = r.Op("select", S(xla::S32, {}), {take_a, ai, bi});
  r.Tuple({v, i});
  ComputationBuilder& e = m.Entry();
  int64_t x = e.Param(S(xla::F32, {6}));
  int64_t idx = e.Param(S(xla::S32, {6}));
  int64_t iv = e.Param(S(xla::F32, {}));
  int64_t ii = e.Param(S(xla::S32, {}));
  e.Call("reduce-window", Shape::Tuple({S(xla::F32, {3}), S(xla::S32, {3})}),
         {x, idx, iv, ii}, {&r}, [](xla::HloInstructionProto& inst) {
           SetWindow(inst, {Win{3, 2, 1, 0}});
         });
  absl::StatusOr<Literal> out =
      RunModule(m.Build(), {Vec<float>(xla::F32, {6}, {5, 9, 9, 2, 7, 1}),
                            Vec<int32_t>(xla::S32, {6}, {0, 1, 2, 3, 4, 5}),
                            Scalar<float>(xla::F32, -INFINITY),
                            Scalar<int32_t>(xla::S32, -1)});
  ASSERT_TRUE(out.ok()) << out.status();
  // Windows (padding 1 low, stride 2): {pad,5,9} {9,9,2} {2,7,1}.
  EXPECT_EQ(Values<float>(out->element(0)), (std::vector<float>{9, 9, 7}));
  EXPECT_EQ(Values<int32_t>(out->element(1)), (std::vector<int32_t>{1, 1, 4}));
}

TEST(ReduceWindowTest, ThreadedLargeMaxPool) {
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  const std::vector<int64_t> dims = {4, 33, 31, 3};
  const std::vector<Win> window = {Win{1}, Win{3, 2, 1, 1}, Win{3, 2, 1, 1},
                                   Win{1}};
  std::vector<float> v(Count(dims));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>((i * 37) % 101);
  HloModuleBuilder m("pool");
  ComputationBuilder& r = m.ScalarBinary("maximum", xla::F32);
  ComputationBuilder& e = m.Entry();
  int64_t p = e.Param(S(xla::F32, dims));
  int64_t i = e.Param(S(xla::F32, {}));
  e.Call("reduce-window", S(xla::F32, OutDims(dims, window)), {p, i}, {&r},
         [&](xla::HloInstructionProto& inst) { SetWindow(inst, window); });
  absl::StatusOr<Literal> out = RunModule(
      m.Build(), {Vec<float>(xla::F32, dims, v), Scalar<float>(xla::F32, -1)},
      {}, &device);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> got = Values<float>(*out);
  for (int64_t o = 0; o < Count(OutDims(dims, window)); ++o) {
    float acc = -1;
    ForTaps(dims, window, o, [&](int64_t k) { acc = std::max(acc, v[k]); });
    ASSERT_EQ(got[o], acc) << o;
  }
}

TEST(ReduceWindowTest, RejectsBadShapes) {
  HloModuleBuilder m("bad");
  ComputationBuilder& r = m.ScalarBinary("add", xla::F32);
  ComputationBuilder& e = m.Entry();
  int64_t p = e.Param(S(xla::F32, {4}));
  int64_t i = e.Param(S(xla::F32, {}));
  e.Call("reduce-window", S(xla::F32, {2}), {p, i}, {&r},
         [](xla::HloInstructionProto& inst) { SetWindow(inst, {Win{2}}); });
  absl::StatusOr<std::unique_ptr<Executable>> exe =
      Executable::Compile(m.Build(), CompileOptions());
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(exe.status().message().find("f32[3]"), std::string::npos)
      << exe.status();
}

// ---------------------------------------------------------------------------

absl::StatusOr<Literal> RunSelectAndScatter(const Literal& operand,
                                            const Literal& source,
                                            const Literal& init,
                                            const std::string& direction,
                                            const std::vector<Win>& window,
                                            bool generic_scatter = false) {
  const xla::PrimitiveType t = operand.shape().element_type();
  HloModuleBuilder m("sas");
  ComputationBuilder& sel = m.Computation("select");
  int64_t a = sel.Param(S(t, {}));
  int64_t b = sel.Param(S(t, {}));
  sel.Compare(direction, a, b);
  ComputationBuilder* scatter;
  if (generic_scatter) {
    // (a + b) computed as a - (-b): not recognised as a plain add.
    scatter = &m.Computation("scatter");
    int64_t x = scatter->Param(S(t, {}));
    int64_t y = scatter->Param(S(t, {}));
    scatter->Binary("subtract", x, scatter->Unary("negate", y));
  } else {
    scatter = &m.ScalarBinary("add", t);
  }
  ComputationBuilder& e = m.Entry();
  int64_t o = e.Param(operand.shape());
  int64_t s = e.Param(source.shape());
  int64_t i = e.Param(init.shape());
  e.Call("select-and-scatter", operand.shape(), {o, s, i}, {&sel, scatter},
         [&](xla::HloInstructionProto& inst) { SetWindow(inst, window); });
  return RunModule(m.Build(), {operand, source, init});
}

TEST(SelectAndScatterTest, HandComputedOverlappingWindowsGeVsGt) {
  // operand [1 5 5 2], windows of 2 with stride 1 over indices {0,1} {1,2}
  // {2,3}. GE keeps the first of equal maxima: selects 1, 1, 2 -> index 1
  // gets 10 + 20, index 2 gets 30. GT moves to the later of equal maxima:
  // selects 1, 2, 2 -> index 1 gets 10, index 2 gets 20 + 30.
  const Literal operand = Vec<float>(xla::F32, {4}, {1, 5, 5, 2});
  const Literal source = Vec<float>(xla::F32, {3}, {10, 20, 30});
  const Literal init = Scalar<float>(xla::F32, 0.5f);
  absl::StatusOr<Literal> ge =
      RunSelectAndScatter(operand, source, init, "GE", {Win{2}});
  ASSERT_TRUE(ge.ok()) << ge.status();
  EXPECT_EQ(Values<float>(*ge), (std::vector<float>{0.5f, 30.5f, 30.5f, 0.5f}));
  absl::StatusOr<Literal> gt =
      RunSelectAndScatter(operand, source, init, "GT", {Win{2}});
  ASSERT_TRUE(gt.ok()) << gt.status();
  EXPECT_EQ(Values<float>(*gt), (std::vector<float>{0.5f, 10.5f, 50.5f, 0.5f}));
  // Same through the generic (called computation) path.
  absl::StatusOr<Literal> generic =
      RunSelectAndScatter(operand, source, init, "GT", {Win{2}}, true);
  ASSERT_TRUE(generic.ok()) << generic.status();
  EXPECT_EQ(Values<float>(*generic), Values<float>(*gt));
}

TEST(SelectAndScatterTest, PaddingIsNeverSelected) {
  // operand [-5 -7], window 2 stride 2 with padding 1 low, 1 high:
  // windows {pad,-5} {-7,pad}: padding is never a candidate.
  absl::StatusOr<Literal> out = RunSelectAndScatter(
      Vec<int32_t>(xla::S32, {2}, {-5, -7}),
      Vec<int32_t>(xla::S32, {2}, {1, 2}), Scalar<int32_t>(xla::S32, 0), "GE",
      {Win{2, 2, 1, 1}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int32_t>(*out), (std::vector<int32_t>{1, 2}));
}

TEST(SelectAndScatterTest, MatchesReference2DMaxPoolGradient) {
  const std::vector<int64_t> dims = {6, 7};
  const std::vector<Win> window = {Win{3, 2, 1, 1}, Win{2, 1, 0, 1}};
  const std::vector<int64_t> od = OutDims(dims, window);
  std::vector<double> v(Count(dims)), src(Count(od));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 5) % 7);
  for (size_t i = 0; i < src.size(); ++i) src[i] = 1.0 + i;
  for (const char* dir : {"GE", "GT", "LE", "LT"}) {
    absl::StatusOr<Literal> out = RunSelectAndScatter(
        Vec<double>(xla::F64, dims, v), Vec<double>(xla::F64, od, src),
        Scalar<double>(xla::F64, 0), dir, window);
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<double> want(v.size(), 0);
    for (int64_t o = 0; o < Count(od); ++o) {
      int64_t best = -1;
      ForTaps(dims, window, o, [&](int64_t k) {
        const std::string d = dir;
        const double s = best < 0 ? 0 : v[best], c = v[k];
        const bool keep = d == "GE"   ? s >= c
                          : d == "GT" ? s > c
                          : d == "LE" ? s <= c
                                      : s < c;
        if (best < 0 || !keep) best = k;
      });
      if (best >= 0) want[best] += src[o];
    }
    EXPECT_EQ(Values<double>(*out), want) << dir;
  }
}

TEST(SelectAndScatterTest, Bf16AndRejectsWrongSource) {
  using bf16 = Eigen::bfloat16;
  absl::StatusOr<Literal> out = RunSelectAndScatter(
      Vec<bf16>(xla::BF16, {3}, {bf16(1), bf16(3), bf16(2)}),
      Vec<bf16>(xla::BF16, {2}, {bf16(0.5f), bf16(0.25f)}),
      Scalar<bf16>(xla::BF16, bf16(0)), "GE", {Win{2}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(testing::FloatValues(*out), (std::vector<float>{0, 0.75f, 0}));
  absl::StatusOr<Literal> bad =
      RunSelectAndScatter(Vec<float>(xla::F32, {3}, {1, 3, 2}),
                          Vec<float>(xla::F32, {3}, {1, 1, 1}),
                          Scalar<float>(xla::F32, 0), "GE", {Win{2}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("source must be f32[2]"),
            std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace tpu::emulator::interpreter
