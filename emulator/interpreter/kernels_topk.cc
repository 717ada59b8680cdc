// Kernel family: topk, and the TopK custom-call (the same operation under
// the name XLA's TopK rewriters give it).
//
// topk(x), k=K, largest=L returns (values, s32 indices) of the K largest (L)
// or smallest elements along the last dimension, as XLA's TopkDecomposer
// computes them: a stable sort of (value, iota) by value, sliced to K. Ties
// keep the lower index first. Floats are ordered totally (-NaN < -inf < ...
// < -0 < +0 < ... < +inf < +NaN), so NaNs sort as the largest values.

#include <algorithm>
#include <cstring>
#include <numeric>

#include "emulator/interpreter/elementwise_common.h"
#include "emulator/interpreter/topk.h"

namespace tpu::emulator::interpreter {
namespace {

// A key whose integer order is the total order of the value.
template <typename T>
auto OrderKey(T v) {
  if constexpr (std::is_same_v<T, double>) {
    int64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    return bits >= 0 ? bits : bits ^ INT64_MAX;
  } else if constexpr (kIsFloat<T>) {
    const float f = static_cast<float>(v);
    int32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    return bits >= 0 ? bits : bits ^ INT32_MAX;
  } else {
    return v;
  }
}

struct TopKPlan {
  Shape values;  // result element 0
  int64_t rows = 1, n = 0, k = 0;
  bool largest = true;
};

template <typename T>
std::unique_ptr<Kernel> MakeTopK(TopKPlan plan) {
  return MakeKernel(
      [plan](KernelContext& context,
             absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const T* in = operands[0].value->data<T>().data();
        Literal values = Literal::Uninitialized(plan.values);
        Literal indices = Literal::Uninitialized(
            Shape::Array(xla::S32, plan.values.dimensions()));
        T* out_values = static_cast<T*>(values.mutable_untyped_data());
        int32_t* out_indices =
            static_cast<int32_t*>(indices.mutable_untyped_data());
        const int64_t n = plan.n, k = plan.k;
        ParallelFor(context.device(), plan.rows, 10.0 * n,
                    [&](int64_t begin, int64_t end) {
                      std::vector<int32_t> order(n);
                      for (int64_t r = begin; r < end; ++r) {
                        const T* row = in + r * n;
                        std::iota(order.begin(), order.end(), 0);
                        // Ties broken by index make the order strict, so a
                        // partial sort gives the stable sort's first k.
                        auto before = [&](int32_t a, int32_t b) {
                          const auto ka = OrderKey(row[a]),
                                     kb = OrderKey(row[b]);
                          if (ka != kb) return plan.largest ? ka > kb : ka < kb;
                          return a < b;
                        };
                        std::partial_sort(order.begin(), order.begin() + k,
                                          order.end(), before);
                        for (int64_t j = 0; j < k; ++j) {
                          out_values[r * k + j] = row[order[j]];
                          out_indices[r * k + j] = order[j];
                        }
                      }
                    });
        std::vector<Literal> parts;
        parts.push_back(std::move(values));
        parts.push_back(std::move(indices));
        return Literal::Tuple(std::move(parts));
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileTopKOp(
    const HloInstruction& instruction, KernelCompiler&) {
  return CompileTopK(instruction, instruction.proto().k(),
                     instruction.proto().largest());
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CompileTopK(
    const HloInstruction& instruction, int64_t k, bool largest) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& in = instruction.operand(0)->shape();
  if (absl::Status s = ExpectArray(in, "topk operand"); !s.ok()) return s;
  if (in.rank() < 1) return Malformed("topk needs an operand of rank >= 1");
  TopKPlan plan;
  plan.n = in.dimensions(in.rank() - 1);
  plan.k = k;
  plan.largest = largest;
  if (k < 0 || k > plan.n) {
    return Malformed(
        absl::StrCat("topk k=", k, " is out of range for ", in.ToString()));
  }
  if (plan.n > INT32_MAX) {
    return absl::UnimplementedError("topk over more than 2^31 elements");
  }
  std::vector<int64_t> dims = in.dimensions();
  dims.back() = k;
  plan.values = Shape::Array(in.element_type(), dims);
  for (int64_t d = 0; d + 1 < in.rank(); ++d) plan.rows *= in.dimensions(d);
  if (absl::Status s = ExpectResultShape(
          instruction,
          Shape::Tuple({plan.values, Shape::Array(xla::S32, dims)}));
      !s.ok()) {
    return s;
  }
  const xla::PrimitiveType type = in.element_type();
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (kIsComplex<T>) {
          return UnsupportedType(instruction, type);
        } else {
          return MakeTopK<T>(std::move(plan));
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

void RegisterTopKKernels(KernelRegistry& registry) {
  registry.Register("topk", &CompileTopKOp);
}

}  // namespace tpu::emulator::interpreter
