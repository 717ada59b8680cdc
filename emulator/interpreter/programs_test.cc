// Whole programs checked against independent C++ reference computations:
// an MLP training step (forward, backward, SGD), a CNN, attention with softmax,
// sort-based top-k, and a real TensorFlow module from the HLO corpus.

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

using testing::RunHlo;
using testing::Values;
using testing::Vec;

std::vector<float> Pattern(int n, float scale, float phase) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = scale * std::sin(0.7f * i + phase);
  return v;
}

constexpr char kMlpStep[] = R"(
HloModule mlp_step

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

ENTRY step {
  x = f32[4,3] parameter(0)
  y = f32[4,2] parameter(1)
  w1 = f32[3,5] parameter(2)
  b1 = f32[5] parameter(3)
  w2 = f32[5,2] parameter(4)
  b2 = f32[2] parameter(5)
  xw = f32[4,5] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b1b = f32[4,5] broadcast(b1), dimensions={1}
  z = f32[4,5] add(xw, b1b)
  zero = f32[] constant(0)
  zeros = f32[4,5] broadcast(zero), dimensions={}
  h = f32[4,5] maximum(z, zeros)
  hw = f32[4,2] dot(h, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b2b = f32[4,2] broadcast(b2), dimensions={1}
  o = f32[4,2] add(hw, b2b)
  diff = f32[4,2] subtract(o, y)
  sq = f32[4,2] multiply(diff, diff)
  total = f32[] reduce(sq, zero), dimensions={0,1}, to_apply=add
  n = f32[] constant(8)
  loss = f32[] divide(total, n)
  scale = f32[] constant(0.25)
  scaleb = f32[4,2] broadcast(scale), dimensions={}
  do = f32[4,2] multiply(diff, scaleb)
  dw2 = f32[5,2] dot(h, do), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  db2 = f32[2] reduce(do, zero), dimensions={0}, to_apply=add
  dh = f32[4,5] dot(do, w2), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  pos = pred[4,5] compare(z, zeros), direction=GT
  dz = f32[4,5] select(pos, dh, zeros)
  dw1 = f32[3,5] dot(x, dz), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  db1 = f32[5] reduce(dz, zero), dimensions={0}, to_apply=add
  lr = f32[] constant(0.1)
  lr35 = f32[3,5] broadcast(lr), dimensions={}
  lr5 = f32[5] broadcast(lr), dimensions={}
  lr52 = f32[5,2] broadcast(lr), dimensions={}
  lr2 = f32[2] broadcast(lr), dimensions={}
  u1 = f32[3,5] multiply(dw1, lr35)
  w1n = f32[3,5] subtract(w1, u1)
  v1 = f32[5] multiply(db1, lr5)
  b1n = f32[5] subtract(b1, v1)
  u2 = f32[5,2] multiply(dw2, lr52)
  w2n = f32[5,2] subtract(w2, u2)
  v2 = f32[2] multiply(db2, lr2)
  b2n = f32[2] subtract(b2, v2)
  ROOT out = (f32[], f32[3,5], f32[5], f32[5,2], f32[2]) tuple(loss, w1n, b1n, w2n, b2n)
}
)";

TEST(ProgramsTest, MlpTrainingStepMatchesReference) {
  std::vector<float> x = Pattern(12, 1.0f, 0.1f), y = Pattern(8, 0.5f, 1.0f),
                     w1 = Pattern(15, 0.6f, 2.0f), b1 = Pattern(5, 0.1f, 3.0f),
                     w2 = Pattern(10, 0.7f, 4.0f), b2 = Pattern(2, 0.1f, 5.0f);
  // Reference in double.
  double z[4][5], h[4][5], o[4][2], d[4][2], loss = 0;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 5; ++j) {
      z[i][j] = b1[j];
      for (int k = 0; k < 3; ++k)
        z[i][j] += double(x[i * 3 + k]) * w1[k * 5 + j];
      h[i][j] = std::max(z[i][j], 0.0);
    }
    for (int j = 0; j < 2; ++j) {
      o[i][j] = b2[j];
      for (int k = 0; k < 5; ++k) o[i][j] += h[i][k] * w2[k * 2 + j];
      const double e = o[i][j] - y[i * 2 + j];
      loss += e * e / 8;
      d[i][j] = e / 4;  // d(mean sq)/do = 2 e / 8
    }
  }
  std::vector<double> w1n(15), b1n(5), w2n(10), b2n(2);
  for (int k = 0; k < 5; ++k) {
    for (int j = 0; j < 2; ++j) {
      double g = 0;
      for (int i = 0; i < 4; ++i) g += h[i][k] * d[i][j];
      w2n[k * 2 + j] = w2[k * 2 + j] - 0.1 * g;
    }
  }
  for (int j = 0; j < 2; ++j) {
    double g = 0;
    for (int i = 0; i < 4; ++i) g += d[i][j];
    b2n[j] = b2[j] - 0.1 * g;
  }
  double dz[4][5];
  for (int i = 0; i < 4; ++i) {
    for (int k = 0; k < 5; ++k) {
      double g = 0;
      for (int j = 0; j < 2; ++j) g += d[i][j] * w2[k * 2 + j];
      dz[i][k] = z[i][k] > 0 ? g : 0;
    }
  }
  for (int k = 0; k < 3; ++k) {
    for (int j = 0; j < 5; ++j) {
      double g = 0;
      for (int i = 0; i < 4; ++i) g += double(x[i * 3 + k]) * dz[i][j];
      w1n[k * 5 + j] = w1[k * 5 + j] - 0.1 * g;
    }
  }
  for (int j = 0; j < 5; ++j) {
    double g = 0;
    for (int i = 0; i < 4; ++i) g += dz[i][j];
    b1n[j] = b1[j] - 0.1 * g;
  }

  std::vector<Literal> args;
  args.push_back(Vec<float>(xla::F32, {4, 3}, x));
  args.push_back(Vec<float>(xla::F32, {4, 2}, y));
  args.push_back(Vec<float>(xla::F32, {3, 5}, w1));
  args.push_back(Vec<float>(xla::F32, {5}, b1));
  args.push_back(Vec<float>(xla::F32, {5, 2}, w2));
  args.push_back(Vec<float>(xla::F32, {2}, b2));
  absl::StatusOr<Literal> out = RunHlo(kMlpStep, std::move(args));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(Values<float>(out->element(0))[0], loss, 1e-6);
  auto expect_all = [](const Literal& l, const std::vector<double>& want) {
    std::vector<float> got = Values<float>(l);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-6) << i;
    }
  };
  expect_all(out->element(1), w1n);
  expect_all(out->element(2), b1n);
  expect_all(out->element(3), w2n);
  expect_all(out->element(4), b2n);
}

// A small CNN: 3x3 SAME convolution (NHWC, HWIO) + bias + relu, 2x2 max-pool
// by reduce-window, flatten, dense, softmax.
const std::string kCnn =
    absl::StrCat("HloModule cnn\n", testing::kScalarMaxAndAdd, R"(
ENTRY cnn {
  x = f32[2,6,6,3] parameter(0)
  k = f32[3,3,3,4] parameter(1)
  bias = f32[4] parameter(2)
  w = f32[36,5] parameter(3)
  conv = f32[2,6,6,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  bb = f32[2,6,6,4] broadcast(bias), dimensions={3}
  z = f32[2,6,6,4] add(conv, bb)
  zero = f32[] constant(0)
  zeros = f32[2,6,6,4] broadcast(zero), dimensions={}
  h = f32[2,6,6,4] maximum(z, zeros)
  ninf = f32[] constant(-inf)
  pool = f32[2,3,3,4] reduce-window(h, ninf), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max
  flat = f32[2,36] reshape(pool)
  logits = f32[2,5] dot(flat, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  m = f32[2] reduce(logits, ninf), dimensions={1}, to_apply=max
  mb = f32[2,5] broadcast(m), dimensions={0}
  shifted = f32[2,5] subtract(logits, mb)
  e = f32[2,5] exponential(shifted)
  sum = f32[2] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[2,5] broadcast(sum), dimensions={0}
  ROOT p = f32[2,5] divide(e, sb)
}
)");

TEST(ProgramsTest, CnnMatchesReference) {
  const std::vector<float> x = Pattern(2 * 6 * 6 * 3, 1.0f, 0.2f),
                           k = Pattern(3 * 3 * 3 * 4, 0.5f, 1.1f),
                           bias = Pattern(4, 0.1f, 2.0f),
                           w = Pattern(36 * 5, 0.3f, 0.7f);
  // Reference in double, straight from the definitions.
  double h[2][6][6][4];
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < 6; ++j) {
        for (int o = 0; o < 4; ++o) {
          double acc = bias[o];
          for (int di = 0; di < 3; ++di) {
            for (int dj = 0; dj < 3; ++dj) {
              const int si = i + di - 1, sj = j + dj - 1;
              if (si < 0 || si >= 6 || sj < 0 || sj >= 6) continue;
              for (int c = 0; c < 3; ++c) {
                acc += double(x[((b * 6 + si) * 6 + sj) * 3 + c]) *
                       k[((di * 3 + dj) * 3 + c) * 4 + o];
              }
            }
          }
          h[b][i][j][o] = std::max(acc, 0.0);
        }
      }
    }
  }
  std::vector<double> want(10);
  for (int b = 0; b < 2; ++b) {
    double flat[36];
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        for (int o = 0; o < 4; ++o) {
          flat[(i * 3 + j) * 4 + o] = std::max(
              {h[b][2 * i][2 * j][o], h[b][2 * i + 1][2 * j][o],
               h[b][2 * i][2 * j + 1][o], h[b][2 * i + 1][2 * j + 1][o]});
        }
      }
    }
    double logits[5], top = -INFINITY, total = 0;
    for (int n = 0; n < 5; ++n) {
      logits[n] = 0;
      for (int f = 0; f < 36; ++f) logits[n] += flat[f] * w[f * 5 + n];
      top = std::max(top, logits[n]);
    }
    for (int n = 0; n < 5; ++n) total += std::exp(logits[n] - top);
    for (int n = 0; n < 5; ++n) {
      want[b * 5 + n] = std::exp(logits[n] - top) / total;
    }
  }
  std::vector<Literal> args;
  args.push_back(Vec<float>(xla::F32, {2, 6, 6, 3}, x));
  args.push_back(Vec<float>(xla::F32, {3, 3, 3, 4}, k));
  args.push_back(Vec<float>(xla::F32, {4}, bias));
  args.push_back(Vec<float>(xla::F32, {36, 5}, w));
  absl::StatusOr<Literal> out = RunHlo(kCnn, std::move(args));
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> got = Values<float>(*out);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

const std::string kAttention =
    absl::StrCat("HloModule attention\n", testing::kScalarMaxAndAdd, R"(
ENTRY attention {
  q = f32[2,4,8] parameter(0)
  k = f32[2,4,8] parameter(1)
  v = f32[2,4,8] parameter(2)
  s = f32[2,4,4] dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  c = f32[] constant(0.35355339)
  cb = f32[2,4,4] broadcast(c), dimensions={}
  scaled = f32[2,4,4] multiply(s, cb)
  ninf = f32[] constant(-inf)
  m = f32[2,4] reduce(scaled, ninf), dimensions={2}, to_apply=max
  mb = f32[2,4,4] broadcast(m), dimensions={0,1}
  shifted = f32[2,4,4] subtract(scaled, mb)
  e = f32[2,4,4] exponential(shifted)
  zero = f32[] constant(0)
  sum = f32[2,4] reduce(e, zero), dimensions={2}, to_apply=add
  sb = f32[2,4,4] broadcast(sum), dimensions={0,1}
  p = f32[2,4,4] divide(e, sb)
  ROOT o = f32[2,4,8] dot(p, v), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
)");

TEST(ProgramsTest, AttentionWithSoftmaxMatchesReference) {
  std::vector<float> q = Pattern(64, 1.0f, 0.3f), k = Pattern(64, 1.0f, 1.3f),
                     v = Pattern(64, 1.0f, 2.3f);
  std::vector<double> want(64);
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 4; ++i) {
      double s[4], mx = -1e30, sum = 0;
      for (int j = 0; j < 4; ++j) {
        s[j] = 0;
        for (int d = 0; d < 8; ++d) {
          s[j] += double(q[(b * 4 + i) * 8 + d]) * k[(b * 4 + j) * 8 + d];
        }
        s[j] /= std::sqrt(8.0);
        mx = std::max(mx, s[j]);
      }
      for (int j = 0; j < 4; ++j) sum += (s[j] = std::exp(s[j] - mx));
      for (int d = 0; d < 8; ++d) {
        double acc = 0;
        for (int j = 0; j < 4; ++j) acc += s[j] / sum * v[(b * 4 + j) * 8 + d];
        want[(b * 4 + i) * 8 + d] = acc;
      }
    }
  }
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  for (const Eigen::ThreadPoolDevice* dev :
       {static_cast<const Eigen::ThreadPoolDevice*>(nullptr),
        static_cast<const Eigen::ThreadPoolDevice*>(&device)}) {
    std::vector<Literal> args;
    args.push_back(Vec<float>(xla::F32, {2, 4, 8}, q));
    args.push_back(Vec<float>(xla::F32, {2, 4, 8}, k));
    args.push_back(Vec<float>(xla::F32, {2, 4, 8}, v));
    absl::StatusOr<Literal> out = RunHlo(kAttention, std::move(args), {}, dev);
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<float> got = Values<float>(*out);
    for (int i = 0; i < 64; ++i) EXPECT_NEAR(got[i], want[i], 2e-6) << i;
  }
}

TEST(ProgramsTest, SortBasedTopK) {
  absl::StatusOr<Literal> out =
      RunHlo(R"(
HloModule topk
greater {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT gt = pred[] compare(a, b), direction=GT, type=TOTALORDER
}
ENTRY topk {
  x = f32[2,6] parameter(0)
  idx = s32[2,6] iota(), iota_dimension=1
  s = (f32[2,6], s32[2,6]) sort(x, idx), dimensions={1}, is_stable=true, to_apply=greater
  sv = f32[2,6] get-tuple-element(s), index=0
  si = s32[2,6] get-tuple-element(s), index=1
  tv = f32[2,3] slice(sv), slice={[0:2], [0:3]}
  ti = s32[2,3] slice(si), slice={[0:2], [0:3]}
  ROOT t = (f32[2,3], s32[2,3]) tuple(tv, ti)
})",
             {Vec<float>(xla::F32, {2, 6},
                         {0.5f, 3, -1, 3, 2, NAN, -4, -2, -3, -1, -5, -6})});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> tv = Values<float>(out->element(0));
  // TOTALORDER puts NaN above everything.
  EXPECT_TRUE(std::isnan(tv[0]));
  EXPECT_EQ(tv[1], 3);
  EXPECT_EQ(tv[2], 3);
  EXPECT_EQ(tv[3], -1);
  EXPECT_EQ(tv[4], -2);
  EXPECT_EQ(tv[5], -3);
  EXPECT_EQ(Values<int32_t>(out->element(1)),
            (std::vector<int32_t>{5, 1, 3, 3, 1, 2}));
}

std::string ReadTestFile(const std::string& name) {
  std::ifstream in("emulator/interpreter/testdata/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ProgramsTest, GraphSageFromTensorFlowRuns) {
  const std::string text = ReadTestFile("graphsage_tf.hlo");
  ASSERT_FALSE(text.empty());
  auto args = [] {
    std::vector<int32_t> a0(10), a1(1280), a2 = {7};
    for (int i = 0; i < 10; ++i) a0[i] = (i * 37) % 100;
    for (int i = 0; i < 1280; ++i) a1[i] = (i * 53 + 11) % 100;
    std::vector<Literal> v;
    v.push_back(Vec<int32_t>(xla::S32, {10}, a0));
    v.push_back(Vec<int32_t>(xla::S32, {128, 10}, a1));
    v.push_back(Vec<int32_t>(xla::S32, {1}, a2));
    return v;
  };
  absl::StatusOr<Literal> one = RunHlo(text, args());
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->shape().ToString(), "f32[1,121]");
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  absl::StatusOr<Literal> two = RunHlo(text, args(), {}, &device);
  ASSERT_TRUE(two.ok()) << two.status();
  std::vector<float> x = Values<float>(*one), y = Values<float>(*two);
  bool nonzero = false;
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(std::isfinite(x[i])) << i;
    EXPECT_NEAR(x[i], y[i], 1e-5 * std::max(1.0f, std::abs(x[i]))) << i;
    nonzero |= x[i] != 0;
  }
  EXPECT_TRUE(nonzero);
}

}  // namespace
}  // namespace tpu::emulator::interpreter
