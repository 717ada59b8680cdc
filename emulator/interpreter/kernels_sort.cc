// Kernel family: sort (one or more operands sorted together along one
// dimension by a comparator computation; stable when asked). A comparator
// that is a single LT/GT compare of operand 0 runs natively; any other
// comparator is called per comparison.

#include <cstring>
#include <numeric>

#include "emulator/interpreter/elementwise_common.h"
#include "emulator/interpreter/plan.h"

namespace tpu::emulator::interpreter {
namespace {

struct SortPlan {
  std::vector<Shape> shapes;
  Shape result;
  int64_t dimension = 0;
  bool stable = false;
  // Native comparator on operand 0: 0 none, else direction LT(1) / GT(2).
  int native = 0;
  bool total_order = false;
  const CompiledComputation* comparator = nullptr;
};

template <typename T>
bool NativeLess(const T& a, const T& b, bool total) {
  using C = ComputeType<T>;
  if constexpr (kIsComplex<T>) {
    return false;
  } else if constexpr (kIsFloat<T>) {
    const C x = static_cast<C>(a), y = static_cast<C>(b);
    if (total) {
      // IEEE totalOrder: -NaN < -inf < ... < -0 < +0 < ... < inf < NaN.
      const bool xs = std::signbit(x), ys = std::signbit(y);
      const bool xn = x != x, yn = y != y;
      if (xn || yn) {
        const int kx = xn ? (xs ? -2 : 2) : 0, ky = yn ? (ys ? -2 : 2) : 0;
        return kx < ky;
      }
      if (x == y) return xs && !ys;  // -0 < +0
      return x < y;
    }
    return x < y;
  } else {
    return a < b;
  }
}

// The permutation that sorts one row of `n` elements.
template <typename T>
void SortRowNative(const T* keys, int64_t stride, int64_t n,
                   const SortPlan& plan, std::vector<int64_t>& perm) {
  perm.resize(n);
  std::iota(perm.begin(), perm.end(), 0);
  auto less = [&](int64_t i, int64_t j) {
    const T& a = keys[i * stride];
    const T& b = keys[j * stride];
    return plan.native == 1 ? NativeLess(a, b, plan.total_order)
                            : NativeLess(b, a, plan.total_order);
  };
  // Strict weak order: stable sort is always correct and is what XLA's CPU
  // backend does for is_stable; it is also deterministic otherwise.
  std::stable_sort(perm.begin(), perm.end(), less);
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileSort(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (instruction.operand_count() < 1) {
    return Malformed("sort needs at least one operand");
  }
  if (instruction.called_computations().size() != 1) {
    return Malformed("sort calls exactly one comparator");
  }
  SortPlan plan;
  const Shape& first = instruction.operand(0)->shape();
  for (const HloInstruction* o : instruction.operands()) {
    if (absl::Status s = ExpectArray(o->shape(), "sort operand"); !s.ok()) {
      return s;
    }
    if (o->shape().dimensions() != first.dimensions()) {
      return Malformed("sort operands must have the same dimensions");
    }
    plan.shapes.push_back(o->shape());
  }
  if (instruction.proto().dimensions_size() != 1) {
    return Malformed("sort needs exactly one dimension");
  }
  plan.dimension = instruction.proto().dimensions(0);
  if (plan.dimension < 0 ||
      plan.dimension >= std::max<int64_t>(first.rank(), 1)) {
    return Malformed("sort dimension out of range");
  }
  plan.stable = instruction.proto().is_stable();
  plan.result =
      plan.shapes.size() == 1 ? plan.shapes[0] : Shape::Tuple(plan.shapes);
  if (absl::Status s = ExpectResultShape(instruction, plan.result); !s.ok()) {
    return s;
  }
  const HloComputation& cmp = *instruction.called_computations()[0];
  std::vector<Shape> params;
  for (const Shape& s : plan.shapes) {
    params.push_back(Shape::Scalar(s.element_type()));
    params.push_back(Shape::Scalar(s.element_type()));
  }
  if (cmp.ParameterShapes() != params ||
      cmp.root()->shape() != Shape::Scalar(xla::PRED)) {
    return Malformed(absl::StrCat("sort comparator ", cmp.name(),
                                  " must take two scalars per operand and "
                                  "return pred[]"));
  }
  const HloInstruction* root = cmp.root();
  if (root->opcode() == "compare" && root->operand_count() == 2 &&
      !IsComplex(first.element_type())) {
    const HloInstruction* a = root->operand(0);
    const HloInstruction* b = root->operand(1);
    const std::string& dir = root->proto().comparison_direction();
    if (a == cmp.parameters()[0] && b == cmp.parameters()[1]) {
      plan.native = dir == "LT" ? 1 : dir == "GT" ? 2 : 0;
    } else if (a == cmp.parameters()[1] && b == cmp.parameters()[0]) {
      plan.native = dir == "GT" ? 1 : dir == "LT" ? 2 : 0;
    }
    plan.total_order = root->proto().comparison_type() == "TOTALORDER";
  }
  if (plan.native == 0) {
    absl::StatusOr<const CompiledComputation*> c = compiler.Compile(&cmp);
    if (!c.ok()) return c.status();
    plan.comparator = *c;
  }
  const xla::PrimitiveType type = first.element_type();
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        return MakeKernel([plan](KernelContext& context,
                                 absl::Span<const Operand> operands)
                              -> absl::StatusOr<Literal> {
          const Shape& shape = plan.shapes[0];
          const int64_t rank = shape.rank();
          const int64_t n = rank == 0 ? 1 : shape.dimensions(plan.dimension);
          const std::vector<int64_t> strides =
              RowMajorStrides(shape.dimensions());
          const int64_t stride = rank == 0 ? 1 : strides[plan.dimension];
          const int64_t rows = n == 0 ? 0 : shape.element_count() / n;
          std::vector<Literal> outs;
          for (const Shape& s : plan.shapes) {
            outs.push_back(Literal::Uninitialized(s));
          }
          absl::Status status;
          auto row_base = [&](int64_t r) {
            // Rows enumerate every index with the sort dimension at 0.
            const int64_t outer = r / stride, inner = r % stride;
            return outer * n * stride + inner;
          };
          auto process = [&](int64_t begin, int64_t end) -> absl::Status {
            std::vector<int64_t> perm;
            for (int64_t r = begin; r < end; ++r) {
              const int64_t base = row_base(r);
              if (plan.native != 0) {
                SortRowNative<T>(operands[0].value->data<T>().data() + base,
                                 stride, n, plan, perm);
              } else {
                perm.resize(n);
                std::iota(perm.begin(), perm.end(), 0);
                absl::Status error;
                auto less = [&](int64_t i, int64_t j) {
                  if (!error.ok()) return false;
                  std::vector<Literal> args;
                  for (size_t k = 0; k < plan.shapes.size(); ++k) {
                    const int64_t w = ByteWidth(plan.shapes[k].element_type());
                    const char* src = static_cast<const char*>(
                        operands[k].value->untyped_data());
                    for (int64_t which : {i, j}) {
                      Literal v = Literal::Uninitialized(
                          Shape::Scalar(plan.shapes[k].element_type()));
                      std::memcpy(const_cast<void*>(v.untyped_data()),
                                  src + (base + which * stride) * w, w);
                      args.push_back(std::move(v));
                    }
                  }
                  absl::StatusOr<Literal> r =
                      context.Call(*plan.comparator, std::move(args));
                  if (!r.ok()) {
                    error = r.status();
                    return false;
                  }
                  return r->data<bool>()[0];
                };
                std::stable_sort(perm.begin(), perm.end(), less);
                if (!error.ok()) return error;
              }
              for (size_t k = 0; k < plan.shapes.size(); ++k) {
                const int64_t w = ByteWidth(plan.shapes[k].element_type());
                const char* src =
                    static_cast<const char*>(operands[k].value->untyped_data());
                char* dst = static_cast<char*>(
                    const_cast<void*>(outs[k].untyped_data()));
                for (int64_t i = 0; i < n; ++i) {
                  std::memcpy(dst + (base + i * stride) * w,
                              src + (base + perm[i] * stride) * w, w);
                }
              }
            }
            return absl::OkStatus();
          };
          if (plan.native != 0) {
            ParallelFor(context.device(), rows, 20.0 * n,
                        [&](int64_t b, int64_t e) { (void)process(b, e); });
          } else {
            status = process(0, rows);
            if (!status.ok()) return status;
          }
          if (outs.size() == 1) return std::move(outs[0]);
          return Literal::Tuple(std::move(outs));
        });
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

}  // namespace

void RegisterSortKernels(KernelRegistry& registry) {
  registry.Register("sort", &CompileSort);
}

}  // namespace tpu::emulator::interpreter
