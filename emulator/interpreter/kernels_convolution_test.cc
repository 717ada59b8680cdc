// Convolution through Executable::Compile/Execute, checked against
// hand-computed values and against a naive reference loop written here from
// XLA's operation semantics (independent of the im2col kernel).

#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"
#include "hlo/memory_budget.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

using testing::ComputationBuilder;
using testing::HloModuleBuilder;
using testing::RunModule;
using testing::S;
using testing::Values;
using testing::Vec;
using cd = std::complex<double>;

struct Win {
  int64_t size, stride = 1, lo = 0, hi = 0, lhs_dil = 1, rhs_dil = 1;
  bool reversal = false;
};

struct ConvSpec {
  std::vector<int64_t> lhs_dims, rhs_dims;
  int64_t ib = 0, if_ = 1;
  std::vector<int64_t> is;
  int64_t ki = 0, ko = 1;
  std::vector<int64_t> ks;
  int64_t ob = 0, of = 1;
  std::vector<int64_t> os;
  std::vector<Win> window;
  int64_t fgc = 1, bgc = 1;
};

// NHWC-style labels for `d` spatial dims: input/output [N, S..., C], kernel
// [K..., I, O].
ConvSpec Nhwc(std::vector<int64_t> lhs, std::vector<int64_t> rhs,
              std::vector<Win> window) {
  ConvSpec s;
  const int64_t d = static_cast<int64_t>(window.size());
  s.lhs_dims = lhs;
  s.rhs_dims = rhs;
  s.ib = 0;
  s.if_ = d + 1;
  s.ki = d;
  s.ko = d + 1;
  s.ob = 0;
  s.of = d + 1;
  for (int64_t i = 0; i < d; ++i) {
    s.is.push_back(i + 1);
    s.ks.push_back(i);
    s.os.push_back(i + 1);
  }
  s.window = window;
  return s;
}

int64_t OutSize(int64_t in, const Win& w) {
  const int64_t base = in == 0 ? 0 : (in - 1) * w.lhs_dil + 1;
  const int64_t padded = base + w.lo + w.hi;
  const int64_t win = (w.size - 1) * w.rhs_dil + 1;
  return padded < win ? 0 : (padded - win) / w.stride + 1;
}

std::vector<int64_t> ResultDims(const ConvSpec& s) {
  std::vector<int64_t> dims(s.lhs_dims.size());
  dims[s.ob] = s.lhs_dims[s.ib] / s.bgc;
  dims[s.of] = s.rhs_dims[s.ko];
  for (size_t i = 0; i < s.window.size(); ++i) {
    dims[s.os[i]] = OutSize(s.lhs_dims[s.is[i]], s.window[i]);
  }
  return dims;
}

int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    s[i] = s[i + 1] * dims[i + 1];
  }
  return s;
}

// Naive convolution following operation_semantics.md, in complex<double>.
std::vector<cd> Reference(const ConvSpec& s, const std::vector<cd>& lhs,
                          const std::vector<cd>& rhs) {
  const std::vector<int64_t> out_dims = ResultDims(s);
  const std::vector<int64_t> ls = Strides(s.lhs_dims), rs = Strides(s.rhs_dims),
                             os = Strides(out_dims);
  const int64_t d = s.window.size();
  const int64_t o_total = s.rhs_dims[s.ko];
  const int64_t in_group = s.rhs_dims[s.ki];
  const int64_t out_per_fgroup = o_total / s.fgc;
  const int64_t out_per_bgroup = o_total / s.bgc;
  const int64_t out_batch = out_dims[s.ob];
  std::vector<cd> out(Count(out_dims));
  std::vector<int64_t> idx(out_dims.size());
  for (int64_t flat = 0; flat < Count(out_dims); ++flat) {
    int64_t rem = flat;
    for (size_t i = 0; i < out_dims.size(); ++i) {
      idx[i] = rem / os[i];
      rem %= os[i];
    }
    const int64_t o = idx[s.of];
    const int64_t fg = o / out_per_fgroup;
    const int64_t bg = o / out_per_bgroup;
    const int64_t n_in = (s.bgc > 1 ? bg * out_batch : 0) + idx[s.ob];
    cd acc = 0;
    std::vector<int64_t> k(d, 0);
    const int64_t taps = [&] {
      int64_t t = 1;
      for (const Win& w : s.window) t *= w.size;
      return t;
    }();
    for (int64_t t = 0; t < taps; ++t) {
      int64_t r = t;
      for (int64_t i = d - 1; i >= 0; --i) {
        k[i] = r % s.window[i].size;
        r /= s.window[i].size;
      }
      bool valid = true;
      int64_t l_off = n_in * ls[s.ib], r_off = o * rs[s.ko];
      for (int64_t i = 0; i < d; ++i) {
        const Win& w = s.window[i];
        const int64_t u = idx[s.os[i]] * w.stride - w.lo + k[i] * w.rhs_dil;
        if (u < 0 || u % w.lhs_dil != 0 ||
            u / w.lhs_dil >= s.lhs_dims[s.is[i]]) {
          valid = false;
          break;
        }
        l_off += (u / w.lhs_dil) * ls[s.is[i]];
        const int64_t kk = w.reversal ? w.size - 1 - k[i] : k[i];
        r_off += kk * rs[s.ks[i]];
      }
      if (!valid) continue;
      for (int64_t c = 0; c < in_group; ++c) {
        const int64_t ci = (s.fgc > 1 ? fg * in_group : 0) + c;
        acc += lhs[l_off + ci * ls[s.if_]] * rhs[r_off + c * rs[s.ki]];
      }
    }
    out[flat] = acc;
  }
  return out;
}

xla::ConvolutionDimensionNumbers DimNumbers(const ConvSpec& s) {
  xla::ConvolutionDimensionNumbers dn;
  dn.set_input_batch_dimension(s.ib);
  dn.set_input_feature_dimension(s.if_);
  for (int64_t v : s.is) dn.add_input_spatial_dimensions(v);
  dn.set_kernel_input_feature_dimension(s.ki);
  dn.set_kernel_output_feature_dimension(s.ko);
  for (int64_t v : s.ks) dn.add_kernel_spatial_dimensions(v);
  dn.set_output_batch_dimension(s.ob);
  dn.set_output_feature_dimension(s.of);
  for (int64_t v : s.os) dn.add_output_spatial_dimensions(v);
  return dn;
}

xla::HloModuleProto ConvModule(const ConvSpec& s, xla::PrimitiveType lt,
                               xla::PrimitiveType rt, xla::PrimitiveType ot,
                               int precision = 0) {
  HloModuleBuilder m("conv");
  ComputationBuilder& e = m.Entry();
  int64_t x = e.Param(S(lt, s.lhs_dims));
  int64_t w = e.Param(S(rt, s.rhs_dims));
  e.Op("convolution", S(ot, ResultDims(s)), {x, w},
       [&](xla::HloInstructionProto& i) {
         *i.mutable_convolution_dimension_numbers() = DimNumbers(s);
         for (const Win& win : s.window) {
           xla::WindowDimension* wd = i.mutable_window()->add_dimensions();
           wd->set_size(win.size);
           wd->set_stride(win.stride);
           wd->set_padding_low(win.lo);
           wd->set_padding_high(win.hi);
           wd->set_base_dilation(win.lhs_dil);
           wd->set_window_dilation(win.rhs_dil);
           wd->set_window_reversal(win.reversal);
         }
         i.set_feature_group_count(s.fgc);
         i.set_batch_group_count(s.bgc);
         i.mutable_precision_config()->add_operand_precision(
             static_cast<xla::PrecisionConfig::Precision>(precision));
         i.mutable_precision_config()->add_operand_precision(
             static_cast<xla::PrecisionConfig::Precision>(precision));
       });
  return m.Build();
}

// Small integers (exact in every float type), deterministic.
std::vector<cd> SmallInts(int64_t n, uint32_t seed, bool complex = false) {
  std::vector<cd> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    const double re = static_cast<int>((x >> 24) % 7) - 3;
    x = x * 1664525u + 1013904223u;
    const double im = complex ? static_cast<int>((x >> 24) % 5) - 2 : 0;
    v[i] = cd(re, im);
  }
  return v;
}

template <typename T>
T FromCd(cd v) {
  if constexpr (std::is_same_v<T, std::complex<float>> ||
                std::is_same_v<T, std::complex<double>>) {
    return T(v);
  } else if constexpr (std::is_same_v<T, Eigen::half> ||
                       std::is_same_v<T, Eigen::bfloat16>) {
    return T(static_cast<float>(v.real()));
  } else {
    return static_cast<T>(v.real());
  }
}

template <typename T>
cd ToCd(T v) {
  if constexpr (std::is_same_v<T, std::complex<float>> ||
                std::is_same_v<T, std::complex<double>>) {
    return cd(v);
  } else if constexpr (std::is_same_v<T, Eigen::half> ||
                       std::is_same_v<T, Eigen::bfloat16>) {
    return cd(static_cast<float>(v), 0);
  } else {
    return cd(static_cast<double>(v), 0);
  }
}

template <typename T>
Literal MakeLiteral(xla::PrimitiveType type, const std::vector<int64_t>& dims,
                    const std::vector<cd>& values) {
  std::vector<T> v;
  for (const cd& c : values) v.push_back(FromCd<T>(c));
  return Vec<T>(type, dims, v);
}

// Runs the spec with operand types L, K and result type R; compares with
// the reference rounded to R.
template <typename L, typename K, typename R>
void CheckConv(const ConvSpec& s, xla::PrimitiveType lt, xla::PrimitiveType kt,
               xla::PrimitiveType rt, bool complex = false,
               const Eigen::ThreadPoolDevice* device = nullptr) {
  const std::vector<cd> lhs = SmallInts(Count(s.lhs_dims), 1, complex);
  const std::vector<cd> rhs = SmallInts(Count(s.rhs_dims), 2, complex);
  absl::StatusOr<Literal> out = RunModule(ConvModule(s, lt, kt, rt),
                                          {MakeLiteral<L>(lt, s.lhs_dims, lhs),
                                           MakeLiteral<K>(kt, s.rhs_dims, rhs)},
                                          {}, device);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->shape(), S(rt, ResultDims(s)));
  const std::vector<cd> want = Reference(s, lhs, rhs);
  const std::vector<R> got = Values<R>(*out);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(ToCd(got[i]), ToCd(FromCd<R>(want[i]))) << "element " << i;
  }
}

TEST(ConvolutionTest, HandComputed1DWithPadding) {
  // x = [1 2 3 4], w = [1 -1], padding 1 on both sides:
  // windows [0 1] [1 2] [2 3] [3 4] [4 0] -> -1 -1 -1 -1 4.
  ConvSpec s = Nhwc({1, 4, 1}, {2, 1, 1}, {Win{2, 1, 1, 1}});
  absl::StatusOr<Literal> out =
      RunModule(ConvModule(s, xla::F32, xla::F32, xla::F32),
                {Vec<float>(xla::F32, {1, 4, 1}, {1, 2, 3, 4}),
                 Vec<float>(xla::F32, {2, 1, 1}, {1, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{-1, -1, -1, -1, 4}));
}

TEST(ConvolutionTest, HandComputed2DTwoFeatures) {
  // 2x2 image with 2 input features, 1x1 kernel mixing them into one output:
  // out = 2*f0 + 10*f1.
  ConvSpec s = Nhwc({1, 2, 2, 2}, {1, 1, 2, 1}, {Win{1}, Win{1}});
  absl::StatusOr<Literal> out =
      RunModule(ConvModule(s, xla::F32, xla::F32, xla::F32),
                {Vec<float>(xla::F32, {1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                 Vec<float>(xla::F32, {1, 1, 2, 1}, {2, 10})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{22, 46, 70, 94}));
}

TEST(ConvolutionTest, HandComputedLhsDilationIsTransposedConv) {
  // x = [1 2] dilated to [1 0 2], padded by 1: [0 1 0 2 0]; w = [1 1]:
  // windows -> 1 1 2 2.
  ConvSpec s = Nhwc({1, 2, 1}, {2, 1, 1}, {Win{2, 1, 1, 1, 2, 1}});
  absl::StatusOr<Literal> out =
      RunModule(ConvModule(s, xla::F32, xla::F32, xla::F32),
                {Vec<float>(xla::F32, {1, 2, 1}, {1, 2}),
                 Vec<float>(xla::F32, {2, 1, 1}, {1, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{1, 1, 2, 2}));
}

TEST(ConvolutionTest, Nhwc3x3Same) {
  CheckConv<float, float, float>(
      Nhwc({2, 6, 5, 3}, {3, 3, 3, 4}, {Win{3, 1, 1, 1}, Win{3, 1, 1, 1}}),
      xla::F32, xla::F32, xla::F32);
}

TEST(ConvolutionTest, StridesDilationsAndAsymmetricPadding) {
  CheckConv<float, float, float>(
      Nhwc({2, 9, 7, 2}, {3, 2, 2, 3},
           {Win{3, 2, 2, 1, 1, 2}, Win{2, 3, 0, 3, 2, 1}}),
      xla::F32, xla::F32, xla::F32);
}

TEST(ConvolutionTest, NegativePaddingCrops) {
  CheckConv<float, float, float>(
      Nhwc({1, 8, 8, 2}, {3, 3, 2, 2}, {Win{3, 1, -2, 1}, Win{3, 2, -1, -1}}),
      xla::F32, xla::F32, xla::F32);
}

TEST(ConvolutionTest, WindowReversal) {
  CheckConv<float, float, float>(
      Nhwc({1, 5, 4, 2}, {3, 2, 2, 2},
           {Win{3, 1, 1, 1, 1, 1, true}, Win{2, 1, 0, 0, 1, 1, false}}),
      xla::F32, xla::F32, xla::F32);
}

TEST(ConvolutionTest, NchwOihwLabels) {
  // bf01_oi01->bf01.
  ConvSpec s;
  s.lhs_dims = {2, 3, 6, 5};
  s.rhs_dims = {4, 3, 3, 2};
  s.ib = 0;
  s.if_ = 1;
  s.is = {2, 3};
  s.ko = 0;
  s.ki = 1;
  s.ks = {2, 3};
  s.ob = 0;
  s.of = 1;
  s.os = {2, 3};
  s.window = {Win{3, 1, 1, 1}, Win{2, 2, 0, 1}};
  CheckConv<float, float, float>(s, xla::F32, xla::F32, xla::F32);
}

TEST(ConvolutionTest, ScrambledLabels) {
  // Input f0b1 (feature, spatial0, batch, spatial1), kernel 1io0, output
  // 0fb1 -- every role in an unusual place.
  ConvSpec s;
  s.lhs_dims = {3, 5, 2, 4};
  s.ib = 2;
  s.if_ = 0;
  s.is = {1, 3};
  s.rhs_dims = {2, 3, 2, 3};
  s.ks = {3, 0};
  s.ki = 1;
  s.ko = 2;
  s.ob = 2;
  s.of = 1;
  s.os = {0, 3};
  s.window = {Win{3, 1, 1, 1}, Win{2, 1, 0, 1}};
  CheckConv<float, float, float>(s, xla::F32, xla::F32, xla::F32);
}

TEST(ConvolutionTest, OneAndThreeSpatialDims) {
  CheckConv<float, float, float>(Nhwc({3, 10, 2}, {4, 2, 5}, {Win{4, 3, 2, 1}}),
                                 xla::F32, xla::F32, xla::F32);
  CheckConv<double, double, double>(
      Nhwc({2, 4, 5, 3, 2}, {2, 3, 2, 2, 3},
           {Win{2, 1, 0, 1}, Win{3, 1, 1, 1, 1, 2}, Win{2, 2, 1, 0}}),
      xla::F64, xla::F64, xla::F64);
}

TEST(ConvolutionTest, ZeroSpatialDimsIsAMatmul) {
  CheckConv<float, float, float>(Nhwc({3, 4}, {4, 5}, {}), xla::F32, xla::F32,
                                 xla::F32);
}

TEST(ConvolutionTest, FeatureGroupsAndDepthwise) {
  ConvSpec grouped =
      Nhwc({2, 5, 5, 6}, {3, 3, 2, 6}, {Win{3, 1, 1, 1}, Win{3, 1, 1, 1}});
  grouped.fgc = 3;
  CheckConv<float, float, float>(grouped, xla::F32, xla::F32, xla::F32);
  // Depthwise with channel multiplier 2: G = C = 4, O = 8.
  ConvSpec depthwise =
      Nhwc({1, 6, 6, 4}, {3, 3, 1, 8}, {Win{3, 2, 1, 1}, Win{3, 2, 1, 1}});
  depthwise.fgc = 4;
  CheckConv<float, float, float>(depthwise, xla::F32, xla::F32, xla::F32);
}

TEST(ConvolutionTest, BatchGroupsAsInFilterBackprop) {
  // Weight gradient of a depthwise conv: batch_group_count = features.
  ConvSpec s =
      Nhwc({4, 6, 6, 3}, {3, 3, 3, 4}, {Win{3, 1, 1, 1}, Win{3, 1, 1, 1}});
  s.bgc = 2;
  CheckConv<float, float, float>(s, xla::F32, xla::F32, xla::F32);
  ConvSpec t = Nhwc({6, 5, 2}, {2, 2, 3}, {Win{2, 1, 0, 1}});
  t.bgc = 3;
  CheckConv<double, double, double>(t, xla::F64, xla::F64, xla::F64);
}

TEST(ConvolutionTest, EveryElementType) {
  const ConvSpec s =
      Nhwc({2, 5, 4, 3}, {3, 2, 3, 2}, {Win{3, 1, 1, 1}, Win{2, 2, 0, 1}});
  using bf16 = Eigen::bfloat16;
  using f16 = Eigen::half;
  using c64 = std::complex<float>;
  using c128 = std::complex<double>;
  CheckConv<f16, f16, f16>(s, xla::F16, xla::F16, xla::F16);
  CheckConv<bf16, bf16, bf16>(s, xla::BF16, xla::BF16, xla::BF16);
  CheckConv<double, double, double>(s, xla::F64, xla::F64, xla::F64);
  CheckConv<c64, c64, c64>(s, xla::C64, xla::C64, xla::C64, true);
  CheckConv<c128, c128, c128>(s, xla::C128, xla::C128, xla::C128, true);
  CheckConv<int32_t, int32_t, int32_t>(s, xla::S32, xla::S32, xla::S32);
  CheckConv<int64_t, int64_t, int64_t>(s, xla::S64, xla::S64, xla::S64);
  CheckConv<int8_t, int8_t, int8_t>(s, xla::S8, xla::S8, xla::S8);
  // preferred_element_type: the result type differs from the operands'.
  CheckConv<int8_t, int8_t, int32_t>(s, xla::S8, xla::S8, xla::S32);
  CheckConv<bf16, bf16, float>(s, xla::BF16, xla::BF16, xla::F32);
  CheckConv<f16, f16, float>(s, xla::F16, xla::F16, xla::F32);
}

// bf16 operands read as they are: a pointwise convolution large enough for
// oneDNN's bf16 GEMM, and a depthwise one, against the reference.
TEST(ConvolutionTest, Bf16PointwiseAndDepthwise) {
  using bf16 = Eigen::bfloat16;
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  const ConvSpec pointwise =
      Nhwc({2, 16, 16, 64}, {1, 1, 64, 72}, {Win{1}, Win{1}});
  CheckConv<bf16, bf16, float>(pointwise, xla::BF16, xla::BF16, xla::F32, false,
                               &device);
  CheckConv<bf16, bf16, bf16>(pointwise, xla::BF16, xla::BF16, xla::BF16, false,
                              &device);
  ConvSpec depthwise =
      Nhwc({2, 11, 9, 16}, {3, 3, 1, 16}, {Win{3, 1, 1, 1}, Win{3, 2, 1, 1}});
  depthwise.fgc = 16;
  CheckConv<bf16, bf16, float>(depthwise, xla::BF16, xla::BF16, xla::F32, false,
                               &device);
}

// The 2-D depthwise kernel (one output feature per input feature): blocks
// of 16 features and a tail, strides, asymmetric and negative padding,
// window dilation and reversal, batches; f32 and bf16 input, on the pool
// and on the calling thread.
TEST(ConvolutionTest, Depthwise2dBlocksAndTail) {
  using bf16 = Eigen::bfloat16;
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  std::vector<ConvSpec> specs;
  specs.push_back(
      Nhwc({2, 11, 9, 37}, {3, 3, 1, 37}, {Win{3, 2, 0, 1}, Win{3, 1, 1, 1}}));
  specs.push_back(Nhwc({1, 8, 10, 32}, {3, 2, 1, 32},
                       {Win{3, 1, 2, -1, 1, 2}, Win{2, 3, 0, 2, 1, 1, true}}));
  specs.push_back(Nhwc({3, 5, 4, 5}, {3, 3, 1, 5},
                       {Win{3, 1, 1, 1}, Win{3, 1, 1, 1, 1, 1, true}}));
  for (ConvSpec& s : specs) {
    s.fgc = s.lhs_dims[3];
    for (const Eigen::ThreadPoolDevice* d :
         {static_cast<const Eigen::ThreadPoolDevice*>(&device),
          static_cast<const Eigen::ThreadPoolDevice*>(nullptr)}) {
      CheckConv<float, float, float>(s, xla::F32, xla::F32, xla::F32, false, d);
      CheckConv<bf16, bf16, float>(s, xla::BF16, xla::BF16, xla::F32, false, d);
      CheckConv<bf16, bf16, bf16>(s, xla::BF16, xla::BF16, xla::BF16, false, d);
    }
  }
}

// Few output rows with a large kernel matrix: all patch rows at once and
// one product threaded over the output features (bf16 operands read as
// they are), with window reversal and a batch; f32 and bf16.
TEST(ConvolutionTest, FewRowsOneThreadedProduct) {
  using bf16 = Eigen::bfloat16;
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  std::vector<ConvSpec> specs;
  specs.push_back(
      Nhwc({1, 5, 5, 64}, {3, 3, 64, 72}, {Win{3, 2, 0, 1}, Win{3, 2, 0, 1}}));
  specs.push_back(Nhwc({2, 3, 3, 40}, {3, 3, 40, 128},
                       {Win{3, 2, 1, 1, 1, 1, true}, Win{3, 2, 1, 1}}));
  for (const ConvSpec& s : specs) {
    for (const Eigen::ThreadPoolDevice* d :
         {static_cast<const Eigen::ThreadPoolDevice*>(&device),
          static_cast<const Eigen::ThreadPoolDevice*>(nullptr)}) {
      CheckConv<float, float, float>(s, xla::F32, xla::F32, xla::F32, false, d);
      CheckConv<bf16, bf16, float>(s, xla::BF16, xla::BF16, xla::F32, false, d);
      CheckConv<bf16, bf16, bf16>(s, xla::BF16, xla::BF16, xla::BF16, false, d);
      CheckConv<bf16, float, float>(s, xla::BF16, xla::F32, xla::F32, false, d);
    }
  }
}

// Found by hlo_module_fuzzer: a window's index table is output positions x
// window positions, two sizes a client picks, built at compile time. One of
// 34 GB (a 4096-wide window over 2^20 of padding; the result itself is 4 MB)
// is refused against the budget instead of being allocated.
TEST(ConvolutionTest, WindowTableBeyondTheBudgetIsResourceExhausted) {
  MemoryBudget budget(int64_t{64} << 20, "the test budget");
  MemoryBudget* previous = MemoryBudget::Process();
  MemoryBudget::SetProcess(&budget);
  ConvSpec s = Nhwc({1, 1, 1}, {4096, 1, 1}, {Win{4096, 1, 0, 1 << 20}});
  absl::StatusOr<std::unique_ptr<Executable>> compiled =
      Executable::Compile(ConvModule(s, xla::F32, xla::F32, xla::F32), {});
  MemoryBudget::SetProcess(previous);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(compiled.status().message().find(
                "convolution: the window's index table (1044482 output "
                "positions x 4096 window positions) needs 34225586176 bytes, "
                "more than is left of the test budget (0 of 67108864 bytes "
                "committed); use a smaller window or output"),
            std::string::npos)
      << compiled.status();
}

TEST(ConvolutionTest, S8ResultWraps) {
  // 100 * 2 = 200 wraps to -56 in s8 (as an s32 accumulation truncated).
  ConvSpec s = Nhwc({1, 1, 1}, {1, 1, 1}, {Win{1}});
  absl::StatusOr<Literal> out =
      RunModule(ConvModule(s, xla::S8, xla::S8, xla::S8),
                {Vec<int8_t>(xla::S8, {1, 1, 1}, {100}),
                 Vec<int8_t>(xla::S8, {1, 1, 1}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int8_t>(*out), (std::vector<int8_t>{-56}));
}

TEST(ConvolutionTest, ThreadedMatchesReference) {
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  ConvSpec s =
      Nhwc({3, 17, 13, 8}, {3, 3, 8, 16}, {Win{3, 1, 1, 1}, Win{3, 1, 1, 1}});
  CheckConv<float, float, float>(s, xla::F32, xla::F32, xla::F32, false,
                                 &device);
  ConvSpec g = s;
  g.fgc = 4;
  g.rhs_dims = {3, 3, 2, 16};
  CheckConv<float, float, float>(g, xla::F32, xla::F32, xla::F32, false,
                                 &device);
  // Depthwise (one input feature per group): the direct pass, with
  // batches, padding and strides, on the pool.
  ConvSpec dw =
      Nhwc({3, 17, 13, 8}, {3, 3, 1, 8}, {Win{3, 2, 1, 1}, Win{3, 1, 1, 1}});
  dw.fgc = 8;
  CheckConv<float, float, float>(dw, xla::F32, xla::F32, xla::F32, false,
                                 &device);
  // 1x1 direct path.
  CheckConv<float, float, float>(
      Nhwc({2, 9, 9, 8}, {1, 1, 8, 5}, {Win{1}, Win{1}}), xla::F32, xla::F32,
      xla::F32, false, &device);
}

TEST(ConvolutionTest, TpuNumericsRoundsOperandsToBf16) {
  // x = 1 + 2^-10 + 2^-20 is not a bf16 (8 significant bits): hi = 1,
  // lo = bf16(2^-10 + 2^-20) = 2^-10; w = 3 is exact. DEFAULT: 1 * 3 = 3.
  // HIGH (bf16x3): 3 + 3*2^-10, losing the 2^-20 term. HIGHEST and the exact
  // mode: x * 3 = 3 + 3*2^-10 + 3*2^-20 (exact in f32).
  const float x = 1.0f + std::ldexp(1.0f, -10) + std::ldexp(1.0f, -20);
  ConvSpec s = Nhwc({1, 1, 1}, {1, 1, 1}, {Win{1}});
  auto run = [&](bool tpu, int precision) {
    CompileOptions options;
    options.tpu_numerics = tpu;
    absl::StatusOr<Literal> out =
        RunModule(ConvModule(s, xla::F32, xla::F32, xla::F32, precision),
                  {Vec<float>(xla::F32, {1, 1, 1}, {x}),
                   Vec<float>(xla::F32, {1, 1, 1}, {3})},
                  options);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? Values<float>(*out)[0] : -1.0f;
  };
  EXPECT_EQ(run(false, 0), x * 3);
  EXPECT_EQ(run(true, 0), 3.0f);
  EXPECT_EQ(run(true, 1), 3.0f + 3 * std::ldexp(1.0f, -10));
  EXPECT_EQ(run(true, 2), x * 3);
}

TEST(ConvolutionTest, RejectsMismatchedFeatures) {
  ConvSpec s = Nhwc({1, 4, 3}, {2, 2, 1}, {Win{2}});
  absl::StatusOr<Literal> out =
      RunModule(ConvModule(s, xla::F32, xla::F32, xla::F32),
                {Literal::Zeros(S(xla::F32, {1, 4, 3})),
                 Literal::Zeros(S(xla::F32, {2, 2, 1}))});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("input feature size 3"),
            std::string::npos)
      << out.status();
}

TEST(ConvolutionTest, RejectsWrongResultShapeAndBadWindow) {
  ConvSpec s = Nhwc({1, 4, 1}, {2, 1, 1}, {Win{2}});
  xla::HloModuleProto m = ConvModule(s, xla::F32, xla::F32, xla::F32);
  // Window size disagreeing with the kernel.
  for (auto& c : *m.mutable_computations()) {
    for (auto& i : *c.mutable_instructions()) {
      if (i.opcode() == "convolution") {
        i.mutable_window()->mutable_dimensions(0)->set_size(3);
      }
    }
  }
  absl::StatusOr<std::unique_ptr<Executable>> e =
      Executable::Compile(m, CompileOptions());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("kernel's spatial size"),
            std::string::npos)
      << e.status();
}

}  // namespace
}  // namespace tpu::emulator::interpreter
