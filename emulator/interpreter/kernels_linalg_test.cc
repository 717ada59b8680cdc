// cholesky and triangular-solve through Executable::Compile/Execute.

#include <cmath>
#include <complex>
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
using testing::Values;
using testing::Vec;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

absl::StatusOr<Literal> RunCholesky(const Literal& a, bool lower) {
  HloModuleBuilder m("cholesky");
  ComputationBuilder& e = m.Entry();
  int64_t p = e.Param(a.shape());
  e.Op("cholesky", a.shape(), {p}, [&](xla::HloInstructionProto& i) {
    i.mutable_cholesky_options()->set_lower(lower);
  });
  return RunModule(m.Build(), {a});
}

TEST(CholeskyTest, HandComputedLowerAndUpper) {
  // [[4 2] [2 5]] = L L^T with L = [[2 0] [1 2]].
  // The ignored triangle holds garbage (99) to show it is not read.
  absl::StatusOr<Literal> lower =
      RunCholesky(Vec<float>(xla::F32, {2, 2}, {4, 99, 2, 5}), true);
  ASSERT_TRUE(lower.ok()) << lower.status();
  EXPECT_EQ(Values<float>(*lower), (std::vector<float>{2, 0, 1, 2}));
  absl::StatusOr<Literal> upper =
      RunCholesky(Vec<float>(xla::F32, {2, 2}, {4, 2, 99, 5}), false);
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_EQ(Values<float>(*upper), (std::vector<float>{2, 1, 0, 2}));
}

TEST(CholeskyTest, Batched3x3F64) {
  // A = L L^T for L = [[3 0 0] [1 2 0] [-1 4 5]]; second batch element is
  // 4 * I.
  const std::vector<double> l = {3, 0, 0, 1, 2, 0, -1, 4, 5};
  std::vector<double> a(9);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) {
      for (int k = 0; k < 3; ++k) a[r * 3 + c] += l[r * 3 + k] * l[c * 3 + k];
    }
  }
  std::vector<double> both = a;
  for (double v : {4, 0, 0, 0, 4, 0, 0, 0, 4}) both.push_back(v);
  absl::StatusOr<Literal> out =
      RunCholesky(Vec<double>(xla::F64, {2, 3, 3}, both), true);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> got = Values<double>(*out);
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(got[i], l[i], 1e-12) << i;
  const std::vector<double> two = {2, 0, 0, 0, 2, 0, 0, 0, 2};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(got[9 + i], two[i]) << i;
}

TEST(CholeskyTest, NotPositiveDefiniteGivesNaNForThatMatrixOnly) {
  // Batch element 0 has a negative pivot; element 1 is fine.
  absl::StatusOr<Literal> out = RunCholesky(
      Vec<float>(xla::F32, {2, 2, 2}, {1, 0, 2, 1, 9, 0, 0, 16}), true);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> v = Values<float>(*out);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(v[i])) << i;
  EXPECT_EQ(std::vector<float>(v.begin() + 4, v.end()),
            (std::vector<float>{3, 0, 0, 4}));
}

TEST(CholeskyTest, ComplexHermitian) {
  // A = L L^H for L = [[2 0] [1-i 3]]: A = [[4, 2+2i] [2-2i, 11]].
  absl::StatusOr<Literal> out =
      RunCholesky(Vec<c64>(xla::C64, {2, 2},
                           {c64(4, 0), c64(0, 0), c64(2, -2), c64(11, 0)}),
                  true);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<c64> v = Values<c64>(*out);
  EXPECT_EQ(v[0], c64(2, 0));
  EXPECT_EQ(v[1], c64(0, 0));
  EXPECT_EQ(v[2], c64(1, -1));
  EXPECT_EQ(v[3], c64(3, 0));
  absl::StatusOr<Literal> wide =
      RunCholesky(Vec<c128>(xla::C128, {1, 1}, {c128(9, 0)}), true);
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(Values<c128>(*wide)[0], c128(3, 0));
}

TEST(CholeskyTest, SixteenBitFloatsAndRejections) {
  using bf16 = Eigen::bfloat16;
  absl::StatusOr<Literal> out = RunCholesky(
      Vec<bf16>(xla::BF16, {2, 2}, {bf16(4), bf16(0), bf16(2), bf16(5)}), true);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(testing::FloatValues(*out), (std::vector<float>{2, 0, 1, 2}));
  absl::StatusOr<Literal> bad =
      RunCholesky(Vec<float>(xla::F32, {2, 3}, {1, 2, 3, 4, 5, 6}), true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("square"), std::string::npos)
      << bad.status();
  absl::StatusOr<Literal> ints =
      RunCholesky(Vec<int32_t>(xla::S32, {1, 1}, {4}), true);
  ASSERT_FALSE(ints.ok());
  EXPECT_EQ(ints.status().code(), absl::StatusCode::kUnimplemented);
}

// ---------------------------------------------------------------------------

absl::StatusOr<Literal> RunSolve(const Literal& a, const Literal& b, bool left,
                                 bool lower, bool unit,
                                 xla::TriangularSolveOptions::Transpose t) {
  HloModuleBuilder m("solve");
  ComputationBuilder& e = m.Entry();
  int64_t pa = e.Param(a.shape());
  int64_t pb = e.Param(b.shape());
  e.Op("triangular-solve", b.shape(), {pa, pb},
       [&](xla::HloInstructionProto& i) {
         xla::TriangularSolveOptions* o = i.mutable_triangular_solve_options();
         o->set_left_side(left);
         o->set_lower(lower);
         o->set_unit_diagonal(unit);
         o->set_transpose_a(t);
       });
  return RunModule(m.Build(), {a, b});
}

// Dense op(a) with only the used triangle (and a unit diagonal if asked).
std::vector<c128> EffectiveA(const std::vector<c128>& a, int n, bool lower,
                             bool unit, int transpose) {
  std::vector<c128> tri(n * n);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) {
      if (r == c) {
        tri[r * n + c] = unit ? c128(1) : a[r * n + c];
      } else if (lower ? r > c : r < c) {
        tri[r * n + c] = a[r * n + c];
      }
    }
  }
  std::vector<c128> op(n * n);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) {
      const c128 v = transpose == 0 ? tri[r * n + c] : tri[c * n + r];
      op[r * n + c] = transpose == 2 ? std::conj(v) : v;
    }
  }
  return op;
}

TEST(TriangularSolveTest, AllEightOptionCombosAndThreeTransposes) {
  // a has garbage in the unused triangle and a non-unit diagonal; we check
  // op(a) x = b (or x op(a) = b) by multiplying back with the effective
  // matrix.
  const int n = 3;
  const std::vector<c128> a = {c128(2, 1),  c128(7, 7),  c128(9, -9),
                               c128(1, -1), c128(4, 0),  c128(8, 8),
                               c128(3, 2),  c128(-1, 1), c128(5, -2)};
  const std::vector<c128> b = {c128(1, 0), c128(2, 1),  c128(-3, 2),
                               c128(4, 4), c128(0, -1), c128(6, 0)};
  using T = xla::TriangularSolveOptions;
  for (bool left : {true, false}) {
    for (bool lower : {true, false}) {
      for (bool unit : {true, false}) {
        for (T::Transpose t : {T::NO_TRANSPOSE, T::TRANSPOSE, T::ADJOINT}) {
          SCOPED_TRACE(::testing::Message()
                       << "left=" << left << " lower=" << lower
                       << " unit=" << unit << " transpose=" << t);
          // b is 3x2 (left) or 2x3 (right).
          const std::vector<int64_t> bdims =
              left ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2, 3};
          absl::StatusOr<Literal> out =
              RunSolve(Vec<c128>(xla::C128, {3, 3}, a),
                       Vec<c128>(xla::C128, bdims, b), left, lower, unit, t);
          ASSERT_TRUE(out.ok()) << out.status();
          const std::vector<c128> x = Values<c128>(*out);
          const int transpose = t == T::NO_TRANSPOSE ? 0
                                : t == T::TRANSPOSE  ? 1
                                                     : 2;
          const std::vector<c128> op = EffectiveA(a, n, lower, unit, transpose);
          for (int r = 0; r < bdims[0]; ++r) {
            for (int c = 0; c < bdims[1]; ++c) {
              c128 acc = 0;
              if (left) {
                for (int k = 0; k < n; ++k) acc += op[r * n + k] * x[k * 2 + c];
              } else {
                for (int k = 0; k < n; ++k) acc += x[r * 3 + k] * op[k * n + c];
              }
              const c128 want = b[r * bdims[1] + c];
              EXPECT_NEAR(acc.real(), want.real(), 1e-12);
              EXPECT_NEAR(acc.imag(), want.imag(), 1e-12);
            }
          }
        }
      }
    }
  }
}

TEST(TriangularSolveTest, HandComputedRealLowerLeft) {
  // [[2 0] [1 4]] x = [[4] [10]] -> x = [2, 2]; upper garbage ignored.
  absl::StatusOr<Literal> out =
      RunSolve(Vec<float>(xla::F32, {2, 2}, {2, 100, 1, 4}),
               Vec<float>(xla::F32, {2, 1}, {4, 10}), true, true, false,
               xla::TriangularSolveOptions::NO_TRANSPOSE);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{2, 2}));
  // Unit diagonal: [[1 0] [1 1]] x = [4, 10] -> [4, 6].
  absl::StatusOr<Literal> unit =
      RunSolve(Vec<float>(xla::F32, {2, 2}, {2, 100, 1, 4}),
               Vec<float>(xla::F32, {2, 1}, {4, 10}), true, true, true,
               xla::TriangularSolveOptions::NO_TRANSPOSE);
  ASSERT_TRUE(unit.ok()) << unit.status();
  EXPECT_EQ(Values<float>(*unit), (std::vector<float>{4, 6}));
}

TEST(TriangularSolveTest, BatchedF64AndC64AndBf16) {
  // Two batch elements: diag(2, 4) and [[1 0] [2 1]].
  absl::StatusOr<Literal> out =
      RunSolve(Vec<double>(xla::F64, {2, 2, 2}, {2, 0, 0, 4, 1, 0, 2, 1}),
               Vec<double>(xla::F64, {2, 2, 1}, {2, 8, 3, 7}), true, true,
               false, xla::TriangularSolveOptions::NO_TRANSPOSE);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<double>(*out), (std::vector<double>{1, 2, 3, 1}));
  absl::StatusOr<Literal> c =
      RunSolve(Vec<c64>(xla::C64, {1, 1}, {c64(0, 2)}),
               Vec<c64>(xla::C64, {1, 1}, {c64(4, 0)}), true, true, false,
               xla::TriangularSolveOptions::ADJOINT);
  ASSERT_TRUE(c.ok()) << c.status();
  // conj(2i) x = 4 -> x = 4 / (-2i) = 2i.
  EXPECT_EQ(Values<c64>(*c)[0], c64(0, 2));
  using bf16 = Eigen::bfloat16;
  absl::StatusOr<Literal> h =
      RunSolve(Vec<bf16>(xla::BF16, {1, 1}, {bf16(4)}),
               Vec<bf16>(xla::BF16, {2, 1}, {bf16(2), bf16(6)}), false, false,
               false, xla::TriangularSolveOptions::TRANSPOSE);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(testing::FloatValues(*h), (std::vector<float>{0.5f, 1.5f}));
}

TEST(TriangularSolveTest, Rejections) {
  absl::StatusOr<Literal> invalid = RunSolve(
      Vec<float>(xla::F32, {1, 1}, {1}), Vec<float>(xla::F32, {1, 1}, {1}),
      true, true, false, xla::TriangularSolveOptions::TRANSPOSE_INVALID);
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(invalid.status().message().find("transpose_a"), std::string::npos)
      << invalid.status();
  absl::StatusOr<Literal> mismatch =
      RunSolve(Vec<float>(xla::F32, {2, 2}, {1, 0, 0, 1}),
               Vec<float>(xla::F32, {3, 1}, {1, 1, 1}), true, true, false,
               xla::TriangularSolveOptions::NO_TRANSPOSE);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.status().message().find("rows (3)"), std::string::npos)
      << mismatch.status();
}

}  // namespace
}  // namespace tpu::emulator::interpreter
