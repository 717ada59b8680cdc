// Kernel family: reduce. Single-operand reductions whose computation is one
// of add, multiply, maximum, minimum, and, or run as typed vector loops; any
// other computation (and variadic reduce) calls the computation per element.

#include <cstring>

#include "emulator/interpreter/elementwise_common.h"
#include "emulator/interpreter/plan.h"
#include "emulator/interpreter/reducer.h"

namespace tpu::emulator::interpreter {
namespace {

// Folds x[0..r) into acc.
template <Red kOp, typename T, typename C>
C FoldRow(const T* x, int64_t r, C acc) {
  if constexpr (std::is_same_v<T, C> &&
                (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                 std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>)) {
    if (r > 0) {
      Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> v(x, r);
      if constexpr (kOp == Red::kAdd) return Combine<kOp>(acc, v.sum());
      if constexpr (kOp == Red::kMul) return Combine<kOp>(acc, v.prod());
      if constexpr (kOp == Red::kMax && kIsFloat<T>) {
        return Combine<kOp>(acc, v.template maxCoeff<Eigen::PropagateNaN>());
      }
      if constexpr (kOp == Red::kMin && kIsFloat<T>) {
        return Combine<kOp>(acc, v.template minCoeff<Eigen::PropagateNaN>());
      }
      if constexpr (kOp == Red::kMax && !kIsFloat<T>) {
        return Combine<kOp>(acc, v.maxCoeff());
      }
      if constexpr (kOp == Red::kMin && !kIsFloat<T>) {
        return Combine<kOp>(acc, v.minCoeff());
      }
    }
  }
  for (int64_t i = 0; i < r; ++i) acc = Combine<kOp>(acc, static_cast<C>(x[i]));
  return acc;
}

struct ReduceLayout {
  Shape result;
  // Operand viewed as [outer, reduced, inner] after an optional transpose.
  int64_t outer = 1, reduced = 1, inner = 1;
  std::vector<int64_t> perm;  // empty: no transpose needed
  std::vector<int64_t> in_dims;
};

template <Red kOp, typename T>
std::unique_ptr<Kernel> MakeFastReduce(const ReduceLayout& layout) {
  using C =
      std::conditional_t<kIsFloat<T> && !std::is_same_v<T, double>, float, T>;
  return MakeKernel(
      [layout](KernelContext& context,
               absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const Eigen::ThreadPoolDevice* device = context.device();
        const T* x = operands[0].value->data<T>().data();
        std::shared_ptr<AlignedBuffer> transposed;
        if (!layout.perm.empty()) {
          transposed = AlignedBuffer::Allocate(operands[0].value->size_bytes());
          Transpose(device, sizeof(T), layout.in_dims, layout.perm, x,
                    transposed->data());
          x = static_cast<const T*>(transposed->data());
        }
        const C init = static_cast<C>(operands[1].value->data<T>()[0]);
        Literal result = Literal::Uninitialized(layout.result);
        T* out = static_cast<T*>(const_cast<void*>(result.untyped_data()));
        const int64_t outer = layout.outer, r = layout.reduced,
                      inner = layout.inner;
        if (inner == 1) {
          ParallelFor(device, outer, r + 10.0, [&](int64_t begin, int64_t end) {
            for (int64_t o = begin; o < end; ++o) {
              out[o] = static_cast<T>(FoldRow<kOp, T, C>(x + o * r, r, init));
            }
          });
          return result;
        }
        // Reduce over the middle dimension: accumulate whole rows of `inner`.
        constexpr int64_t kBlock = 1024;
        const int64_t blocks = (inner + kBlock - 1) / kBlock;
        ParallelFor(device, outer * blocks, std::min(inner, kBlock) * (r + 1.0),
                    [&](int64_t begin, int64_t end) {
                      C acc[kBlock];
                      for (int64_t t = begin; t < end; ++t) {
                        const int64_t o = t / blocks;
                        const int64_t b0 = (t % blocks) * kBlock;
                        const int64_t len = std::min(kBlock, inner - b0);
                        for (int64_t i = 0; i < len; ++i) acc[i] = init;
                        const T* base = x + o * r * inner + b0;
                        for (int64_t j = 0; j < r; ++j) {
                          const T* row = base + j * inner;
                          for (int64_t i = 0; i < len; ++i) {
                            acc[i] =
                                Combine<kOp>(acc[i], static_cast<C>(row[i]));
                          }
                        }
                        T* dst = out + o * inner + b0;
                        for (int64_t i = 0; i < len; ++i) {
                          dst[i] = static_cast<T>(acc[i]);
                        }
                      }
                    });
        return result;
      });
}

// Variadic or arbitrary reducers: call the computation per element, in
// index order of the reduced dimensions.
std::unique_ptr<Kernel> MakeGenericReduce(const CompiledComputation* reducer,
                                          std::vector<Shape> operand_shapes,
                                          std::vector<int64_t> reduce_dims,
                                          Shape result) {
  return MakeKernel(
      [=](KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const int64_t n = operand_shapes.size();
        const Shape& in = operand_shapes[0];
        std::vector<bool> is_reduced(in.rank(), false);
        for (int64_t d : reduce_dims) is_reduced[d] = true;
        std::vector<int64_t> kept_dims, red_dims, kept_axes, red_axes;
        for (int64_t d = 0; d < in.rank(); ++d) {
          (is_reduced[d] ? red_dims : kept_dims).push_back(in.dimensions(d));
          (is_reduced[d] ? red_axes : kept_axes).push_back(d);
        }
        const std::vector<int64_t> strides = RowMajorStrides(in.dimensions());
        int64_t kept_count = 1, red_count = 1;
        for (int64_t d : kept_dims) kept_count *= d;
        for (int64_t d : red_dims) red_count *= d;
        std::vector<Shape> scalar_shapes;
        std::vector<int64_t> widths;
        for (const Shape& s : operand_shapes) {
          scalar_shapes.push_back(Shape::Scalar(s.element_type()));
          widths.push_back(ByteWidth(s.element_type()));
        }
        std::vector<Literal> outputs;
        for (int64_t i = 0; i < n; ++i) {
          outputs.push_back(Literal::Uninitialized(
              Shape::Array(operand_shapes[i].element_type(), kept_dims)));
        }
        std::vector<int64_t> kept_index(kept_dims.size(), 0);
        for (int64_t k = 0; k < kept_count; ++k) {
          if (absl::Status s = context.CheckCancelled(); !s.ok()) return s;
          int64_t base = 0;
          for (size_t a = 0; a < kept_axes.size(); ++a) {
            base += kept_index[a] * strides[kept_axes[a]];
          }
          std::vector<Literal> acc;
          for (int64_t i = 0; i < n; ++i) acc.push_back(*operands[n + i].value);
          std::vector<int64_t> red_index(red_dims.size(), 0);
          for (int64_t r = 0; r < red_count; ++r) {
            int64_t offset = base;
            for (size_t a = 0; a < red_axes.size(); ++a) {
              offset += red_index[a] * strides[red_axes[a]];
            }
            std::vector<Literal> args = acc;
            for (int64_t i = 0; i < n; ++i) {
              Literal v = Literal::Uninitialized(scalar_shapes[i]);
              std::memcpy(
                  const_cast<void*>(v.untyped_data()),
                  static_cast<const char*>(operands[i].value->untyped_data()) +
                      offset * widths[i],
                  widths[i]);
              args.push_back(std::move(v));
            }
            absl::StatusOr<Literal> next =
                context.Call(*reducer, std::move(args));
            if (!next.ok()) return next.status();
            if (n == 1) {
              acc[0] = *std::move(next);
            } else {
              acc = std::move(*next).DecomposeTuple();
            }
            for (int64_t a = static_cast<int64_t>(red_index.size()) - 1; a >= 0;
                 --a) {
              if (++red_index[a] < red_dims[a]) break;
              red_index[a] = 0;
            }
          }
          for (int64_t i = 0; i < n; ++i) {
            std::memcpy(static_cast<char*>(
                            const_cast<void*>(outputs[i].untyped_data())) +
                            k * widths[i],
                        acc[i].untyped_data(), widths[i]);
          }
          for (int64_t a = static_cast<int64_t>(kept_index.size()) - 1; a >= 0;
               --a) {
            if (++kept_index[a] < kept_dims[a]) break;
            kept_index[a] = 0;
          }
        }
        if (n == 1) return std::move(outputs[0]);
        return Literal::Tuple(std::move(outputs));
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileReduce(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  const int64_t total = instruction.operand_count();
  if (total < 2 || total % 2 != 0) {
    return Malformed(
        absl::StrCat("reduce needs N inputs and N init values, "
                     "got ",
                     total, " operands"));
  }
  if (instruction.called_computations().size() != 1) {
    return Malformed("reduce calls exactly one computation");
  }
  const int64_t n = total / 2;
  const Shape& first = instruction.operand(0)->shape();
  std::vector<Shape> operand_shapes;
  std::vector<Shape> scalars;
  for (int64_t i = 0; i < n; ++i) {
    const Shape& s = instruction.operand(i)->shape();
    if (absl::Status st = ExpectArray(s, "reduce input"); !st.ok()) return st;
    if (s.dimensions() != first.dimensions()) {
      return Malformed("reduce inputs must have the same dimensions");
    }
    const Shape& init = instruction.operand(n + i)->shape();
    if (init != Shape::Scalar(s.element_type())) {
      return Malformed(absl::StrCat("reduce init value ", i, " must be ",
                                    Shape::Scalar(s.element_type()).ToString(),
                                    ", got ", init.ToString()));
    }
    operand_shapes.push_back(s);
    scalars.push_back(init);
  }
  std::vector<int64_t> dims(instruction.proto().dimensions().begin(),
                            instruction.proto().dimensions().end());
  std::vector<bool> is_reduced(first.rank(), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= first.rank() || is_reduced[d]) {
      return Malformed(
          absl::StrCat("reduce dimension ", d, " is out of range or repeated"));
    }
    is_reduced[d] = true;
  }
  std::sort(dims.begin(), dims.end());
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < first.rank(); ++d) {
    if (!is_reduced[d]) kept.push_back(first.dimensions(d));
  }
  std::vector<Shape> results;
  for (const Shape& s : operand_shapes) {
    results.push_back(Shape::Array(s.element_type(), kept));
  }
  const Shape result =
      n == 1 ? results[0] : Shape::Tuple(std::vector<Shape>(results));
  if (absl::Status s = ExpectResultShape(instruction, result); !s.ok()) {
    return s;
  }
  const HloComputation& reducer = *instruction.called_computations()[0];
  std::vector<Shape> reducer_params = scalars;
  reducer_params.insert(reducer_params.end(), scalars.begin(), scalars.end());
  if (reducer.ParameterShapes() != reducer_params ||
      reducer.root()->shape() !=
          (n == 1 ? scalars[0] : Shape::Tuple(std::vector<Shape>(scalars)))) {
    return Malformed(absl::StrCat("reduce computation ", reducer.name(),
                                  " must take ", 2 * n,
                                  " scalars and return the accumulator type"));
  }

  const Red kind = n == 1 ? MatchReducer(reducer) : Red::kOther;
  if (kind == Red::kOther) {
    absl::StatusOr<const CompiledComputation*> plan =
        compiler.Compile(&reducer);
    if (!plan.ok()) return plan.status();
    return MakeGenericReduce(*plan, operand_shapes, dims, result);
  }
  ReduceLayout layout;
  layout.result = result;
  layout.in_dims = first.dimensions();
  // Contiguous block of reduced dims -> [outer, reduced, inner] in place.
  const bool contiguous = dims.empty() || dims.back() - dims.front() + 1 ==
                                              static_cast<int64_t>(dims.size());
  if (contiguous && !dims.empty()) {
    for (int64_t d = 0; d < dims.front(); ++d)
      layout.outer *= first.dimensions(d);
    for (int64_t d : dims) layout.reduced *= first.dimensions(d);
    for (int64_t d = dims.back() + 1; d < first.rank(); ++d) {
      layout.inner *= first.dimensions(d);
    }
  } else if (dims.empty()) {
    layout.outer = first.element_count();
  } else {
    for (int64_t d = 0; d < first.rank(); ++d) {
      if (!is_reduced[d]) {
        layout.perm.push_back(d);
        layout.outer *= first.dimensions(d);
      }
    }
    for (int64_t d : dims) {
      layout.perm.push_back(d);
      layout.reduced *= first.dimensions(d);
    }
  }
  return MakeTypedReducerKernel(
      instruction, kind, first.element_type(), [&](auto op, auto tag) {
        return MakeFastReduce<decltype(op)::value,
                              typename decltype(tag)::type>(layout);
      });
}

}  // namespace

void RegisterReduceKernels(KernelRegistry& registry) {
  registry.Register("reduce", &CompileReduce);
}

}  // namespace tpu::emulator::interpreter
