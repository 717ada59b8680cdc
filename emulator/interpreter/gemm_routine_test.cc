// Every route of gemm_routine.h against a double-precision reference: odd
// shapes, transposed operands, batches, accumulation, bf16 (both the
// AVX512-BF16 path and the exact fallback for denormals), and a check that
// no library starts threads of its own.

#include "emulator/interpreter/gemm_routine.h"

#include <dirent.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

Eigen::ThreadPoolDevice* Pool() {
  static Eigen::ThreadPool* pool = new Eigen::ThreadPool(2);
  static Eigen::ThreadPoolDevice* device = new Eigen::ThreadPoolDevice(pool, 2);
  return device;
}

uint16_t ToBf16(float f) {  // truncation: the test only needs bf16 values
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}
float FromBf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Operands as stored (transposed or not), and their values as floats.
struct Operands {
  std::vector<float> a, b;
  std::vector<uint16_t> a16, b16;
};

Operands Make(const GemmShape& s, bool bf16, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  Operands o;
  o.a.resize(s.batch * s.m * s.k);
  o.b.resize(s.batch * s.k * s.n);
  for (float& v : o.a) v = dist(rng);
  for (float& v : o.b) v = dist(rng);
  if (bf16) {
    for (float& v : o.a) o.a16.push_back(ToBf16(v)), v = FromBf16(o.a16.back());
    for (float& v : o.b) o.b16.push_back(ToBf16(v)), v = FromBf16(o.b16.back());
  }
  return o;
}

// out[b] (+)= A[b] * B[b] in double.
std::vector<double> Reference(const GemmShape& s, const Operands& o,
                              const std::vector<float>& initial) {
  std::vector<double> out(s.batch * s.m * s.n);
  for (int64_t b = 0; b < s.batch; ++b) {
    const float* a = o.a.data() + b * s.m * s.k;
    const float* bb = o.b.data() + b * s.k * s.n;
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double sum = initial.empty() ? 0 : initial[(b * s.m + i) * s.n + j];
        for (int64_t p = 0; p < s.k; ++p) {
          const double x = s.a_transposed ? a[p * s.m + i] : a[i * s.k + p];
          const double y = s.b_transposed ? bb[j * s.k + p] : bb[p * s.n + j];
          sum += x * y;
        }
        out[(b * s.m + i) * s.n + j] = sum;
      }
    }
  }
  return out;
}

// f32 accumulation of k products of magnitude <= 4: |error| <= k * 4 * 2^-23
// with room for any summation order.
void ExpectClose(const std::vector<double>& want, const std::vector<float>& got,
                 int64_t k) {
  ASSERT_EQ(want.size(), got.size());
  const double tolerance = 8.0 * (k + 1) * std::ldexp(1.0, -23);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(want[i], got[i], tolerance) << "element " << i;
  }
}

void Check(const GemmShape& s, bool bf16, GemmLibrary expected,
           const Eigen::ThreadPoolDevice* device) {
  SCOPED_TRACE(testing::Message()
               << "batch=" << s.batch << " m=" << s.m << " n=" << s.n
               << " k=" << s.k << " ta=" << s.a_transposed
               << " tb=" << s.b_transposed << " bf16=" << bf16);
  GemmRoutine r = GemmRoutine::Choose(s, bf16);
  EXPECT_EQ(GemmLibraryName(r.library()),
            std::string(GemmLibraryName(expected)));
  Operands o = Make(s, bf16, s.m * 131 + s.n * 7 + s.k);
  const void* a =
      r.bf16_operands() ? static_cast<const void*>(o.a16.data()) : o.a.data();
  const void* b =
      r.bf16_operands() ? static_cast<const void*>(o.b16.data()) : o.b.data();
  std::vector<float> out(s.batch * s.m * s.n, 123.0f);
  r.Run(device, a, b, out.data(), /*accumulate=*/false);
  ExpectClose(Reference(s, o, {}), out, s.k);
  if (r.bf16_operands()) return;  // dots never accumulate bf16 products
  std::vector<float> initial(out.size());
  for (size_t i = 0; i < initial.size(); ++i) initial[i] = 0.25f * (i % 7);
  out = initial;
  r.Run(device, a, b, out.data(), /*accumulate=*/true);
  ExpectClose(Reference(s, o, initial), out, s.k);
}

TEST(GemmRoutineTest, OneDnnLargeAndOddShapes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (const Eigen::ThreadPoolDevice* device :
           {static_cast<const Eigen::ThreadPoolDevice*>(nullptr),
            static_cast<const Eigen::ThreadPoolDevice*>(Pool())}) {
        Check({1, 67, 131, 53, ta, tb}, false, GemmLibrary::kOneDnn, device);
        Check({3, 129, 65, 97, ta, tb}, false, GemmLibrary::kOneDnn, device);
        Check({1, 1000, 5, 77, ta, tb}, false, GemmLibrary::kOneDnn, device);
        Check({1, 3, 700, 201, ta, tb}, false, GemmLibrary::kOneDnn, device);
      }
    }
  }
}

TEST(GemmRoutineTest, OneDnnBf16) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Check({1, 67, 131, 53, ta, tb}, true, GemmLibrary::kOneDnn, Pool());
      Check({2, 130, 66, 301, ta, tb}, true, GemmLibrary::kOneDnn, Pool());
    }
  }
  GemmRoutine r = GemmRoutine::Choose({1, 100, 100, 100}, true);
  EXPECT_TRUE(r.bf16_operands());
}

// RunRows: the product as Run computes it, and rows_done covers every row
// exactly once, with each block final when it is reported (checked against
// the reference inside the callback); oneDNN row tiles (f32 and bf16), a
// wide product (one call) and libxsmm (one call).
TEST(GemmRoutineTest, RunRowsReportsEveryRowOnceWhenFinal) {
  struct Case {
    GemmShape shape;
    bool bf16;
  };
  for (const Case& c : std::vector<Case>{{{1, 3000, 64, 32}, false},
                                         {{1, 2049, 72, 40}, true},
                                         {{1, 9, 512, 300}, false},
                                         {{1, 20, 16, 8}, false}}) {
    for (const Eigen::ThreadPoolDevice* device :
         {static_cast<const Eigen::ThreadPoolDevice*>(nullptr),
          static_cast<const Eigen::ThreadPoolDevice*>(Pool())}) {
      const GemmShape& s = c.shape;
      SCOPED_TRACE(testing::Message()
                   << "m=" << s.m << " n=" << s.n << " bf16=" << c.bf16
                   << " threaded=" << (device != nullptr));
      GemmRoutine r = GemmRoutine::Choose(s, c.bf16);
      Operands o = Make(s, c.bf16, 99);
      const void* a = r.bf16_operands() ? static_cast<const void*>(o.a16.data())
                                        : o.a.data();
      const void* b = r.bf16_operands() ? static_cast<const void*>(o.b16.data())
                                        : o.b.data();
      const std::vector<double> want = Reference(s, o, {});
      const double tolerance = 8.0 * (s.k + 1) * std::ldexp(1.0, -23);
      std::vector<float> out(s.m * s.n, 123.0f);
      std::vector<std::atomic<int>> reported(s.m);
      std::atomic<int> bad{0};
      r.RunRows(device, a, b, out.data(), [&](int64_t m0, int64_t m1) {
        for (int64_t i = m0; i < m1; ++i) {
          reported[i].fetch_add(1);
          for (int64_t j = 0; j < s.n; ++j) {
            if (std::abs(out[i * s.n + j] - want[i * s.n + j]) > tolerance) {
              bad.fetch_add(1);
            }
          }
        }
      });
      EXPECT_EQ(bad.load(), 0);
      for (int64_t i = 0; i < s.m; ++i) {
        ASSERT_EQ(reported[i].load(), 1) << "row " << i;
      }
      ExpectClose(want, out, s.k);
    }
  }
}

TEST(GemmRoutineTest, LibxsmmSmallBatches) {
  for (const Eigen::ThreadPoolDevice* device :
       {static_cast<const Eigen::ThreadPoolDevice*>(nullptr),
        static_cast<const Eigen::ThreadPoolDevice*>(Pool())}) {
    Check({37, 5, 7, 3}, false, GemmLibrary::kLibxsmm, device);
    Check({300, 17, 33, 9}, false, GemmLibrary::kLibxsmm, device);
    Check({2, 64, 64, 64}, false, GemmLibrary::kLibxsmm, device);
    Check({1, 31, 2, 45}, false, GemmLibrary::kLibxsmm, device);
  }
  // Small bf16 products are converted by the caller and run in f32.
  EXPECT_FALSE(GemmRoutine::Choose({8, 8, 8, 8}, true).bf16_operands());
  Check({8, 8, 8, 8}, true, GemmLibrary::kLibxsmm, Pool());
}

TEST(GemmRoutineTest, EigenMatrixVectorAndSmallTransposed) {
  Check({1, 513, 1, 300}, false, GemmLibrary::kEigen, Pool());
  Check({4, 1, 257, 100, true, true}, false, GemmLibrary::kEigen, Pool());
  Check({5, 9, 11, 13, true, false}, false, GemmLibrary::kEigen, Pool());
  Check({5, 9, 11, 13, false, true}, false, GemmLibrary::kEigen, nullptr);
}

// A product that is an f32 denormal must come out exactly, although the
// BF16 units would flush it to zero: the routine falls back to f32.
TEST(GemmRoutineTest, Bf16DenormalProductsAreExact) {
  const GemmShape s{1, 64, 64, 128};
  GemmRoutine r = GemmRoutine::Choose(s, true);
  ASSERT_TRUE(r.bf16_operands());
  std::vector<uint16_t> a(64 * 128, ToBf16(1.0f)), b(128 * 64, ToBf16(1.0f));
  for (int p = 0; p < 128; ++p) {
    a[p] = ToBf16(std::ldexp(1.0f, -70));       // row 0 of A
    b[p * 64] = ToBf16(std::ldexp(1.0f, -70));  // column 0 of B
  }
  std::vector<float> out(64 * 64);
  r.Run(Pool(), a.data(), b.data(), out.data(), false);
  EXPECT_EQ(out[0], 128 * std::ldexp(1.0f, -140));  // denormal products
  EXPECT_EQ(out[1], 128 * std::ldexp(1.0f, -70));
  EXPECT_EQ(out[64], 128 * std::ldexp(1.0f, -70));
  EXPECT_EQ(out[65], 128.0f);
}

TEST(GemmRoutineTest, Bf16ProductsStayNormal) {
  std::vector<uint16_t> x = {ToBf16(0.0f),
                             ToBf16(-0.0f),
                             ToBf16(1.0f),
                             ToBf16(std::ldexp(1.0f, -50)),
                             ToBf16(-std::ldexp(1.0f, -50)),
                             ToBf16(INFINITY),
                             ToBf16(NAN)};
  EXPECT_TRUE(Bf16ProductsStayNormal(x.data(), x.size()));
  x.push_back(ToBf16(std::ldexp(1.0f, -51)));
  EXPECT_FALSE(Bf16ProductsStayNormal(x.data(), x.size()));
  x.back() = ToBf16(-std::ldexp(1.0f, -130));  // a bf16 denormal
  EXPECT_FALSE(Bf16ProductsStayNormal(x.data(), x.size()));
}

int ThreadCount() {
  int n = 0;
  DIR* dir = opendir("/proc/self/task");
  while (dirent* e = readdir(dir)) n += e->d_name[0] != '.';
  closedir(dir);
  return n;
}

// The worker owns the only pool: no library may start threads behind it.
TEST(GemmRoutineTest, LibrariesStartNoThreads) {
  const Eigen::ThreadPoolDevice* device = Pool();
  const int before = ThreadCount();
  for (bool bf16 : {false, true}) {
    for (const GemmShape& s :
         {GemmShape{1, 512, 512, 512}, GemmShape{64, 16, 16, 16},
          GemmShape{1, 300, 1, 200}}) {
      GemmRoutine r = GemmRoutine::Choose(s, bf16);
      Operands o = Make(s, bf16, 1);
      std::vector<float> out(s.batch * s.m * s.n);
      r.Run(device, r.bf16_operands() ? (const void*)o.a16.data() : o.a.data(),
            r.bf16_operands() ? (const void*)o.b16.data() : o.b.data(),
            out.data(), false);
    }
  }
  EXPECT_EQ(ThreadCount(), before);
}

}  // namespace
}  // namespace tpu::emulator::interpreter
