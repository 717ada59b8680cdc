// Kernel family: gather and scatter (with batching dimensions, clamped
// gather starts, out-of-bounds scatter windows skipped, any update
// computation).

#include <cstring>

#include "emulator/interpreter/elementwise_common.h"
#include "emulator/interpreter/plan.h"
#include "emulator/interpreter/reducer.h"

namespace tpu::emulator::interpreter {
namespace {

std::vector<int64_t> ToVector(
    const google::protobuf::RepeatedField<int64_t>& f) {
  return std::vector<int64_t>(f.begin(), f.end());
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

absl::Status CheckAxes(const std::vector<int64_t>& axes, int64_t rank,
                       const char* what) {
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    if (a < 0 || a >= rank || seen[a]) {
      return Malformed(
          absl::StrCat(what, " dimension ", a, " is out of range or repeated"));
    }
    seen[a] = true;
  }
  return absl::OkStatus();
}

bool IsIntegerType(xla::PrimitiveType t) {
  return IsSignedInteger(t) || IsUnsignedInteger(t);
}

// Shared description of "batch" positions over an index array whose
// index_vector_dim holds the start vector.
struct IndexSpace {
  std::vector<int64_t> batch_dims;  // index-array dims other than ivd
  std::vector<int64_t> batch_axes;  // their positions in the index array
  std::vector<int64_t> index_strides;
  int64_t index_vector_dim = 0;
  int64_t index_vector_stride = 0;  // 0 when the vector is implicit
  int64_t vector_size = 1;
};

IndexSpace MakeIndexSpace(const Shape& indices, int64_t ivd) {
  IndexSpace space;
  space.index_vector_dim = ivd;
  space.index_strides = RowMajorStrides(indices.dimensions());
  for (int64_t d = 0; d < indices.rank(); ++d) {
    if (d == ivd) continue;
    space.batch_dims.push_back(indices.dimensions(d));
    space.batch_axes.push_back(d);
  }
  if (ivd < indices.rank()) {
    space.vector_size = indices.dimensions(ivd);
    space.index_vector_stride = space.index_strides[ivd];
  }
  return space;
}

struct GatherPlan {
  Shape result;
  Shape operand;
  IndexSpace space;
  std::vector<int64_t> start_index_map;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> indices_batching_dims;  // as positions in batch_axes
  std::vector<int64_t> slice_sizes;
  std::vector<int64_t> batch_out_dims;  // output dims that are batch dims
  std::vector<int64_t> window_dims;     // sizes of the copied window
  std::vector<int64_t> window_src_strides;
  std::vector<int64_t> window_dst_strides;
};

absl::StatusOr<std::unique_ptr<Kernel>> CompileGather(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& indices = instruction.operand(1)->shape();
  if (absl::Status s = ExpectArray(operand, "operand"); !s.ok()) return s;
  if (!indices.IsArray() || !IsIntegerType(indices.element_type())) {
    return Malformed("gather indices must be an integer array");
  }
  const auto& dn = instruction.proto().gather_dimension_numbers();
  GatherPlan plan;
  plan.operand = operand;
  const std::vector<int64_t> offset_dims = ToVector(dn.offset_dims());
  const std::vector<int64_t> collapsed = ToVector(dn.collapsed_slice_dims());
  plan.start_index_map = ToVector(dn.start_index_map());
  plan.operand_batching_dims = ToVector(dn.operand_batching_dims());
  const std::vector<int64_t> idx_batching =
      ToVector(dn.start_indices_batching_dims());
  plan.slice_sizes = ToVector(instruction.proto().gather_slice_sizes());
  const int64_t ivd = dn.index_vector_dim();
  if (ivd < 0 || ivd > indices.rank()) {
    return Malformed("gather index_vector_dim out of range");
  }
  plan.space = MakeIndexSpace(indices, ivd);
  if (static_cast<int64_t>(plan.slice_sizes.size()) != operand.rank()) {
    return Malformed("gather slice_sizes needs one entry per operand dim");
  }
  if (static_cast<int64_t>(plan.start_index_map.size()) !=
      plan.space.vector_size) {
    return Malformed(absl::StrCat(
        "gather start_index_map has ", plan.start_index_map.size(),
        " entries but index vectors have ", plan.space.vector_size));
  }
  if (absl::Status s =
          CheckAxes(plan.start_index_map, operand.rank(), "start_index_map");
      !s.ok()) {
    return s;
  }
  std::vector<int64_t> not_window = collapsed;
  not_window.insert(not_window.end(), plan.operand_batching_dims.begin(),
                    plan.operand_batching_dims.end());
  if (absl::Status s =
          CheckAxes(not_window, operand.rank(), "collapsed/batching");
      !s.ok()) {
    return s;
  }
  if (plan.operand_batching_dims.size() != idx_batching.size()) {
    return Malformed("gather batching dims of operand and indices differ");
  }
  for (int64_t d : idx_batching) {
    auto it = std::find(plan.space.batch_axes.begin(),
                        plan.space.batch_axes.end(), d);
    if (it == plan.space.batch_axes.end()) {
      return Malformed(
          "start_indices_batching_dims must not include "
          "index_vector_dim");
    }
    plan.indices_batching_dims.push_back(it - plan.space.batch_axes.begin());
  }
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (plan.slice_sizes[d] < 0 ||
        plan.slice_sizes[d] > operand.dimensions(d)) {
      return Malformed(absl::StrCat("gather slice size ", plan.slice_sizes[d],
                                    " out of range for dimension ", d, " of ",
                                    operand.ToString()));
    }
    if (Contains(not_window, d) && plan.slice_sizes[d] > 1) {
      return Malformed("collapsed and batching dims need slice size <= 1");
    }
  }
  // Result shape: batch dims in order, window dims at offset_dims.
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (!Contains(not_window, d)) window_operand_dims.push_back(d);
  }
  if (offset_dims.size() != window_operand_dims.size()) {
    return Malformed(
        absl::StrCat("gather has ", offset_dims.size(), " offset_dims but ",
                     window_operand_dims.size(), " window dimensions"));
  }
  const int64_t out_rank = plan.space.batch_dims.size() + offset_dims.size();
  if (absl::Status s = CheckAxes(offset_dims, out_rank, "offset"); !s.ok()) {
    return s;
  }
  std::vector<int64_t> out_dims(out_rank);
  size_t b = 0, w = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (Contains(offset_dims, d)) {
      out_dims[d] = plan.slice_sizes[window_operand_dims[w++]];
    } else {
      plan.batch_out_dims.push_back(d);
      out_dims[d] = plan.space.batch_dims[b++];
    }
  }
  if (absl::Status s = ExpectResultShape(
          instruction, Shape::Array(operand.element_type(), out_dims));
      !s.ok()) {
    return s;
  }
  plan.result = instruction.shape();
  const std::vector<int64_t> op_strides = RowMajorStrides(operand.dimensions());
  const std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
  std::vector<int64_t> sorted_offset = offset_dims;
  std::sort(sorted_offset.begin(), sorted_offset.end());
  for (size_t i = 0; i < window_operand_dims.size(); ++i) {
    plan.window_dims.push_back(plan.slice_sizes[window_operand_dims[i]]);
    plan.window_src_strides.push_back(op_strides[window_operand_dims[i]]);
    plan.window_dst_strides.push_back(out_strides[sorted_offset[i]]);
  }
  const int64_t width = ByteWidth(operand.element_type());
  return MakeKernel([plan, width, op_strides, out_strides](
                        KernelContext& context,
                        absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    Literal result = Literal::Uninitialized(plan.result);
    if (plan.result.element_count() == 0) return result;
    const Literal& idx = *operands[1].value;
    const char* src =
        static_cast<const char*>(operands[0].value->untyped_data());
    char* dst = static_cast<char*>(const_cast<void*>(result.untyped_data()));
    const IndexSpace& sp = plan.space;
    int64_t batch_count = 1;
    for (int64_t d : sp.batch_dims) batch_count *= d;
    ParallelFor(
        context.device(), batch_count, 50, [&](int64_t begin, int64_t end) {
          std::vector<int64_t> bi(sp.batch_dims.size());
          for (int64_t g = begin; g < end; ++g) {
            int64_t rem = g;
            for (int64_t k = static_cast<int64_t>(bi.size()) - 1; k >= 0; --k) {
              bi[k] = rem % sp.batch_dims[k];
              rem /= sp.batch_dims[k];
            }
            int64_t idx_base = 0;
            for (size_t k = 0; k < bi.size(); ++k) {
              idx_base += bi[k] * sp.index_strides[sp.batch_axes[k]];
            }
            int64_t src_off = 0;
            std::vector<int64_t> start(plan.operand.rank(), 0);
            for (size_t k = 0; k < plan.start_index_map.size(); ++k) {
              start[plan.start_index_map[k]] =
                  ElementAsInt64(idx, idx_base + k * sp.index_vector_stride);
            }
            for (size_t k = 0; k < plan.operand_batching_dims.size(); ++k) {
              start[plan.operand_batching_dims[k]] =
                  bi[plan.indices_batching_dims[k]];
            }
            for (int64_t d = 0; d < plan.operand.rank(); ++d) {
              // Starts are clamped so the whole slice is inside the operand.
              const int64_t hi =
                  plan.operand.dimensions(d) - plan.slice_sizes[d];
              const int64_t s = std::min(std::max<int64_t>(start[d], 0), hi);
              src_off += s * op_strides[d];
            }
            int64_t dst_off = 0;
            for (size_t k = 0; k < bi.size(); ++k) {
              dst_off += bi[k] * out_strides[plan.batch_out_dims[k]];
            }
            CopyND(nullptr, width, plan.window_dims, src + src_off * width,
                   plan.window_src_strides, dst + dst_off * width,
                   plan.window_dst_strides);
          }
        });
    return result;
  });
}

// Scatter computations that run as typed loops: the update replaces the
// element (kAssign), or combines with it like a reducer of reducer.h.
struct Update {
  bool assign = false;
  Red kind = Red::kOther;
  bool typed() const { return assign || kind != Red::kOther; }
};

Update MatchUpdate(const HloComputation& c, xla::PrimitiveType type) {
  Update update;
  if (c.num_parameters() == 2 && c.root() == c.parameters()[1]) {
    update.assign = true;
  } else if (Red kind = MatchReducer(c); HasTypedReducer(kind, type)) {
    update.kind = kind;
  }
  return update;
}

template <typename T>
void ApplyUpdate(const Update& update, T* out, const T* upd) {
  if (update.assign) {
    *out = *upd;
    return;
  }
  using C = AccType<T>;
  WithReducer(update.kind, [&](auto op) {
    *out = static_cast<T>(Combine<decltype(op)::value, C>(
        static_cast<C>(*out), static_cast<C>(*upd)));
  });
}

struct ScatterPlan {
  int64_t n = 1;  // number of operand/update arrays
  std::vector<Shape> operands;
  Shape update;  // first update's shape
  Shape result;
  IndexSpace space;
  std::vector<int64_t> scatter_to_operand;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> indices_batching_dims;  // positions in batch_axes
  std::vector<int64_t> update_scatter_dims;    // update dims that index
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> window_operand_dims;  // operand dim per window dim
  Update typed_update;  // a typed loop, if typed_update.typed()
  const CompiledComputation* computation = nullptr;
};

template <typename T>
absl::Status RunScatterTyped(KernelContext& context, const ScatterPlan& plan,
                             absl::Span<const Operand> operands,
                             std::vector<Literal>& outs) {
  const Shape& operand = plan.operands[0];
  const Literal& idx = *operands[plan.n].value;
  const IndexSpace& sp = plan.space;
  const std::vector<int64_t> op_strides = RowMajorStrides(operand.dimensions());
  const std::vector<int64_t> up_strides =
      RowMajorStrides(plan.update.dimensions());
  const int64_t up_count = plan.update.element_count();
  std::vector<int64_t> ui(plan.update.rank(), 0);
  std::vector<int64_t> bi(sp.batch_dims.size());
  std::vector<int64_t> full(operand.rank());
  std::vector<T*> out_data;
  for (Literal& o : outs)
    out_data.push_back(static_cast<T*>(const_cast<void*>(o.untyped_data())));
  for (int64_t u = 0; u < up_count; ++u) {
    // Scatter (batch) index of this update element.
    for (size_t k = 0; k < plan.update_scatter_dims.size(); ++k) {
      bi[k] = ui[plan.update_scatter_dims[k]];
    }
    int64_t idx_base = 0;
    for (size_t k = 0; k < bi.size(); ++k) {
      idx_base += bi[k] * sp.index_strides[sp.batch_axes[k]];
    }
    std::fill(full.begin(), full.end(), 0);
    for (size_t k = 0; k < plan.scatter_to_operand.size(); ++k) {
      full[plan.scatter_to_operand[k]] =
          ElementAsInt64(idx, idx_base + k * sp.index_vector_stride);
    }
    for (size_t k = 0; k < plan.input_batching_dims.size(); ++k) {
      full[plan.input_batching_dims[k]] = bi[plan.indices_batching_dims[k]];
    }
    // The whole window must fit, else this update is skipped.
    bool in_bounds = true;
    for (int64_t d = 0; d < operand.rank(); ++d) {
      int64_t window = 1;
      for (size_t w = 0; w < plan.window_operand_dims.size(); ++w) {
        if (plan.window_operand_dims[w] == d) {
          window = plan.update.dimensions(plan.update_window_dims[w]);
        }
      }
      if (full[d] < 0 || full[d] + window > operand.dimensions(d)) {
        in_bounds = false;
      }
    }
    if (in_bounds) {
      int64_t off = 0;
      for (int64_t d = 0; d < operand.rank(); ++d)
        off += full[d] * op_strides[d];
      for (size_t w = 0; w < plan.window_operand_dims.size(); ++w) {
        off += ui[plan.update_window_dims[w]] *
               op_strides[plan.window_operand_dims[w]];
      }
      if (plan.typed_update.typed()) {
        ApplyUpdate<T>(plan.typed_update, out_data[0] + off,
                       operands[plan.n + 1].value->data<T>().data() + u);
      } else {
        std::vector<Literal> args;
        for (int64_t i = 0; i < plan.n; ++i) {
          const int64_t width = ByteWidth(plan.operands[i].element_type());
          Literal cur = Literal::Uninitialized(
              Shape::Scalar(plan.operands[i].element_type()));
          std::memcpy(
              const_cast<void*>(cur.untyped_data()),
              static_cast<const char*>(outs[i].untyped_data()) + off * width,
              width);
          args.push_back(std::move(cur));
        }
        for (int64_t i = 0; i < plan.n; ++i) {
          const int64_t width = ByteWidth(plan.operands[i].element_type());
          Literal upd = Literal::Uninitialized(
              Shape::Scalar(plan.operands[i].element_type()));
          std::memcpy(const_cast<void*>(upd.untyped_data()),
                      static_cast<const char*>(
                          operands[plan.n + 1 + i].value->untyped_data()) +
                          u * width,
                      width);
          args.push_back(std::move(upd));
        }
        absl::StatusOr<Literal> r =
            context.Call(*plan.computation, std::move(args));
        if (!r.ok()) return r.status();
        std::vector<Literal> values;
        if (plan.n == 1) {
          values.push_back(*std::move(r));
        } else {
          values = std::move(*r).DecomposeTuple();
        }
        for (int64_t i = 0; i < plan.n; ++i) {
          const int64_t width = ByteWidth(plan.operands[i].element_type());
          std::memcpy(
              static_cast<char*>(const_cast<void*>(outs[i].untyped_data())) +
                  off * width,
              values[i].untyped_data(), width);
        }
      }
    }
    for (int64_t d = plan.update.rank() - 1; d >= 0; --d) {
      if (++ui[d] < plan.update.dimensions(d)) break;
      ui[d] = 0;
    }
    if ((u & 0xffff) == 0xffff) {
      if (absl::Status s = context.CheckCancelled(); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileScatter(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  const int64_t total = instruction.operand_count();
  if (total < 3 || total % 2 == 0) {
    return Malformed("scatter needs N operands, indices and N updates");
  }
  if (instruction.called_computations().size() != 1) {
    return Malformed("scatter calls exactly one update computation");
  }
  ScatterPlan plan;
  plan.n = (total - 1) / 2;
  const Shape& indices = instruction.operand(plan.n)->shape();
  if (!indices.IsArray() || !IsIntegerType(indices.element_type())) {
    return Malformed("scatter indices must be an integer array");
  }
  for (int64_t i = 0; i < plan.n; ++i) {
    const Shape& op = instruction.operand(i)->shape();
    const Shape& up = instruction.operand(plan.n + 1 + i)->shape();
    if (absl::Status s = ExpectArray(op, "scatter operand"); !s.ok()) return s;
    if (op.dimensions() != instruction.operand(0)->shape().dimensions() ||
        up.dimensions() !=
            instruction.operand(plan.n + 1)->shape().dimensions() ||
        up.element_type() != op.element_type()) {
      return Malformed("scatter operands (and updates) must agree in shape");
    }
    plan.operands.push_back(op);
  }
  plan.update = instruction.operand(plan.n + 1)->shape();
  const Shape& operand = plan.operands[0];
  const auto& dn = instruction.proto().scatter_dimension_numbers();
  plan.update_window_dims = ToVector(dn.update_window_dims());
  const std::vector<int64_t> inserted = ToVector(dn.inserted_window_dims());
  plan.scatter_to_operand = ToVector(dn.scatter_dims_to_operand_dims());
  plan.input_batching_dims = ToVector(dn.input_batching_dims());
  const std::vector<int64_t> idx_batching =
      ToVector(dn.scatter_indices_batching_dims());
  const int64_t ivd = dn.index_vector_dim();
  if (ivd < 0 || ivd > indices.rank()) {
    return Malformed("scatter index_vector_dim out of range");
  }
  plan.space = MakeIndexSpace(indices, ivd);
  if (static_cast<int64_t>(plan.scatter_to_operand.size()) !=
      plan.space.vector_size) {
    return Malformed(
        "scatter_dims_to_operand_dims must have one entry per "
        "index vector element");
  }
  if (absl::Status s = CheckAxes(plan.scatter_to_operand, operand.rank(),
                                 "scatter_dims_to_operand_dims");
      !s.ok()) {
    return s;
  }
  std::vector<int64_t> not_window = inserted;
  not_window.insert(not_window.end(), plan.input_batching_dims.begin(),
                    plan.input_batching_dims.end());
  if (absl::Status s =
          CheckAxes(not_window, operand.rank(), "inserted/batching");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckAxes(plan.update_window_dims, plan.update.rank(),
                                 "update_window");
      !s.ok()) {
    return s;
  }
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (!Contains(not_window, d)) plan.window_operand_dims.push_back(d);
  }
  if (plan.window_operand_dims.size() != plan.update_window_dims.size()) {
    return Malformed(
        "scatter update_window_dims must cover the operand "
        "dims that are not inserted or batching");
  }
  for (int64_t d = 0; d < plan.update.rank(); ++d) {
    if (!Contains(plan.update_window_dims, d)) {
      plan.update_scatter_dims.push_back(d);
    }
  }
  if (plan.update_scatter_dims.size() != plan.space.batch_dims.size()) {
    return Malformed("scatter updates have the wrong number of scatter dims");
  }
  for (size_t k = 0; k < plan.update_scatter_dims.size(); ++k) {
    if (plan.update.dimensions(plan.update_scatter_dims[k]) !=
        plan.space.batch_dims[k]) {
      return Malformed("scatter update dims do not match the index dims");
    }
  }
  for (size_t w = 0; w < plan.update_window_dims.size(); ++w) {
    if (plan.update.dimensions(plan.update_window_dims[w]) >
        operand.dimensions(plan.window_operand_dims[w])) {
      return Malformed("scatter update window is larger than the operand");
    }
  }
  for (int64_t d : idx_batching) {
    auto it = std::find(plan.space.batch_axes.begin(),
                        plan.space.batch_axes.end(), d);
    if (it == plan.space.batch_axes.end()) {
      return Malformed(
          "scatter_indices_batching_dims must not include "
          "index_vector_dim");
    }
    plan.indices_batching_dims.push_back(it - plan.space.batch_axes.begin());
  }
  if (plan.indices_batching_dims.size() != plan.input_batching_dims.size()) {
    return Malformed("scatter batching dims of input and indices differ");
  }
  const Shape result = plan.n == 1 ? operand : Shape::Tuple(plan.operands);
  if (absl::Status s = ExpectResultShape(instruction, result); !s.ok())
    return s;
  plan.result = result;
  const HloComputation& update = *instruction.called_computations()[0];
  if (plan.n == 1)
    plan.typed_update = MatchUpdate(update, operand.element_type());
  if (!plan.typed_update.typed()) {
    absl::StatusOr<const CompiledComputation*> c = compiler.Compile(&update);
    if (!c.ok()) return c.status();
    plan.computation = *c;
  }
  const xla::PrimitiveType type = operand.element_type();
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        return MakeKernel([plan](KernelContext& context,
                                 absl::Span<const Operand> operands)
                              -> absl::StatusOr<Literal> {
          std::vector<Literal> outs;
          for (int64_t i = 0; i < plan.n; ++i) {
            Literal out = OutputReusing(plan.operands[i], operands, {int(i)});
            if (out.buffer() != operands[i].value->buffer()) {
              std::memcpy(const_cast<void*>(out.untyped_data()),
                          operands[i].value->untyped_data(), out.size_bytes());
            }
            outs.push_back(std::move(out));
          }
          if (plan.typed_update.typed()) {
            if (absl::Status s =
                    RunScatterTyped<T>(context, plan, operands, outs);
                !s.ok()) {
              return s;
            }
          } else {
            // Generic path: element type does not matter (bytes + calls).
            if (absl::Status s =
                    RunScatterTyped<uint8_t>(context, plan, operands, outs);
                !s.ok()) {
              return s;
            }
          }
          if (plan.n == 1) return std::move(outs[0]);
          return Literal::Tuple(std::move(outs));
        });
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

}  // namespace

void RegisterGatherScatterKernels(KernelRegistry& registry) {
  registry.Register("gather", &CompileGather);
  registry.Register("scatter", &CompileScatter);
}

}  // namespace tpu::emulator::interpreter
