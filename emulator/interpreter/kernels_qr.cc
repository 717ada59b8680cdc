// The Qr and ProductOfElementaryHouseholderReflectors custom-calls, which
// XLA's CPU backend runs through its QrExpander, computed in double (real
// element types) with the expander's conventions:
//   Qr(a[..., m, n]) -> (a', taus[..., min(m, n)]): for j < min(m, n), the
//     Householder reflection H_j = I - tau_j v_j v_j^T of column j below the
//     diagonal, alpha = a[j, j], sigma = |a[j+1:, j]|^2; sigma == 0 gives
//     beta = alpha, tau = 0; otherwise beta = -sign(alpha) * hypot(alpha,
//     sqrt(sigma)) (sign(0) = +1), tau = (beta - alpha) / beta and
//     v = a[:, j] / (alpha - beta) with v[j] = 1. a' holds R on and above the
//     diagonal and v below it (LAPACK's geqrf layout).
//   ProductOfElementaryHouseholderReflectors(a[..., m, n], taus[..., k]) ->
//     the first n columns of H_0 H_1 ... H_{k-1} (LAPACK's orgqr), v_j read
//     from below the diagonal of a.

#include <cmath>

#include "emulator/interpreter/kernel_util.h"
#include "emulator/interpreter/qr.h"

namespace tpu::emulator::interpreter {
namespace {

// One m x n matrix in row-major order.
struct Matrix {
  double* data;
  int64_t m, n;
  double& at(int64_t i, int64_t j) { return data[i * n + j]; }
};

void QrInPlace(Matrix a, double* taus) {
  const int64_t p = std::min(a.m, a.n);
  for (int64_t j = 0; j < p; ++j) {
    const double alpha = a.at(j, j);
    double sigma = 0;
    for (int64_t i = j + 1; i < a.m; ++i) sigma += a.at(i, j) * a.at(i, j);
    double beta = alpha, tau = 0;
    if (sigma != 0) {
      const double mu = std::hypot(alpha, std::sqrt(sigma));
      beta = alpha < 0 ? mu : -mu;
      tau = (beta - alpha) / beta;
      for (int64_t i = j + 1; i < a.m; ++i) a.at(i, j) /= alpha - beta;
    }
    // a[:, j+1:] -= tau * v (v^T a[:, j+1:]), with v = (1, a[j+1:, j]).
    for (int64_t c = j + 1; c < a.n; ++c) {
      double dot = a.at(j, c);
      for (int64_t i = j + 1; i < a.m; ++i) dot += a.at(i, j) * a.at(i, c);
      a.at(j, c) -= tau * dot;
      for (int64_t i = j + 1; i < a.m; ++i)
        a.at(i, c) -= tau * dot * a.at(i, j);
    }
    a.at(j, j) = beta;
    taus[j] = tau;
  }
}

// q (m x n) = first n columns of H_0 ... H_{k-1}, from v below a's diagonal.
void HouseholderProduct(Matrix a, const double* taus, int64_t k, Matrix q) {
  for (int64_t i = 0; i < q.m; ++i) {
    for (int64_t c = 0; c < q.n; ++c) q.at(i, c) = i == c ? 1.0 : 0.0;
  }
  // Apply H_{k-1} first, then ... H_0, each from the left.
  for (int64_t j = k - 1; j >= 0; --j) {
    const double tau = taus[j];
    for (int64_t c = 0; c < q.n; ++c) {
      double dot = q.at(j, c);
      for (int64_t i = j + 1; i < q.m; ++i) dot += a.at(i, j) * q.at(i, c);
      q.at(j, c) -= tau * dot;
      for (int64_t i = j + 1; i < q.m; ++i)
        q.at(i, c) -= tau * dot * a.at(i, j);
    }
  }
}

absl::Status ExpectRealMatrix(const HloInstruction& instruction,
                              const Shape& shape) {
  if (absl::Status s = ExpectArray(shape, "operand"); !s.ok()) return s;
  if (shape.rank() < 2) {
    return Malformed(absl::StrCat(instruction.proto().custom_call_target(),
                                  " needs a matrix of rank >= 2, got ",
                                  shape.ToString()));
  }
  if (!IsFloatingPoint(shape.element_type())) {
    return absl::UnimplementedError(
        absl::StrCat("custom-call ", instruction.proto().custom_call_target(),
                     " on ", PrimitiveTypeName(shape.element_type()),
                     " is not supported (real floating-point types only)"));
  }
  return absl::OkStatus();
}

std::vector<int64_t> WithLast(std::vector<int64_t> dims, int64_t drop,
                              int64_t last) {
  dims.resize(dims.size() - drop);
  dims.push_back(last);
  return dims;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CompileQr(
    const HloInstruction& instruction) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape a = instruction.operand(0)->shape();
  if (absl::Status s = ExpectRealMatrix(instruction, a); !s.ok()) return s;
  const int64_t m = a.dimensions(a.rank() - 2), n = a.dimensions(a.rank() - 1);
  const Shape taus = Shape::Array(a.element_type(),
                                  WithLast(a.dimensions(), 2, std::min(m, n)));
  if (absl::Status s = ExpectResultShape(instruction, Shape::Tuple({a, taus}));
      !s.ok()) {
    return s;
  }
  return MakeKernel([a, taus, m, n](KernelContext&,
                                    absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    std::vector<double> values = ValuesAsDouble(*operands[0].value);
    std::vector<double> tau(taus.element_count());
    const int64_t p = std::min(m, n);
    for (int64_t b = 0; m * n > 0 && b < a.element_count() / (m * n); ++b) {
      QrInPlace(Matrix{values.data() + b * m * n, m, n}, tau.data() + b * p);
    }
    std::vector<Literal> parts;
    parts.push_back(LiteralFromDoubles(a, values));
    parts.push_back(LiteralFromDoubles(taus, tau));
    return Literal::Tuple(std::move(parts));
  });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileHouseholderProduct(
    const HloInstruction& instruction) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  const Shape a = instruction.operand(0)->shape();
  const Shape& taus = instruction.operand(1)->shape();
  if (absl::Status s = ExpectRealMatrix(instruction, a); !s.ok()) return s;
  const int64_t m = a.dimensions(a.rank() - 2), n = a.dimensions(a.rank() - 1);
  if (!taus.IsArray() || taus.element_type() != a.element_type() ||
      taus.rank() != a.rank() - 1 ||
      WithLast(taus.dimensions(), 1, 0) != WithLast(a.dimensions(), 2, 0) ||
      taus.dimensions(taus.rank() - 1) > std::min(m, n)) {
    return Malformed(absl::StrCat("taus ", taus.ToString(),
                                  " do not fit the reflectors of ",
                                  a.ToString()));
  }
  if (absl::Status s = ExpectResultShape(instruction, a); !s.ok()) return s;
  const int64_t k = taus.dimensions(taus.rank() - 1);
  return MakeKernel([a, m, n, k](KernelContext&,
                                 absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    std::vector<double> v = ValuesAsDouble(*operands[0].value);
    const std::vector<double> tau = ValuesAsDouble(*operands[1].value);
    std::vector<double> q(v.size());
    for (int64_t b = 0; m * n > 0 && b < a.element_count() / (m * n); ++b) {
      HouseholderProduct(Matrix{v.data() + b * m * n, m, n}, tau.data() + b * k,
                         k, Matrix{q.data() + b * m * n, m, n});
    }
    return LiteralFromDoubles(a, q);
  });
}

}  // namespace tpu::emulator::interpreter
