// Kernel family: cholesky and triangular-solve over batches of matrices (the
// two minor dimensions), for f16, bf16 (computed in f32), f32, f64, c64 and
// c128.
//
// cholesky (XLA's semantics, as its CholeskyExpander defines them): with
// lower=true it reads only the lower triangle of a and returns L with
// a = L L^H and zeros above the diagonal; with lower=false it factors the
// transpose (not the adjoint) the same way and transposes the result back, so
// it reads the upper triangle and returns U with zeros below the diagonal. A
// matrix whose factorization takes the square root of a negative (or NaN)
// pivot is not positive definite: that batch element becomes all NaN.
//
// triangular-solve: solves op(a) x = b (left_side) or x op(a) = b, op being
// identity, transpose or adjoint; only the triangle named by `lower` is read,
// and with unit_diagonal the diagonal is taken as ones without being read.

#include "Eigen/Core"
#include "emulator/interpreter/elementwise_common.h"

namespace tpu::emulator::interpreter {
namespace {

template <typename T>
using LinalgType =
    std::conditional_t<std::is_same_v<T, bf16> || std::is_same_v<T, f16>, float,
                       T>;

template <typename T>
constexpr bool kLinalgType = kIsFloat<T> || kIsComplex<T>;

template <typename C>
C Conj(const C& v) {
  if constexpr (kIsComplex<C>) {
    return std::conj(v);
  } else {
    return v;
  }
}

template <typename C>
auto RealPart(const C& v) {
  if constexpr (kIsComplex<C>) {
    return v.real();
  } else {
    return v;
  }
}

// Batch count and matrix sizes of a [..., rows, cols] shape.
struct Batched {
  int64_t batch = 1, rows = 0, cols = 0;
};

Batched SplitBatch(const Shape& shape) {
  Batched b;
  for (int64_t d = 0; d + 2 < shape.rank(); ++d) b.batch *= shape.dimensions(d);
  b.rows = shape.dimensions(shape.rank() - 2);
  b.cols = shape.dimensions(shape.rank() - 1);
  return b;
}

// Lower Cholesky of the n x n row-major matrix `a` into `l` (reads the lower
// triangle only). Returns false if a pivot's square root was NaN.
template <typename C>
bool CholeskyLower(const C* a, int64_t n, C* l) {
  using Real = decltype(RealPart(C()));
  std::fill(l, l + n * n, C(0));
  for (int64_t j = 0; j < n; ++j) {
    C diag = a[j * n + j];
    for (int64_t k = 0; k < j; ++k) diag -= l[j * n + k] * Conj(l[j * n + k]);
    const Real pivot = std::sqrt(RealPart(diag));
    if (std::isnan(pivot)) return false;
    l[j * n + j] = C(pivot);
    for (int64_t r = j + 1; r < n; ++r) {
      C v = a[r * n + j];
      for (int64_t k = 0; k < j; ++k) v -= l[r * n + k] * Conj(l[j * n + k]);
      l[r * n + j] = v / C(pivot);
    }
  }
  return true;
}

template <typename T>
std::unique_ptr<Kernel> MakeCholesky(Shape shape, bool lower) {
  using C = LinalgType<T>;
  return MakeKernel([shape, lower](KernelContext& context,
                                   absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    const Batched b = SplitBatch(shape);
    const int64_t n = b.rows;
    const T* in = operands[0].value->data<T>().data();
    Literal out = Literal::Uninitialized(shape);
    T* dst = static_cast<T*>(out.mutable_untyped_data());
    ParallelFor(context.device(), b.batch, 2.0 * n * n * n / 3 + n * n,
                [&](int64_t begin, int64_t end) {
                  std::vector<C> a(n * n), l(n * n);
                  for (int64_t i = begin; i < end; ++i) {
                    const T* src = in + i * n * n;
                    for (int64_t r = 0; r < n; ++r) {
                      for (int64_t c = 0; c < n; ++c) {
                        // Upper: factor the plain transpose.
                        a[r * n + c] = static_cast<C>(lower ? src[r * n + c]
                                                            : src[c * n + r]);
                      }
                    }
                    const bool ok = CholeskyLower(a.data(), n, l.data());
                    T* o = dst + i * n * n;
                    for (int64_t r = 0; r < n; ++r) {
                      for (int64_t c = 0; c < n; ++c) {
                        const C v = lower ? l[r * n + c] : l[c * n + r];
                        if (ok) {
                          o[r * n + c] = static_cast<T>(v);
                        } else {
                          o[r * n + c] = static_cast<T>(
                              C(std::numeric_limits<float>::quiet_NaN()));
                        }
                      }
                    }
                  }
                });
    return out;
  });
}

absl::Status CheckSquareBatch(const Shape& shape, const char* what) {
  if (shape.rank() < 2) {
    return Malformed(
        absl::StrCat(what, " must have rank >= 2, got ", shape.ToString()));
  }
  if (shape.dimensions(shape.rank() - 1) !=
      shape.dimensions(shape.rank() - 2)) {
    return Malformed(absl::StrCat(what,
                                  " must be (batches of) square "
                                  "matrices, got ",
                                  shape.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileCholesky(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& a = instruction.operand(0)->shape();
  if (absl::Status s = ExpectArray(a, "cholesky operand"); !s.ok()) return s;
  if (absl::Status s = CheckSquareBatch(a, "cholesky operand"); !s.ok()) {
    return s;
  }
  if (absl::Status s = ExpectResultShape(instruction, a); !s.ok()) return s;
  const bool lower = instruction.proto().cholesky_options().lower();
  const xla::PrimitiveType type = a.element_type();
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (kLinalgType<T>) {
          return MakeCholesky<T>(a, lower);
        } else {
          return UnsupportedType(instruction, type);
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

struct SolvePlan {
  Shape result;
  bool left_side = true;
  bool lower = true;  // of op(a), after transposition
  bool unit_diagonal = false;
  int transpose = 0;  // 0 none, 1 transpose, 2 adjoint
};

template <typename T>
std::unique_ptr<Kernel> MakeTriangularSolve(SolvePlan plan) {
  using C = LinalgType<T>;
  using Matrix =
      Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  return MakeKernel(
      [plan](KernelContext& context,
             absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const Batched bb = SplitBatch(plan.result);
        const int64_t k = plan.left_side ? bb.rows : bb.cols;
        const T* a_all = operands[0].value->data<T>().data();
        const T* b_all = operands[1].value->data<T>().data();
        Literal out = Literal::Uninitialized(plan.result);
        T* dst = static_cast<T*>(out.mutable_untyped_data());
        ParallelFor(
            context.device(), bb.batch, 1.0 * k * k * (bb.rows + bb.cols),
            [&](int64_t begin, int64_t end) {
              Matrix m(k, k), x(bb.rows, bb.cols);
              for (int64_t i = begin; i < end; ++i) {
                const T* a = a_all + i * k * k;
                for (int64_t r = 0; r < k; ++r) {
                  for (int64_t c = 0; c < k; ++c) {
                    const C v = static_cast<C>(
                        plan.transpose == 0 ? a[r * k + c] : a[c * k + r]);
                    m(r, c) = plan.transpose == 2 ? Conj(v) : v;
                  }
                }
                const T* b = b_all + i * bb.rows * bb.cols;
                for (int64_t j = 0; j < bb.rows * bb.cols; ++j) {
                  x.data()[j] = static_cast<C>(b[j]);
                }
                auto solve = [&](auto view) {
                  if (plan.left_side) {
                    view.solveInPlace(x);
                  } else {
                    view.template solveInPlace<Eigen::OnTheRight>(x);
                  }
                };
                if (plan.lower) {
                  if (plan.unit_diagonal) {
                    solve(m.template triangularView<Eigen::UnitLower>());
                  } else {
                    solve(m.template triangularView<Eigen::Lower>());
                  }
                } else {
                  if (plan.unit_diagonal) {
                    solve(m.template triangularView<Eigen::UnitUpper>());
                  } else {
                    solve(m.template triangularView<Eigen::Upper>());
                  }
                }
                T* o = dst + i * bb.rows * bb.cols;
                for (int64_t j = 0; j < bb.rows * bb.cols; ++j) {
                  o[j] = static_cast<T>(x.data()[j]);
                }
              }
            });
        return out;
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileTriangularSolve(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  const Shape& a = instruction.operand(0)->shape();
  const Shape& b = instruction.operand(1)->shape();
  if (absl::Status s = ExpectArray(a, "triangular-solve a"); !s.ok()) return s;
  if (absl::Status s = ExpectArray(b, "triangular-solve b"); !s.ok()) return s;
  if (absl::Status s = CheckSquareBatch(a, "triangular-solve a"); !s.ok()) {
    return s;
  }
  if (a.element_type() != b.element_type()) {
    return Malformed(
        absl::StrCat("triangular-solve operands must have the "
                     "same element type, got ",
                     a.ToString(), " and ", b.ToString()));
  }
  if (b.rank() != a.rank()) {
    return Malformed(
        absl::StrCat("triangular-solve a and b must have the "
                     "same rank, got ",
                     a.ToString(), " and ", b.ToString()));
  }
  for (int64_t d = 0; d + 2 < a.rank(); ++d) {
    if (a.dimensions(d) != b.dimensions(d)) {
      return Malformed(
          absl::StrCat("triangular-solve batch dimensions "
                       "differ: ",
                       a.ToString(), " vs ", b.ToString()));
    }
  }
  const xla::TriangularSolveOptions& options =
      instruction.proto().triangular_solve_options();
  const int64_t k = a.dimensions(a.rank() - 1);
  const int64_t shared = options.left_side() ? b.dimensions(b.rank() - 2)
                                             : b.dimensions(b.rank() - 1);
  if (shared != k) {
    return Malformed(absl::StrCat("triangular-solve with left_side=",
                                  options.left_side() ? "true" : "false",
                                  " needs b's ",
                                  options.left_side() ? "rows" : "columns",
                                  " (", shared, ") to match a's size ", k));
  }
  if (absl::Status s = ExpectResultShape(instruction, b); !s.ok()) return s;
  SolvePlan plan;
  plan.result = b;
  plan.left_side = options.left_side();
  plan.unit_diagonal = options.unit_diagonal();
  switch (options.transpose_a()) {
    case xla::TriangularSolveOptions::NO_TRANSPOSE:
      plan.transpose = 0;
      break;
    case xla::TriangularSolveOptions::TRANSPOSE:
      plan.transpose = 1;
      break;
    case xla::TriangularSolveOptions::ADJOINT:
      plan.transpose = 2;
      break;
    default:
      return Malformed(absl::StrCat(
          "triangular-solve transpose_a must be NO_TRANSPOSE, TRANSPOSE or "
          "ADJOINT, got ",
          static_cast<int>(options.transpose_a())));
  }
  // Transposing a swaps which triangle holds op(a).
  plan.lower = options.lower() != (plan.transpose != 0);
  const xla::PrimitiveType type = a.element_type();
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (kLinalgType<T>) {
          return MakeTriangularSolve<T>(plan);
        } else {
          return UnsupportedType(instruction, type);
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

}  // namespace

void RegisterLinalgKernels(KernelRegistry& registry) {
  registry.Register("cholesky", &CompileCholesky);
  registry.Register("triangular-solve", &CompileTriangularSolve);
}

}  // namespace tpu::emulator::interpreter
