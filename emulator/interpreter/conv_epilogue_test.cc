// Convolutions fused with bias add, activation floor and max pool
// (conv_epilogue.h): values against a double-precision reference, the exact
// semantics of the replaced instructions (NaN, signed zeros, operand order),
// and the patterns that must not fuse.

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

using testing::Values;
using testing::Vec;

const Eigen::ThreadPoolDevice* Pool() {
  static Eigen::ThreadPool* pool = new Eigen::ThreadPool(2);
  static Eigen::ThreadPoolDevice* device = new Eigen::ThreadPoolDevice(pool, 2);
  return device;
}

// x: [2, 9, 7, 5] NHWC, kernel [3, 3, 5, 6] HWIO, SAME padding, then the
// stages in %STAGES; the root is %ROOT.
constexpr char kTemplate[] = R"(
ENTRY e {
  x = f32[2,9,7,5] parameter(0)
  k = f32[3,3,5,6] parameter(1)
  bias = f32[6] parameter(2)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  y = f32[2,9,7,6] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  bb = f32[2,9,7,6] broadcast(bias), dimensions={3}
  z = f32[2,9,7,6] add(y, bb)
  zeros = f32[2,9,7,6] broadcast(zero), dimensions={}
  r = f32[2,9,7,6] maximum(z, zeros)
  ROOT p = f32[2,4,3,6] reduce-window(r, ninf), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max
}
)";

std::string Module(const std::string& body) {
  return absl::StrCat("HloModule m\n", testing::kScalarMaxAndAdd, body);
}

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct Inputs {
  std::vector<float> x = Random(2 * 9 * 7 * 5, 1), k = Random(3 * 3 * 5 * 6, 2),
                     bias = Random(6, 3);
};

// conv + bias, relu, 2x2 pool in double.
std::vector<double> Reference(const Inputs& in, bool bias, bool relu,
                              bool pool) {
  std::vector<double> y(2 * 9 * 7 * 6);
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 9; ++h)
      for (int w = 0; w < 7; ++w)
        for (int o = 0; o < 6; ++o) {
          double sum = 0;
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw)
              for (int c = 0; c < 5; ++c) {
                const int ih = h + kh - 1, iw = w + kw - 1;
                if (ih < 0 || ih >= 9 || iw < 0 || iw >= 7) continue;
                sum +=
                    static_cast<double>(in.x[((n * 9 + ih) * 7 + iw) * 5 + c]) *
                    in.k[((kh * 3 + kw) * 5 + c) * 6 + o];
              }
          if (bias) sum += in.bias[o];
          if (relu) sum = std::max(sum, 0.0);
          y[((n * 9 + h) * 7 + w) * 6 + o] = sum;
        }
  if (!pool) return y;
  std::vector<double> p;
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 4; ++h)
      for (int w = 0; w < 3; ++w)
        for (int o = 0; o < 6; ++o) {
          double m = -INFINITY;
          for (int dh = 0; dh < 2; ++dh)
            for (int dw = 0; dw < 2; ++dw) {
              m = std::max(m,
                           y[((n * 9 + 2 * h + dh) * 7 + 2 * w + dw) * 6 + o]);
            }
          p.push_back(m);
        }
  return p;
}

void ExpectNear(const std::vector<double>& want,
                const std::vector<float>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(want[i], got[i], 1e-5) << "element " << i;
  }
}

absl::StatusOr<Literal> RunCnn(const std::string& body, const Inputs& in,
                               ExecutionStats* stats = nullptr) {
  return testing::RunHlo(Module(body),
                         {Vec<float>(xla::F32, {2, 9, 7, 5}, in.x),
                          Vec<float>(xla::F32, {3, 3, 5, 6}, in.k),
                          Vec<float>(xla::F32, {6}, in.bias)},
                         {}, Pool(), stats);
}

TEST(ConvEpilogueTest, BiasReluPoolMatchesReference) {
  Inputs in;
  ExecutionStats stats;
  absl::StatusOr<Literal> out = RunCnn(kTemplate, in, &stats);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear(Reference(in, true, true, true), Values<float>(*out));
  // One kernel for y, bb, z, zeros, r, p; plus the two constants.
  EXPECT_EQ(stats.instructions_executed, 3);
}

TEST(ConvEpilogueTest, PartialPatterns) {
  Inputs in;
  struct Case {
    std::string root;
    bool bias, relu, pool;
  };
  const std::string no_pool = "f32[2,9,7,6]";
  for (const Case& c : std::vector<Case>{
           {"z", true, false, false},
           {"r", true, true, false},
           {"relu_only", false, true, false},
           {"pool_only", false, false, true},
           {"bias_pool", true, false, true},
       }) {
    SCOPED_TRACE(c.root);
    std::string body = kTemplate;
    if (c.root == "z" || c.root == "r") {
      body = absl::StrReplaceAll(
          body, {{"  ROOT p = f32[2,4,3,6]", "  p = f32[2,4,3,6]"},
                 {absl::StrCat("  ", c.root, " = "),
                  absl::StrCat("  ROOT ", c.root, " = ")}});
    } else if (c.root == "relu_only") {
      body = absl::StrReplaceAll(
          body, {{"  ROOT p = f32[2,4,3,6]", "  p = f32[2,4,3,6]"},
                 {"  r = f32[2,9,7,6] maximum(z, zeros)",
                  "  ROOT r = f32[2,9,7,6] maximum(zeros, y)"}});
    } else if (c.root == "pool_only") {
      body = absl::StrReplaceAll(
          body, {{"reduce-window(r, ninf)", "reduce-window(y, ninf)"}});
    } else {
      body = absl::StrReplaceAll(
          body, {{"reduce-window(r, ninf)", "reduce-window(z, ninf)"}});
    }
    absl::StatusOr<Literal> out = RunCnn(body, in);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear(Reference(in, c.bias, c.relu, c.pool), Values<float>(*out));
  }
}

// A value with another user stays unfused and the results agree.
TEST(ConvEpilogueTest, SharedValuesDoNotFuse) {
  Inputs in;
  const std::string body = absl::StrReplaceAll(
      kTemplate,
      {{"  ROOT p = f32[2,4,3,6] reduce-window(r, ninf), window={size=1x2x2x1 "
        "stride=1x2x2x1}, to_apply=max",
        "  p = f32[2,4,3,6] reduce-window(r, ninf), window={size=1x2x2x1 "
        "stride=1x2x2x1}, to_apply=max\n  ROOT t = (f32[2,4,3,6], "
        "f32[2,9,7,6]) tuple(p, z)"}});
  absl::StatusOr<Literal> out = RunCnn(body, in);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<Literal> parts = std::move(*out).DecomposeTuple();
  ExpectNear(Reference(in, true, true, true), Values<float>(parts[0]));
  ExpectNear(Reference(in, true, false, false), Values<float>(parts[1]));
}

// With a 1x1 identity kernel the convolution is exact, so the epilogue's
// results must equal the replaced instructions' bit for bit: NaN propagates
// through maximum and the pool, and maximum(-0, +0) keeps its first
// operand's choice.
TEST(ConvEpilogueTest, ExactSemantics) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-0.0f, 0.0f,  -1.0f, 2.0f,
                                nan,   -3.0f, 5.0f,  -0.0f};
  for (bool floor_first : {false, true}) {
    SCOPED_TRACE(floor_first);
    const std::string text =
        absl::StrCat("HloModule m\n", testing::kScalarMaxAndAdd, R"(
ENTRY e {
  x = f32[1,2,4,1] parameter(0)
  k = f32[1,1,1,1] constant({{{{1}}}})
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  y = f32[1,2,4,1] convolution(x, k), window={size=1x1}, dim_labels=b01f_01io->b01f
  zeros = f32[1,2,4,1] broadcast(zero), dimensions={}
  r = f32[1,2,4,1] maximum()",
                     floor_first ? "zeros, y" : "y, zeros", R"()
  ROOT t = (f32[1,2,4,1], f32[1,2,4,1]) tuple(r, r)
})");
    // Unfused reference run: r has two users, so nothing fuses.
    absl::StatusOr<Literal> plain = testing::RunHlo(
        text, {Vec<float>(xla::F32, {1, 2, 4, 1}, x)}, {}, Pool());
    ASSERT_TRUE(plain.ok()) << plain.status();
    const std::vector<float> want =
        Values<float>(std::move(*plain).DecomposeTuple()[0]);
    const std::string fused_text = absl::StrReplaceAll(
        text,
        {{"  ROOT t = (f32[1,2,4,1], f32[1,2,4,1]) tuple(r, r)\n", ""},
         {"  r = f32[1,2,4,1] maximum(", "  ROOT r = f32[1,2,4,1] maximum("}});
    absl::StatusOr<Literal> fused = testing::RunHlo(
        fused_text, {Vec<float>(xla::F32, {1, 2, 4, 1}, x)}, {}, Pool());
    ASSERT_TRUE(fused.ok()) << fused.status();
    const std::vector<float> got = Values<float>(*fused);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(std::isnan(want[i]), std::isnan(got[i])) << i;
      if (!std::isnan(want[i])) {
        EXPECT_EQ(want[i], got[i]) << i;
        EXPECT_EQ(std::signbit(want[i]), std::signbit(got[i])) << i;
      }
    }
    // Pool of the relu: NaN in a window wins.
    std::string pooled = absl::StrReplaceAll(
        fused_text, {{"  ROOT r = f32[1,2,4,1]", "  r = f32[1,2,4,1]"}});
    pooled.insert(pooled.rfind('}'),
                  "  ROOT p = f32[1,1,2,1] reduce-window(r, ninf), "
                  "window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max\n");
    absl::StatusOr<Literal> pool = testing::RunHlo(
        pooled, {Vec<float>(xla::F32, {1, 2, 4, 1}, x)}, {}, Pool());
    ASSERT_TRUE(pool.ok()) << pool.status();
    const std::vector<float> p = Values<float>(*pool);
    EXPECT_TRUE(std::isnan(p[0]));  // relu of {-0, 0, nan, -3}
    EXPECT_EQ(p[1], 5.0f);          // relu of {-1, 2, 5, -0}
  }
}

}  // namespace
}  // namespace tpu::emulator::interpreter

namespace tpu::emulator::interpreter {
namespace {

// bf16 convolution -> bias add -> relu6 (clamp), as TensorFlow's MobileNet
// dumps it: fused and unfused (the clamp input has a second user) results
// must be identical bit for bit, depthwise and pointwise.
TEST(ConvEpilogueTest, Bf16ClampMatchesUnfusedExactly) {
  for (const char* conv :
       {"window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
        "feature_group_count=6",
        "window={size=1x1}, dim_labels=b01f_01io->b01f"}) {
    SCOPED_TRACE(conv);
    const bool depthwise = std::string(conv).find("group") != std::string::npos;
    const std::string kernel = depthwise ? "bf16[3,3,1,6]" : "bf16[1,1,6,6]";
    const std::string body = absl::StrCat(R"(
ENTRY e {
  x = bf16[2,5,7,6] parameter(0)
  k = )",
                                          kernel, R"( parameter(1)
  bias = bf16[6] parameter(2)
  zero = bf16[] constant(0)
  six = bf16[] constant(6)
  y = bf16[2,5,7,6] convolution(x, k), )",
                                          conv, R"(
  bb = bf16[2,5,7,6] broadcast(bias), dimensions={3}
  z = bf16[2,5,7,6] add(y, bb)
  lo = bf16[2,5,7,6] broadcast(zero), dimensions={}
  hi = bf16[2,5,7,6] broadcast(six), dimensions={}
  ROOT r = bf16[2,5,7,6] clamp(lo, z, hi)
}
)");
    std::vector<float> x = Random(2 * 5 * 7 * 6, 4);
    for (float& v : x) v *= 8;  // some results above 6, some below 0
    std::vector<float> k = Random(depthwise ? 54 : 36, 5), b = Random(6, 6);
    auto bf16s = [](const std::vector<float>& v) {
      return std::vector<Eigen::bfloat16>(v.begin(), v.end());
    };
    auto run = [&](const std::string& text, ExecutionStats* stats) {
      return testing::RunHlo(
          Module(text),
          {Vec<Eigen::bfloat16>(xla::BF16, {2, 5, 7, 6}, bf16s(x)),
           Vec<Eigen::bfloat16>(xla::BF16,
                                depthwise ? std::vector<int64_t>{3, 3, 1, 6}
                                          : std::vector<int64_t>{1, 1, 6, 6},
                                bf16s(k)),
           Vec<Eigen::bfloat16>(xla::BF16, {6}, bf16s(b))},
          {}, Pool(), stats);
    };
    ExecutionStats stats;
    absl::StatusOr<Literal> fused = run(body, &stats);
    ASSERT_TRUE(fused.ok()) << fused.status();
    EXPECT_EQ(stats.instructions_executed, 3);  // fused kernel + 2 constants
    absl::StatusOr<Literal> plain = run(
        absl::StrReplaceAll(
            body, {{"  ROOT r = bf16[2,5,7,6] clamp(lo, z, hi)",
                    "  r = bf16[2,5,7,6] clamp(lo, z, hi)\n"
                    "  ROOT t = (bf16[2,5,7,6], bf16[2,5,7,6]) tuple(r, z)"}}),
        nullptr);
    ASSERT_TRUE(plain.ok()) << plain.status();
    const std::vector<float> want =
        testing::FloatValues(std::move(*plain).DecomposeTuple()[0]);
    const std::vector<float> got = testing::FloatValues(*fused);
    ASSERT_EQ(want.size(), got.size());
    int clamped = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(want[i], got[i]) << i;
      clamped += got[i] == 0.0f || got[i] == 6.0f;
    }
    EXPECT_GT(clamped, 0);
  }
}

}  // namespace
}  // namespace tpu::emulator::interpreter

namespace tpu::emulator::interpreter {
namespace {

// A 2-D NHWC convolution (kernel HWIO, feature_group_count 1 or C) with
// bias and relu6, in double.
struct Conv2d {
  int64_t n, h, w, c, kh, kw, o, stride, pad_lo, pad_hi;
  bool depthwise;
  int64_t oh() const { return (h + pad_lo + pad_hi - kh) / stride + 1; }
  int64_t ow() const { return (w + pad_lo + pad_hi - kw) / stride + 1; }
  int64_t ki() const { return depthwise ? 1 : c; }
};

std::vector<double> Relu6Reference(const Conv2d& s, const std::vector<float>& x,
                                   const std::vector<float>& k,
                                   const std::vector<float>& bias,
                                   double ceiling = 6.0) {
  std::vector<double> out;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t y = 0; y < s.oh(); ++y)
      for (int64_t xo = 0; xo < s.ow(); ++xo)
        for (int64_t o = 0; o < s.o; ++o) {
          double sum = 0;
          for (int64_t dy = 0; dy < s.kh; ++dy)
            for (int64_t dx = 0; dx < s.kw; ++dx) {
              const int64_t iy = y * s.stride + dy - s.pad_lo;
              const int64_t ix = xo * s.stride + dx - s.pad_lo;
              if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
              for (int64_t i = 0; i < s.ki(); ++i) {
                const int64_t c = s.depthwise ? o : i;
                sum += static_cast<double>(
                           x[((n * s.h + iy) * s.w + ix) * s.c + c]) *
                       k[((dy * s.kw + dx) * s.ki() + i) * s.o + o];
              }
            }
          out.push_back(std::min(ceiling, std::max(0.0, sum + bias[o])));
        }
  return out;
}

// Convolution -> bias -> relu6 with the epilogue run on rows in cache: the
// direct product's oneDNN row tiles (pointwise), im2col tiles (3x3, stride
// 2) and depthwise rows (blocks of 16 features and a tail), in f32 and
// bf16. Fused results equal the unfused instructions' bit for bit and the
// double reference within the element type's rounding.
TEST(ConvEpilogueTest, RowEpiloguesMatchUnfusedAndReference) {
  const std::vector<Conv2d> shapes = {
      {2, 16, 16, 64, 1, 1, 72, 1, 0, 0, false},
      {2, 11, 9, 5, 3, 3, 24, 2, 0, 1, false},
      {2, 11, 9, 37, 3, 3, 37, 2, 0, 1, true},
      {1, 10, 12, 48, 3, 3, 48, 1, 1, 1, true},
      {1, 5, 5, 64, 3, 3, 64, 2, 0, 1, false},  // few rows: one product
  };
  for (const Conv2d& s : shapes) {
    for (const char* type : {"f32", "bf16"}) {
      SCOPED_TRACE(absl::StrCat(type, " c=", s.c, " k=", s.kh,
                                " depthwise=", s.depthwise));
      const bool bf16 = std::string(type) == "bf16";
      const std::string in =
          absl::StrCat(type, "[", s.n, ",", s.h, ",", s.w, ",", s.c, "]");
      const std::string out =
          absl::StrCat(type, "[", s.n, ",", s.oh(), ",", s.ow(), ",", s.o, "]");
      const std::string kernel =
          absl::StrCat(type, "[", s.kh, ",", s.kw, ",", s.ki(), ",", s.o, "]");
      const std::string window = absl::StrCat(
          "window={size=", s.kh, "x", s.kw, " stride=", s.stride, "x", s.stride,
          " pad=", s.pad_lo, "_", s.pad_hi, "x", s.pad_lo, "_", s.pad_hi,
          "}, dim_labels=b01f_01io->b01f",
          s.depthwise ? absl::StrCat(", feature_group_count=", s.c) : "");
      const std::string body = absl::StrCat(
          "ENTRY e {\n  x = ", in, " parameter(0)\n  k = ", kernel,
          " parameter(1)\n  bias = ", type, "[", s.o,
          "] parameter(2)\n  zero = ", type, "[] constant(0)\n  six = ", type,
          "[] constant(6)\n  y = ", out, " convolution(x, k), ", window,
          "\n  bb = ", out, " broadcast(bias), dimensions={3}\n  z = ", out,
          " add(y, bb)\n  lo = ", out,
          " broadcast(zero), dimensions={}\n  hi = ", out,
          " broadcast(six), dimensions={}\n  ROOT r = ", out,
          " clamp(lo, z, hi)\n}\n");
      std::vector<float> x = Random(s.n * s.h * s.w * s.c, 7);
      for (float& v : x) v *= 4;
      std::vector<float> k = Random(s.kh * s.kw * s.ki() * s.o, 8);
      std::vector<float> b = Random(s.o, 9);
      if (bf16) {  // the reference sees the operands the kernel sees
        for (std::vector<float>* v : {&x, &k, &b}) {
          for (float& e : *v) e = static_cast<float>(Eigen::bfloat16(e));
        }
      }
      auto literal = [&](const std::vector<float>& v,
                         std::vector<int64_t> dims) {
        return bf16 ? Vec<Eigen::bfloat16>(
                          xla::BF16, dims,
                          std::vector<Eigen::bfloat16>(v.begin(), v.end()))
                    : Vec<float>(xla::F32, dims, v);
      };
      auto run = [&](const std::string& text, ExecutionStats* stats) {
        return testing::RunHlo(
            Module(text),
            {literal(x, {s.n, s.h, s.w, s.c}),
             literal(k, {s.kh, s.kw, s.ki(), s.o}), literal(b, {s.o})},
            {}, Pool(), stats);
      };
      ExecutionStats stats;
      absl::StatusOr<Literal> fused = run(body, &stats);
      ASSERT_TRUE(fused.ok()) << fused.status();
      EXPECT_EQ(stats.instructions_executed, 3);  // fused kernel + constants
      absl::StatusOr<Literal> plain = run(
          absl::StrReplaceAll(
              body,
              {{absl::StrCat("  ROOT r = ", out, " clamp(lo, z, hi)"),
                absl::StrCat("  r = ", out, " clamp(lo, z, hi)\n  ROOT t = (",
                             out, ", ", out, ") tuple(r, z)")}}),
          nullptr);
      ASSERT_TRUE(plain.ok()) << plain.status();
      const std::vector<float> want =
          testing::FloatValues(std::move(*plain).DecomposeTuple()[0]);
      const std::vector<float> got = testing::FloatValues(*fused);
      const std::vector<double> reference = Relu6Reference(s, x, k, b);
      ASSERT_EQ(want.size(), got.size());
      ASSERT_EQ(reference.size(), got.size());
      int inside = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(want[i], got[i]) << i;
        // bf16: the convolution and the sum are each rounded to 8 bits.
        ASSERT_NEAR(got[i], reference[i], bf16 ? 0.1 : 1e-4) << i;
        inside += got[i] > 0.0f && got[i] < 6.0f;
      }
      EXPECT_GT(inside, static_cast<int>(got.size() / 20));
    }
  }
}

// Convolution -> bias -> relu -> 2x2 max pool with the epilogue on im2col
// tiles of whole pool windows (output height divisible by the pool; the
// last, odd column is dropped): bit for bit the unfused instructions, and
// the double reference.
TEST(ConvEpilogueTest, PooledTilesMatchUnfusedAndReference) {
  const std::vector<Conv2d> shapes = {
      {3, 8, 7, 5, 3, 3, 6, 1, 1, 1, false},
      {2, 16, 16, 3, 3, 3, 32, 1, 1, 1, false},
  };
  for (const Conv2d& s : shapes) {
    for (const char* type : {"f32", "bf16"}) {
      SCOPED_TRACE(absl::StrCat(type, " c=", s.c));
      const bool bf16 = std::string(type) == "bf16";
      const std::string out =
          absl::StrCat(type, "[", s.n, ",", s.oh(), ",", s.ow(), ",", s.o, "]");
      const std::string pooled = absl::StrCat(type, "[", s.n, ",", s.oh() / 2,
                                              ",", s.ow() / 2, ",", s.o, "]");
      const std::string body = absl::StrCat(
          "max_", type, " {\n  a = ", type, "[] parameter(0)\n  b = ", type,
          "[] parameter(1)\n  ROOT m = ", type, "[] maximum(a, b)\n}\n",
          "ENTRY e {\n  x = ", type, "[", s.n, ",", s.h, ",", s.w, ",", s.c,
          "] parameter(0)\n  k = ", type, "[", s.kh, ",", s.kw, ",", s.c, ",",
          s.o, "] parameter(1)\n  bias = ", type, "[", s.o,
          "] parameter(2)\n  zero = ", type, "[] constant(0)\n  ninf = ", type,
          "[] constant(-inf)\n  y = ", out,
          " convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
          "dim_labels=b01f_01io->b01f\n  bb = ",
          out, " broadcast(bias), dimensions={3}\n  z = ", out,
          " add(y, bb)\n  zeros = ", out,
          " broadcast(zero), dimensions={}\n  r = ", out,
          " maximum(z, zeros)\n  ROOT p = ", pooled,
          " reduce-window(r, ninf), window={size=1x2x2x1 stride=1x2x2x1}, "
          "to_apply=max_",
          type, "\n}\n");
      std::vector<float> x = Random(s.n * s.h * s.w * s.c, 10);
      std::vector<float> k = Random(s.kh * s.kw * s.c * s.o, 11);
      std::vector<float> b = Random(s.o, 12);
      if (bf16) {
        for (std::vector<float>* v : {&x, &k, &b}) {
          for (float& e : *v) e = static_cast<float>(Eigen::bfloat16(e));
        }
      }
      auto literal = [&](const std::vector<float>& v,
                         std::vector<int64_t> dims) {
        return bf16 ? Vec<Eigen::bfloat16>(
                          xla::BF16, dims,
                          std::vector<Eigen::bfloat16>(v.begin(), v.end()))
                    : Vec<float>(xla::F32, dims, v);
      };
      auto run = [&](const std::string& text, ExecutionStats* stats) {
        return testing::RunHlo(
            Module(text),
            {literal(x, {s.n, s.h, s.w, s.c}),
             literal(k, {s.kh, s.kw, s.c, s.o}), literal(b, {s.o})},
            {}, Pool(), stats);
      };
      ExecutionStats stats;
      absl::StatusOr<Literal> fused = run(body, &stats);
      ASSERT_TRUE(fused.ok()) << fused.status();
      EXPECT_EQ(stats.instructions_executed, 3);  // fused kernel + constants
      absl::StatusOr<Literal> plain =
          run(absl::StrReplaceAll(
                  body, {{absl::StrCat("  ROOT p = ", pooled),
                          absl::StrCat("  ROOT t = (", pooled, ", ", out,
                                       ") tuple(p, r)\n  p = ", pooled)}}),
              nullptr);
      ASSERT_TRUE(plain.ok()) << plain.status();
      const std::vector<float> want =
          testing::FloatValues(std::move(*plain).DecomposeTuple()[0]);
      const std::vector<float> got = testing::FloatValues(*fused);
      const std::vector<double> relu =
          Relu6Reference(s, x, k, b, std::numeric_limits<double>::infinity());
      ASSERT_EQ(want.size(), got.size());
      size_t i = 0;
      for (int64_t n = 0; n < s.n; ++n)
        for (int64_t py = 0; py < s.oh() / 2; ++py)
          for (int64_t px = 0; px < s.ow() / 2; ++px)
            for (int64_t o = 0; o < s.o; ++o, ++i) {
              double m = -INFINITY;
              for (int64_t dy = 0; dy < 2; ++dy)
                for (int64_t dx = 0; dx < 2; ++dx) {
                  m = std::max(
                      m,
                      relu[((n * s.oh() + 2 * py + dy) * s.ow() + 2 * px + dx) *
                               s.o +
                           o]);
                }
              ASSERT_EQ(want[i], got[i]) << i;
              ASSERT_NEAR(got[i], m, bf16 ? 0.05 : 1e-5) << i;
            }
      EXPECT_EQ(i, got.size());
    }
  }
}

}  // namespace
}  // namespace tpu::emulator::interpreter
