// Kernel family: reduce-window (variadic; padding, strides, base and window
// dilation) and select-and-scatter.
//
// Reduce-window with one input and a reducer of the form op(p0, p1) (add,
// multiply, maximum, minimum, and, or) runs as a typed loop; 16-bit floats
// accumulate in f32 and round once, like the reduce family. Anything else
// calls the computation per window tap, in row-major tap order, starting from
// the init values. Taps on padding or on base-dilation holes are skipped (they
// contribute nothing, not the init value), as in XLA.
//
// Select-and-scatter: for each source element, the window over the operand is
// scanned in row-major order; the first valid tap is selected, and a later tap
// x replaces the selection s when select(s, x) is false. The source value is
// then combined into the output (initialised to init_value) at the selected
// position with the scatter computation. A select of compare GE/GT/LE/LT and a
// scatter of add run as a typed loop; other computations are called.

#include <cstring>

#include "emulator/interpreter/elementwise_common.h"
#include "emulator/interpreter/plan.h"
#include "emulator/interpreter/reducer.h"
#include "emulator/interpreter/window_util.h"

namespace tpu::emulator::interpreter {
namespace {

// The window geometry of one windowed operation over an input shape.
struct WindowGeometry {
  std::vector<int64_t> in_dims, out_dims, in_strides, tap_dims;
  std::vector<std::vector<int64_t>> tables;  // per dim, see WindowInputTable
  int64_t out_count = 1, tap_count = 1;

  // Calls fn(input_offset) for every valid tap of output element `o`, in
  // row-major tap order.
  template <typename Fn>
  void ForEachTap(int64_t o, std::vector<int64_t>& pos,
                  std::vector<int64_t>& tap, Fn&& fn) const {
    const int64_t rank = static_cast<int64_t>(in_dims.size());
    for (int64_t d = rank - 1; d >= 0; --d) {
      pos[d] = o % out_dims[d];
      o /= out_dims[d];
    }
    std::fill(tap.begin(), tap.end(), 0);
    for (int64_t k = 0; k < tap_count; ++k) {
      int64_t offset = 0;
      bool valid = true;
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t index = tables[d][pos[d] * tap_dims[d] + tap[d]];
        if (index < 0) {
          valid = false;
          break;
        }
        offset += index * in_strides[d];
      }
      if (valid) fn(offset);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++tap[d] < tap_dims[d]) break;
        tap[d] = 0;
      }
    }
  }
};

absl::StatusOr<WindowGeometry> MakeGeometry(const xla::Window& window,
                                            const Shape& input,
                                            const char* what) {
  absl::StatusOr<std::vector<WindowDim>> dims =
      ReadWindow(window, input.dimensions(), what);
  if (!dims.ok()) return dims.status();
  WindowGeometry g;
  g.in_dims = input.dimensions();
  g.in_strides = RowMajorStrides(input.dimensions());
  for (int64_t d = 0; d < input.rank(); ++d) {
    const WindowDim& w = (*dims)[d];
    if (w.reversal) {
      return Malformed(absl::StrCat(what, " does not take window reversal"));
    }
    const int64_t out = WindowOutputSize(input.dimensions(d), w);
    g.out_dims.push_back(out);
    g.out_count *= out;
    g.tap_dims.push_back(w.size);
    g.tap_count *= w.size;
    absl::StatusOr<std::vector<int64_t>> table =
        WindowInputTable(input.dimensions(d), out, w, what);
    if (!table.ok()) return table.status();
    g.tables.push_back(*std::move(table));
  }
  return g;
}

template <Red kOp, typename T>
std::unique_ptr<Kernel> MakeFastReduceWindow(WindowGeometry geometry,
                                             Shape result) {
  using C = AccType<T>;
  return MakeKernel(
      [geometry = std::move(geometry), result](
          KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const T* x = operands[0].value->data<T>().data();
        const C init = static_cast<C>(operands[1].value->data<T>()[0]);
        Literal out = Literal::Uninitialized(result);
        T* dst = static_cast<T*>(out.mutable_untyped_data());
        const int64_t rank = static_cast<int64_t>(geometry.in_dims.size());
        ParallelFor(context.device(), geometry.out_count,
                    3.0 * geometry.tap_count + 10,
                    [&](int64_t begin, int64_t end) {
                      std::vector<int64_t> pos(rank), tap(rank);
                      for (int64_t o = begin; o < end; ++o) {
                        C acc = init;
                        geometry.ForEachTap(o, pos, tap, [&](int64_t offset) {
                          acc = Combine<kOp, C>(acc, static_cast<C>(x[offset]));
                        });
                        dst[o] = static_cast<T>(acc);
                      }
                    });
        return out;
      });
}

Literal ScalarAt(const Literal& array, int64_t offset, int64_t width) {
  Literal v =
      Literal::Uninitialized(Shape::Scalar(array.shape().element_type()));
  std::memcpy(v.mutable_untyped_data(),
              static_cast<const char*>(array.untyped_data()) + offset * width,
              width);
  return v;
}

std::unique_ptr<Kernel> MakeGenericReduceWindow(
    const CompiledComputation* reducer, WindowGeometry geometry,
    std::vector<xla::PrimitiveType> types, Shape result) {
  return MakeKernel(
      [=](KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const int64_t n = types.size();
        const int64_t rank = static_cast<int64_t>(geometry.in_dims.size());
        std::vector<int64_t> widths;
        std::vector<Literal> outputs;
        for (int64_t i = 0; i < n; ++i) {
          widths.push_back(ByteWidth(types[i]));
          outputs.push_back(Literal::Uninitialized(
              Shape::Array(types[i], geometry.out_dims)));
        }
        std::vector<int64_t> pos(rank), tap(rank);
        absl::Status status;
        for (int64_t o = 0; o < geometry.out_count; ++o) {
          if (absl::Status s = context.CheckCancelled(); !s.ok()) return s;
          std::vector<Literal> acc;
          for (int64_t i = 0; i < n; ++i) acc.push_back(*operands[n + i].value);
          geometry.ForEachTap(o, pos, tap, [&](int64_t offset) {
            if (!status.ok()) return;
            std::vector<Literal> args = acc;
            for (int64_t i = 0; i < n; ++i) {
              args.push_back(ScalarAt(*operands[i].value, offset, widths[i]));
            }
            absl::StatusOr<Literal> next =
                context.Call(*reducer, std::move(args));
            if (!next.ok()) {
              status = next.status();
              return;
            }
            if (n == 1) {
              acc[0] = *std::move(next);
            } else {
              acc = std::move(*next).DecomposeTuple();
            }
          });
          if (!status.ok()) return status;
          for (int64_t i = 0; i < n; ++i) {
            std::memcpy(static_cast<char*>(outputs[i].mutable_untyped_data()) +
                            o * widths[i],
                        acc[i].untyped_data(), widths[i]);
          }
        }
        if (n == 1) return std::move(outputs[0]);
        return Literal::Tuple(std::move(outputs));
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileReduceWindow(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  const int64_t total = instruction.operand_count();
  if (total < 2 || total % 2 != 0) {
    return Malformed(
        absl::StrCat("reduce-window needs N inputs and N init "
                     "values, got ",
                     total, " operands"));
  }
  if (instruction.called_computations().size() != 1) {
    return Malformed("reduce-window calls exactly one computation");
  }
  const int64_t n = total / 2;
  const Shape& first = instruction.operand(0)->shape();
  std::vector<Shape> scalars;
  std::vector<xla::PrimitiveType> types;
  for (int64_t i = 0; i < n; ++i) {
    const Shape& s = instruction.operand(i)->shape();
    if (absl::Status st = ExpectArray(s, "reduce-window input"); !st.ok()) {
      return st;
    }
    if (s.dimensions() != first.dimensions()) {
      return Malformed("reduce-window inputs must have the same dimensions");
    }
    const Shape& init = instruction.operand(n + i)->shape();
    if (init != Shape::Scalar(s.element_type())) {
      return Malformed(absl::StrCat("reduce-window init value ", i, " must be ",
                                    Shape::Scalar(s.element_type()).ToString(),
                                    ", got ", init.ToString()));
    }
    scalars.push_back(init);
    types.push_back(s.element_type());
  }
  absl::StatusOr<WindowGeometry> geometry =
      MakeGeometry(instruction.proto().window(), first, "reduce-window");
  if (!geometry.ok()) return geometry.status();
  std::vector<Shape> results;
  for (xla::PrimitiveType t : types) {
    results.push_back(Shape::Array(t, geometry->out_dims));
  }
  const Shape result = n == 1 ? results[0] : Shape::Tuple(results);
  if (absl::Status s = ExpectResultShape(instruction, result); !s.ok()) {
    return s;
  }
  const HloComputation& reducer = *instruction.called_computations()[0];
  std::vector<Shape> params = scalars;
  params.insert(params.end(), scalars.begin(), scalars.end());
  if (reducer.ParameterShapes() != params ||
      reducer.root()->shape() !=
          (n == 1 ? scalars[0] : Shape::Tuple(scalars))) {
    return Malformed(absl::StrCat("reduce-window computation ", reducer.name(),
                                  " must take ", 2 * n,
                                  " scalars and return the accumulator type"));
  }
  const Red kind = n == 1 ? MatchReducer(reducer) : Red::kOther;
  if (kind != Red::kOther) {
    return MakeTypedReducerKernel(
        instruction, kind, types[0], [&](auto op, auto tag) {
          return MakeFastReduceWindow<decltype(op)::value,
                                      typename decltype(tag)::type>(
              *std::move(geometry), result);
        });
  }
  absl::StatusOr<const CompiledComputation*> plan = compiler.Compile(&reducer);
  if (!plan.ok()) return plan.status();
  return MakeGenericReduceWindow(*plan, *std::move(geometry), types, result);
}

// ---------------------------------------------------------------------------
// select-and-scatter

enum class Sel { kGe, kGt, kLe, kLt, kOther };

// Recognizes ROOT = compare(p0, p1, direction) with a non-total order; a
// swapped operand order mirrors the direction.
Sel MatchSelect(const HloComputation& computation) {
  const HloInstruction* root = computation.root();
  if (computation.num_parameters() != 2 || root->opcode() != "compare" ||
      root->operand_count() != 2) {
    return Sel::kOther;
  }
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != "parameter" || b->opcode() != "parameter" || a == b) {
    return Sel::kOther;
  }
  const std::string& type = root->proto().comparison_type();
  if (!type.empty() && type != "FLOAT" && type != "SIGNED" &&
      type != "UNSIGNED") {
    return Sel::kOther;
  }
  const bool swapped = a->proto().parameter_number() == 1;
  const std::string& dir = root->proto().comparison_direction();
  if (dir == "GE") return swapped ? Sel::kLe : Sel::kGe;
  if (dir == "GT") return swapped ? Sel::kLt : Sel::kGt;
  if (dir == "LE") return swapped ? Sel::kGe : Sel::kLe;
  if (dir == "LT") return swapped ? Sel::kGt : Sel::kLt;
  return Sel::kOther;
}

template <Sel kSel, typename C>
bool Selects(C selected, C candidate) {
  switch (kSel) {
    case Sel::kGe:
      return selected >= candidate;
    case Sel::kGt:
      return selected > candidate;
    case Sel::kLe:
      return selected <= candidate;
    default:
      return selected < candidate;
  }
}

template <Sel kSel, typename T>
std::unique_ptr<Kernel> MakeFastSelectAndScatter(WindowGeometry geometry,
                                                 Shape result) {
  using C = AccType<T>;
  return MakeKernel(
      [geometry = std::move(geometry), result](
          KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const T* x = operands[0].value->data<T>().data();
        const T* source = operands[1].value->data<T>().data();
        const C init = static_cast<C>(operands[2].value->data<T>()[0]);
        const int64_t count = result.element_count();
        // Accumulate in C so 16-bit floats round once per output element.
        std::vector<C> acc(count, init);
        const int64_t rank = static_cast<int64_t>(geometry.in_dims.size());
        std::vector<int64_t> pos(rank), tap(rank);
        for (int64_t o = 0; o < geometry.out_count; ++o) {
          int64_t best = -1;
          C best_value = C(0);
          geometry.ForEachTap(o, pos, tap, [&](int64_t offset) {
            const C v = static_cast<C>(x[offset]);
            if (best < 0 || !Selects<kSel, C>(best_value, v)) {
              best = offset;
              best_value = v;
            }
          });
          if (best >= 0) {
            acc[best] =
                Combine<Red::kAdd, C>(acc[best], static_cast<C>(source[o]));
          }
        }
        Literal out = Literal::Uninitialized(result);
        T* dst = static_cast<T*>(out.mutable_untyped_data());
        UnaryLoop(context.device(), acc.data(), dst, count, 1,
                  [](const C& v) { return static_cast<T>(v); });
        return out;
      });
}

std::unique_ptr<Kernel> MakeGenericSelectAndScatter(
    const CompiledComputation* select, const CompiledComputation* scatter,
    WindowGeometry geometry, Shape result) {
  return MakeKernel([=](KernelContext& context,
                        absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    const Literal& x = *operands[0].value;
    const Literal& source = *operands[1].value;
    const int64_t width = ByteWidth(result.element_type());
    const int64_t count = result.element_count();
    Literal out = Literal::Uninitialized(result);
    char* dst = static_cast<char*>(out.mutable_untyped_data());
    for (int64_t i = 0; i < count; ++i) {
      std::memcpy(dst + i * width, operands[2].value->untyped_data(), width);
    }
    const int64_t rank = static_cast<int64_t>(geometry.in_dims.size());
    std::vector<int64_t> pos(rank), tap(rank);
    absl::Status status;
    for (int64_t o = 0; o < geometry.out_count; ++o) {
      if (absl::Status s = context.CheckCancelled(); !s.ok()) return s;
      int64_t best = -1;
      Literal best_value;
      geometry.ForEachTap(o, pos, tap, [&](int64_t offset) {
        if (!status.ok()) return;
        Literal v = ScalarAt(x, offset, width);
        if (best < 0) {
          best = offset;
          best_value = std::move(v);
          return;
        }
        absl::StatusOr<Literal> keep = context.Call(*select, {best_value, v});
        if (!keep.ok()) {
          status = keep.status();
          return;
        }
        if (!keep->data<bool>()[0]) {
          best = offset;
          best_value = std::move(v);
        }
      });
      if (!status.ok()) return status;
      if (best < 0) continue;
      Literal current = ScalarAt(out, best, width);
      absl::StatusOr<Literal> combined = context.Call(
          *scatter, {std::move(current), ScalarAt(source, o, width)});
      if (!combined.ok()) return combined.status();
      std::memcpy(dst + best * width, combined->untyped_data(), width);
    }
    return out;
  });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileSelectAndScatter(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (absl::Status s = ExpectOperands(instruction, 3); !s.ok()) return s;
  if (instruction.called_computations().size() != 2) {
    return Malformed(
        "select-and-scatter calls exactly two computations (select, scatter)");
  }
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& source = instruction.operand(1)->shape();
  const Shape& init = instruction.operand(2)->shape();
  if (absl::Status s = ExpectArray(operand, "select-and-scatter operand");
      !s.ok()) {
    return s;
  }
  const xla::PrimitiveType type = operand.element_type();
  const Shape scalar = Shape::Scalar(type);
  if (init != scalar) {
    return Malformed(absl::StrCat("select-and-scatter init value must be ",
                                  scalar.ToString(), ", got ",
                                  init.ToString()));
  }
  absl::StatusOr<WindowGeometry> geometry =
      MakeGeometry(instruction.proto().window(), operand, "select-and-scatter");
  if (!geometry.ok()) return geometry.status();
  if (source != Shape::Array(type, geometry->out_dims)) {
    return Malformed(absl::StrCat(
        "select-and-scatter source must be ",
        Shape::Array(type, geometry->out_dims).ToString(),
        " (one element per window position), got ", source.ToString()));
  }
  if (absl::Status s = ExpectResultShape(instruction, operand); !s.ok()) {
    return s;
  }
  const HloComputation& select = *instruction.called_computations()[0];
  const HloComputation& scatter = *instruction.called_computations()[1];
  if (select.ParameterShapes() != std::vector<Shape>{scalar, scalar} ||
      select.root()->shape() != Shape::Scalar(xla::PRED)) {
    return Malformed(absl::StrCat("select-and-scatter select computation ",
                                  select.name(), " must map two ",
                                  scalar.ToString(), " to pred[]"));
  }
  if (scatter.ParameterShapes() != std::vector<Shape>{scalar, scalar} ||
      scatter.root()->shape() != scalar) {
    return Malformed(absl::StrCat(
        "select-and-scatter scatter computation ", scatter.name(),
        " must map two ", scalar.ToString(), " to ", scalar.ToString()));
  }
  const Sel sel = MatchSelect(select);
  if (sel != Sel::kOther && MatchReducer(scatter) == Red::kAdd &&
      !IsComplex(type) && type != xla::PRED) {
    auto build = [&](auto sel_tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
      constexpr Sel kSel = decltype(sel_tag)::value;
      return DispatchType(
          type,
          [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
            using T = typename decltype(tag)::type;
            if constexpr (kIsComplex<T> || std::is_same_v<T, bool>) {
              return UnsupportedType(instruction, type);
            } else {
              return MakeFastSelectAndScatter<kSel, T>(*std::move(geometry),
                                                       operand);
            }
          },
          [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
            return UnsupportedType(instruction, type);
          });
    };
    switch (sel) {
      case Sel::kGe:
        return build(std::integral_constant<Sel, Sel::kGe>{});
      case Sel::kGt:
        return build(std::integral_constant<Sel, Sel::kGt>{});
      case Sel::kLe:
        return build(std::integral_constant<Sel, Sel::kLe>{});
      default:
        return build(std::integral_constant<Sel, Sel::kLt>{});
    }
  }
  absl::StatusOr<const CompiledComputation*> select_plan =
      compiler.Compile(&select);
  if (!select_plan.ok()) return select_plan.status();
  absl::StatusOr<const CompiledComputation*> scatter_plan =
      compiler.Compile(&scatter);
  if (!scatter_plan.ok()) return scatter_plan.status();
  return MakeGenericSelectAndScatter(*select_plan, *scatter_plan,
                                     *std::move(geometry), operand);
}

}  // namespace

void RegisterWindowKernels(KernelRegistry& registry) {
  registry.Register("reduce-window", &CompileReduceWindow);
  registry.Register("select-and-scatter", &CompileSelectAndScatter);
}

}  // namespace tpu::emulator::interpreter
