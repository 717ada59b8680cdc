// Dots through the interpreter on every library route of gemm_routine.h,
// against a double-precision reference: odd shapes, transposed operands,
// batch dimensions in any position, bf16 operands and results, TPU numerics.

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

const Eigen::ThreadPoolDevice* Pool() {
  static Eigen::ThreadPool* pool = new Eigen::ThreadPool(2);
  static Eigen::ThreadPoolDevice* device = new Eigen::ThreadPoolDevice(pool, 2);
  return device;
}

// A dot with at most one batch and one contracting dimension per operand.
struct DotCase {
  std::vector<int64_t> lhs, rhs;
  int lhs_batch = -1, rhs_batch = -1;  // -1: none
  int lhs_contracting, rhs_contracting;
  std::string operand_type = "f32", result_type = "f32";
  std::string precision;  // e.g. "high" (TPU numerics)
};

std::vector<int64_t> ResultDims(const DotCase& c) {
  std::vector<int64_t> dims;
  if (c.lhs_batch >= 0) dims.push_back(c.lhs[c.lhs_batch]);
  for (int d = 0; d < static_cast<int>(c.lhs.size()); ++d) {
    if (d != c.lhs_batch && d != c.lhs_contracting) dims.push_back(c.lhs[d]);
  }
  for (int d = 0; d < static_cast<int>(c.rhs.size()); ++d) {
    if (d != c.rhs_batch && d != c.rhs_contracting) dims.push_back(c.rhs[d]);
  }
  return dims;
}

std::string Hlo(const DotCase& c) {
  std::string attrs;
  if (c.lhs_batch >= 0) {
    attrs = absl::StrCat("lhs_batch_dims={", c.lhs_batch, "}, rhs_batch_dims={",
                         c.rhs_batch, "}, ");
  }
  absl::StrAppend(&attrs, "lhs_contracting_dims={", c.lhs_contracting,
                  "}, rhs_contracting_dims={", c.rhs_contracting, "}");
  if (!c.precision.empty()) {
    absl::StrAppend(&attrs, ", operand_precision={", c.precision, ",",
                    c.precision, "}");
  }
  return absl::StrCat(
      "ENTRY e {\n  a = ", c.operand_type, "[", absl::StrJoin(c.lhs, ","),
      "] parameter(0)\n  b = ", c.operand_type, "[", absl::StrJoin(c.rhs, ","),
      "] parameter(1)\n  ROOT d = ", c.result_type, "[",
      absl::StrJoin(ResultDims(c), ","), "] dot(a, b), ", attrs, "\n}\n");
}

Literal Random(const std::string& type, const std::vector<int64_t>& dims,
               uint32_t seed, std::vector<float>* values) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  values->resize(n);
  for (float& v : *values) v = dist(rng);
  if (type == "bf16") {
    std::vector<Eigen::bfloat16> b(values->begin(), values->end());
    for (int64_t i = 0; i < n; ++i) (*values)[i] = static_cast<float>(b[i]);
    return testing::Vec<Eigen::bfloat16>(xla::BF16, dims, b);
  }
  return testing::Vec<float>(xla::F32, dims, *values);
}

// Element i of the result, in double, by walking the dot's definition.
std::vector<double> Reference(const DotCase& c, const std::vector<float>& a,
                              const std::vector<float>& b) {
  auto strides = [](const std::vector<int64_t>& dims) {
    std::vector<int64_t> s(dims.size(), 1);
    for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
      s[d] = s[d + 1] * dims[d + 1];
    }
    return s;
  };
  const std::vector<int64_t> sa = strides(c.lhs), sb = strides(c.rhs);
  auto free_dim = [](const std::vector<int64_t>& dims, int batch, int k) {
    for (int d = 0; d < static_cast<int>(dims.size()); ++d) {
      if (d != batch && d != k) return d;
    }
    return -1;
  };
  const int lf = free_dim(c.lhs, c.lhs_batch, c.lhs_contracting);
  const int rf = free_dim(c.rhs, c.rhs_batch, c.rhs_contracting);
  const int64_t batch = c.lhs_batch >= 0 ? c.lhs[c.lhs_batch] : 1;
  const int64_t m = lf >= 0 ? c.lhs[lf] : 1, n = rf >= 0 ? c.rhs[rf] : 1;
  const int64_t k = c.lhs[c.lhs_contracting];
  std::vector<double> out;
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          int64_t ia = p * sa[c.lhs_contracting],
                  ib = p * sb[c.rhs_contracting];
          if (c.lhs_batch >= 0) ia += bi * sa[c.lhs_batch];
          if (c.rhs_batch >= 0) ib += bi * sb[c.rhs_batch];
          if (lf >= 0) ia += i * sa[lf];
          if (rf >= 0) ib += j * sb[rf];
          sum += static_cast<double>(a[ia]) * b[ib];
        }
        out.push_back(sum);
      }
    }
  }
  return out;
}

void Check(const DotCase& c) {
  SCOPED_TRACE(Hlo(c));
  std::vector<float> av, bv;
  Literal a = Random(c.operand_type, c.lhs, 1, &av);
  Literal b = Random(c.operand_type, c.rhs, 2, &bv);
  CompileOptions options;
  options.tpu_numerics = !c.precision.empty();
  absl::StatusOr<Literal> out =
      testing::RunHlo(Hlo(c), {std::move(a), std::move(b)}, options, Pool());
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> want = Reference(c, av, bv);
  std::vector<float> got = c.result_type == "f32" ? testing::Values<float>(*out)
                                                  : testing::FloatValues(*out);
  ASSERT_EQ(want.size(), got.size());
  const int64_t k = c.lhs[c.lhs_contracting];
  // f32 accumulation of k products of magnitude <= 4 in any order; a bf16
  // result adds its rounding (2^-8 relative); TPU HIGH precision (bf16x3)
  // loses about 2^-16 relative per product.
  double tolerance = 8.0 * (k + 1) * std::ldexp(1.0, -23);
  double relative = 0;
  if (c.result_type == "bf16") relative = std::ldexp(1.0, -8);
  if (c.precision == "high") tolerance += 4.0 * k * std::ldexp(1.0, -16);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(want[i], got[i], tolerance + relative * std::fabs(want[i]))
        << "element " << i;
  }
}

TEST(DotRoutesTest, LargeProductsOnOneDnn) {
  for (const char* type : {"f32", "bf16"}) {
    DotCase plain{{67, 53}, {53, 131}, -1, -1, 1, 0, type};
    Check(plain);
    DotCase lhs_t{{53, 67}, {53, 131}, -1, -1, 0, 0, type};
    Check(lhs_t);
    DotCase rhs_t{{67, 53}, {131, 53}, -1, -1, 1, 1, type};
    Check(rhs_t);
    DotCase both_t{{53, 67}, {131, 53}, -1, -1, 0, 1, type};
    Check(both_t);
    DotCase batched{{3, 129, 97}, {3, 97, 65}, 0, 0, 2, 1, type};
    Check(batched);
    // Batch dimensions in the middle: the operands are permuted first.
    DotCase middle{{129, 3, 97}, {97, 3, 65}, 1, 1, 2, 0, type};
    Check(middle);
    DotCase tall{{1000, 77}, {77, 5}, -1, -1, 1, 0, type};
    Check(tall);
  }
}

TEST(DotRoutesTest, SmallBatchesOnLibxsmm) {
  for (const char* type : {"f32", "bf16"}) {
    DotCase small{{37, 5, 3}, {37, 3, 7}, 0, 0, 2, 1, type};
    Check(small);
    DotCase medium{{300, 17, 9}, {300, 9, 33}, 0, 0, 2, 1, type};
    Check(medium);
  }
}

TEST(DotRoutesTest, MatrixVectorAndSmallTransposedOnEigen) {
  DotCase matvec{{513, 300}, {300}, -1, -1, 1, 0};
  Check(matvec);
  DotCase vecmat{{300}, {300, 257}, -1, -1, 0, 0, "bf16"};
  Check(vecmat);
  DotCase small_t{{5, 13, 9}, {5, 11, 13}, 0, 0, 1, 2};
  Check(small_t);
}

TEST(DotRoutesTest, Bf16Result) {
  DotCase c{{67, 53}, {53, 131}, -1, -1, 1, 0, "bf16", "bf16"};
  Check(c);
}

TEST(DotRoutesTest, TpuHighPrecisionAccumulatesOnEveryRoute) {
  DotCase large{{67, 53}, {53, 131}, -1, -1, 1, 0, "f32", "f32", "high"};
  Check(large);
  DotCase small{{37, 5, 3}, {37, 3, 7}, 0, 0, 2, 1, "f32", "f32", "high"};
  Check(small);
}

}  // namespace
}  // namespace tpu::emulator::interpreter
