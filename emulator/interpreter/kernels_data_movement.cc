// Kernel family: data movement. broadcast, reshape, bitcast, transpose,
// slice, dynamic-slice, dynamic-update-slice, concatenate, pad, reverse, iota.
// Most are strided copies over bytes, so one instantiation per element width
// serves every element type.

#include <cstring>

#include "emulator/interpreter/elementwise_common.h"

namespace tpu::emulator::interpreter {
namespace {

std::vector<int64_t> Dims(const HloInstruction& instruction) {
  const auto& d = instruction.proto().dimensions();
  return std::vector<int64_t>(d.begin(), d.end());
}

absl::Status SameElementType(const HloInstruction& instruction) {
  for (const HloInstruction* operand : instruction.operands()) {
    if (operand->shape().element_type() != instruction.shape().element_type()) {
      return Malformed(absl::StrCat(
          "operand ", operand->name(), " has type ",
          operand->shape().ToString(), " but the result has element type ",
          PrimitiveTypeName(instruction.shape().element_type())));
    }
  }
  return absl::OkStatus();
}

// A kernel whose result reads operand 0 as a strided view: element i of
// `shape` (row-major) is the operand element at `offset` plus the dot product
// of i's index with `strides` (in elements; 0 repeats, negative reverses).
std::unique_ptr<Kernel> MakeStridedViewKernel(Shape shape, int64_t offset,
                                              std::vector<int64_t> strides) {
  const int64_t width = ByteWidth(shape.element_type());
  return MakeKernel(
      [shape = std::move(shape), offset, strides = std::move(strides), width](
          KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        Literal result = Literal::Uninitialized(shape);
        if (shape.element_count() == 0) return result;
        StridedCopy(
            context.device(), width, shape.dimensions(),
            static_cast<const char*>(operands[0].value->untyped_data()) +
                offset * width,
            strides, const_cast<void*>(result.untyped_data()));
        return result;
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileBroadcast(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& in = instruction.operand(0)->shape();
  const Shape& out = instruction.shape();
  if (absl::Status s = ExpectArray(in, "operand"); !s.ok()) return s;
  if (absl::Status s = ExpectArray(out, "result"); !s.ok()) return s;
  if (absl::Status s = SameElementType(instruction); !s.ok()) return s;
  std::vector<int64_t> dims = Dims(instruction);
  if (static_cast<int64_t>(dims.size()) != in.rank()) {
    return Malformed(absl::StrCat("broadcast dimensions has ", dims.size(),
                                  " entries for a rank-", in.rank(),
                                  " operand"));
  }
  std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions());
  std::vector<int64_t> strides(out.rank(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= out.rank() ||
        out.dimensions(dims[i]) != in.dimensions(i)) {
      return Malformed(absl::StrCat(
          "broadcast maps operand dimension ", i, " (size ", in.dimensions(i),
          ") to result dimension ", dims[i], " of ", out.ToString()));
    }
    if (strides[dims[i]] != 0) {
      return Malformed("broadcast dimensions repeat");
    }
    strides[dims[i]] = in.dimensions(i) == 1 ? 0 : in_strides[i];
  }
  return MakeStridedViewKernel(out, /*offset=*/0, std::move(strides));
}

// reshape and bitcast: the row-major bytes do not change.
absl::StatusOr<std::unique_ptr<Kernel>> CompileReshape(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& in = instruction.operand(0)->shape();
  const Shape& out = instruction.shape();
  if (absl::Status s = ExpectArray(in, "operand"); !s.ok()) return s;
  if (absl::Status s = ExpectArray(out, "result"); !s.ok()) return s;
  if (absl::Status s = SameElementType(instruction); !s.ok()) return s;
  if (in.element_count() != out.element_count()) {
    return Malformed(absl::StrCat(instruction.opcode(), " from ", in.ToString(),
                                  " to ", out.ToString(),
                                  " changes the element count"));
  }
  const Shape shape = out;
  return MakeKernel(
      [shape](KernelContext&,
              absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        return Literal::FromBuffer(shape, operands[0].value->buffer());
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileTranspose(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& in = instruction.operand(0)->shape();
  if (absl::Status s = ExpectArray(in, "operand"); !s.ok()) return s;
  std::vector<int64_t> perm = Dims(instruction);
  std::vector<bool> seen(in.rank(), false);
  if (static_cast<int64_t>(perm.size()) != in.rank()) {
    return Malformed(
        "transpose dimensions must be a permutation of the "
        "operand's dimensions");
  }
  std::vector<int64_t> out_dims;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.rank() || seen[p]) {
      return Malformed(
          "transpose dimensions must be a permutation of the "
          "operand's dimensions");
    }
    seen[p] = true;
    out_dims.push_back(in.dimensions(p));
  }
  if (absl::Status s = ExpectResultShape(
          instruction, Shape::Array(in.element_type(), out_dims));
      !s.ok()) {
    return s;
  }
  const Shape shape = instruction.shape();
  const std::vector<int64_t> in_dims = in.dimensions();
  const int64_t width = ByteWidth(in.element_type());
  return MakeKernel(
      [=](KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        Literal result = Literal::Uninitialized(shape);
        Transpose(context.device(), width, in_dims, perm,
                  operands[0].value->untyped_data(),
                  const_cast<void*>(result.untyped_data()));
        return result;
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileSlice(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& in = instruction.operand(0)->shape();
  if (absl::Status s = ExpectArray(in, "operand"); !s.ok()) return s;
  const auto& slice = instruction.proto().slice_dimensions();
  if (slice.size() != in.rank()) {
    return Malformed(absl::StrCat("slice has ", slice.size(),
                                  " slice_dimensions for a rank-", in.rank(),
                                  " operand"));
  }
  std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions());
  std::vector<int64_t> out_dims, strides;
  int64_t offset = 0;
  for (int64_t d = 0; d < in.rank(); ++d) {
    const int64_t start = slice[d].start(), limit = slice[d].limit();
    const int64_t stride = slice[d].stride() == 0 ? 1 : slice[d].stride();
    if (start < 0 || limit < start || limit > in.dimensions(d) || stride < 1) {
      return Malformed(absl::StrCat("slice of dimension ", d, " [", start, ":",
                                    limit, ":", stride, "] is out of bounds ",
                                    "for ", in.ToString()));
    }
    out_dims.push_back((limit - start + stride - 1) / stride);
    strides.push_back(in_strides[d] * stride);
    offset += start * in_strides[d];
  }
  if (absl::Status s = ExpectResultShape(
          instruction, Shape::Array(in.element_type(), out_dims));
      !s.ok()) {
    return s;
  }
  return MakeStridedViewKernel(instruction.shape(), offset, std::move(strides));
}

// The start indices of dynamic-slice and dynamic-update-slice from operand
// `first` on: one integer scalar per dimension, or (the older form XLA's
// verifier still accepts) one integer vector of `count` elements.
struct StartIndices {
  int64_t first = 0;
  bool vector = false;
  int64_t Get(absl::Span<const Operand> operands, int64_t d) const {
    return vector ? ElementAsInt64(*operands[first].value, d)
                  : ScalarAsInt64(*operands[first + d].value);
  }
};

absl::StatusOr<StartIndices> ExpectStartIndices(
    const HloInstruction& instruction, int64_t first, int64_t count) {
  auto is_integer = [](const Shape& s) {
    return s.IsArray() && (IsSignedInteger(s.element_type()) ||
                           IsUnsignedInteger(s.element_type()));
  };
  if (instruction.operand_count() == first + 1 && count != 0) {
    const Shape& s = instruction.operand(first)->shape();
    if (is_integer(s) && s.rank() == 1 && s.dimensions(0) == count) {
      return StartIndices{first, true};
    }
  }
  if (instruction.operand_count() != first + count) {
    return Malformed(absl::StrCat(
        instruction.opcode(), " needs ", first + count, " operands (", count,
        " scalar start indices, or one vector of them), got ",
        instruction.operand_count()));
  }
  for (int64_t i = first; i < first + count; ++i) {
    const Shape& s = instruction.operand(i)->shape();
    if (!is_integer(s) || s.rank() != 0) {
      return Malformed(absl::StrCat("start index ", i - first,
                                    " must be an integer scalar, got ",
                                    s.ToString()));
    }
  }
  return StartIndices{first, false};
}

// Clamped start of a window of `size` in a dimension of `dim` (XLA's rule).
int64_t ClampStart(int64_t start, int64_t dim, int64_t size) {
  return std::min(std::max<int64_t>(start, 0), dim - size);
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileDynamicSlice(
    const HloInstruction& instruction, KernelCompiler&) {
  if (instruction.operand_count() < 1) return ExpectOperands(instruction, 1);
  const Shape& in = instruction.operand(0)->shape();
  if (absl::Status s = ExpectArray(in, "operand"); !s.ok()) return s;
  absl::StatusOr<StartIndices> starts =
      ExpectStartIndices(instruction, 1, in.rank());
  if (!starts.ok()) return starts.status();
  const StartIndices start = *starts;
  const auto& sizes = instruction.proto().dynamic_slice_sizes();
  if (sizes.size() != in.rank()) {
    return Malformed("dynamic_slice_sizes must have one entry per dimension");
  }
  std::vector<int64_t> out_dims(sizes.begin(), sizes.end());
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (out_dims[d] < 0 || out_dims[d] > in.dimensions(d)) {
      return Malformed(absl::StrCat("dynamic slice size ", out_dims[d],
                                    " exceeds dimension ", d, " of ",
                                    in.ToString()));
    }
  }
  if (absl::Status s = ExpectResultShape(
          instruction, Shape::Array(in.element_type(), out_dims));
      !s.ok()) {
    return s;
  }
  const Shape shape = instruction.shape();
  const std::vector<int64_t> in_dims = in.dimensions();
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
  const int64_t width = ByteWidth(in.element_type());
  return MakeKernel(
      [=](KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        Literal result = Literal::Uninitialized(shape);
        int64_t offset = 0;
        for (size_t d = 0; d < in_dims.size(); ++d) {
          offset += ClampStart(start.Get(operands, d), in_dims[d],
                               shape.dimensions(d)) *
                    in_strides[d];
        }
        if (shape.element_count() == 0) return result;
        StridedCopy(
            context.device(), width, shape.dimensions(),
            static_cast<const char*>(operands[0].value->untyped_data()) +
                offset * width,
            in_strides, const_cast<void*>(result.untyped_data()));
        return result;
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileDynamicUpdateSlice(
    const HloInstruction& instruction, KernelCompiler&) {
  if (instruction.operand_count() < 2) return ExpectOperands(instruction, 2);
  const Shape& in = instruction.operand(0)->shape();
  const Shape& update = instruction.operand(1)->shape();
  if (absl::Status s = ExpectArray(in, "operand"); !s.ok()) return s;
  absl::StatusOr<StartIndices> starts =
      ExpectStartIndices(instruction, 2, in.rank());
  if (!starts.ok()) return starts.status();
  const StartIndices start = *starts;
  if (update.element_type() != in.element_type() ||
      update.rank() != in.rank()) {
    return Malformed(absl::StrCat("update ", update.ToString(),
                                  " does not fit operand ", in.ToString()));
  }
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (update.dimensions(d) > in.dimensions(d)) {
      return Malformed(absl::StrCat("update ", update.ToString(),
                                    " is larger than operand ", in.ToString()));
    }
  }
  if (absl::Status s = ExpectResultShape(instruction, in); !s.ok()) return s;
  const Shape shape = in;
  const std::vector<int64_t> update_dims = update.dimensions();
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions());
  const std::vector<int64_t> update_strides = RowMajorStrides(update_dims);
  const int64_t width = ByteWidth(in.element_type());
  return MakeKernel(
      [=](KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        // In place when the operand is dead and unshared (the common loop
        // case).
        Literal result = OutputReusing(shape, operands, {0});
        char* out =
            static_cast<char*>(const_cast<void*>(result.untyped_data()));
        if (result.buffer() != operands[0].value->buffer()) {
          std::memcpy(out, operands[0].value->untyped_data(), shape.ByteSize());
        }
        int64_t offset = 0;
        for (int64_t d = 0; d < shape.rank(); ++d) {
          offset += ClampStart(start.Get(operands, d), shape.dimensions(d),
                               update_dims[d]) *
                    in_strides[d];
        }
        CopyND(context.device(), width, update_dims,
               static_cast<const char*>(operands[1].value->untyped_data()),
               update_strides, out + offset * width, in_strides);
        return result;
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileConcatenate(
    const HloInstruction& instruction, KernelCompiler&) {
  if (instruction.operand_count() < 1) {
    return Malformed("concatenate needs at least one operand");
  }
  std::vector<int64_t> dims = Dims(instruction);
  const Shape& first = instruction.operand(0)->shape();
  if (absl::Status s = ExpectArray(first, "operand"); !s.ok()) return s;
  if (dims.size() != 1 || dims[0] < 0 || dims[0] >= first.rank()) {
    return Malformed("concatenate needs one dimension within the rank");
  }
  const int64_t axis = dims[0];
  if (absl::Status s = SameElementType(instruction); !s.ok()) return s;
  std::vector<int64_t> out_dims = first.dimensions();
  out_dims[axis] = 0;
  std::vector<int64_t> sizes;
  for (const HloInstruction* operand : instruction.operands()) {
    const Shape& s = operand->shape();
    if (s.rank() != first.rank()) {
      return Malformed("concatenate operands must have the same rank");
    }
    for (int64_t d = 0; d < s.rank(); ++d) {
      if (d != axis && s.dimensions(d) != first.dimensions(d)) {
        return Malformed(absl::StrCat("concatenate operand ", s.ToString(),
                                      " does not match ", first.ToString(),
                                      " outside dimension ", axis));
      }
    }
    out_dims[axis] += s.dimensions(axis);
    sizes.push_back(s.dimensions(axis));
  }
  if (absl::Status s = ExpectResultShape(
          instruction, Shape::Array(first.element_type(), out_dims));
      !s.ok()) {
    return s;
  }
  int64_t outer = 1, inner = ByteWidth(first.element_type());
  for (int64_t d = 0; d < axis; ++d) outer *= out_dims[d];
  for (int64_t d = axis + 1; d < first.rank(); ++d) inner *= out_dims[d];
  const Shape shape = instruction.shape();
  return MakeKernel([=](KernelContext& context,
                        absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    Literal result = Literal::Uninitialized(shape);
    char* out = static_cast<char*>(const_cast<void*>(result.untyped_data()));
    const int64_t out_row = out_dims[axis] * inner;
    int64_t column = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const int64_t row = sizes[i] * inner;
      const char* src =
          static_cast<const char*>(operands[i].value->untyped_data());
      const int64_t col = column;
      ParallelFor(context.device(), outer, row / 4.0 + 10,
                  [&](int64_t begin, int64_t end) {
                    for (int64_t o = begin; o < end; ++o) {
                      std::memcpy(out + o * out_row + col, src + o * row, row);
                    }
                  });
      column += row;
    }
    return result;
  });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompilePad(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  const Shape& in = instruction.operand(0)->shape();
  const Shape& value = instruction.operand(1)->shape();
  if (absl::Status s = ExpectArray(in, "operand"); !s.ok()) return s;
  if (absl::Status s = SameElementType(instruction); !s.ok()) return s;
  if (value.rank() != 0) return Malformed("pad value must be a scalar");
  const auto& config = instruction.proto().padding_config().dimensions();
  if (config.size() != in.rank()) {
    return Malformed(absl::StrCat("padding_config has ", config.size(),
                                  " dimensions for a rank-", in.rank(),
                                  " operand"));
  }
  std::vector<int64_t> out_dims;
  for (int64_t d = 0; d < in.rank(); ++d) {
    const auto& c = config[d];
    if (c.interior_padding() < 0) {
      return Malformed("interior padding must not be negative");
    }
    const int64_t n = in.dimensions(d);
    const int64_t size = c.edge_padding_low() + c.edge_padding_high() + n +
                         std::max<int64_t>(n - 1, 0) * c.interior_padding();
    if (size < 0) {
      return Malformed(
          absl::StrCat("padding makes dimension ", d, " negative"));
    }
    out_dims.push_back(size);
  }
  if (absl::Status s = ExpectResultShape(
          instruction, Shape::Array(in.element_type(), out_dims));
      !s.ok()) {
    return s;
  }
  // For each dimension: the first operand index that lands inside the
  // output, how many do, and where the first one lands.
  std::vector<int64_t> first_in(in.rank()), count(in.rank()),
      first_out(in.rank()), step(in.rank());
  bool empty = false;
  for (int64_t d = 0; d < in.rank(); ++d) {
    const auto& c = config[d];
    step[d] = c.interior_padding() + 1;
    const int64_t lo = c.edge_padding_low();
    // Operand index i lands at lo + i * step.
    int64_t i0 = 0;
    if (lo < 0) i0 = (-lo + step[d] - 1) / step[d];
    int64_t i1 = in.dimensions(d);  // exclusive
    // Need lo + i*step < out_dims[d].
    if (out_dims[d] - lo > 0) {
      i1 = std::min(i1, (out_dims[d] - lo + step[d] - 1) / step[d]);
    } else {
      i1 = 0;
    }
    first_in[d] = i0;
    count[d] = std::max<int64_t>(i1 - i0, 0);
    first_out[d] = lo + i0 * step[d];
    if (count[d] == 0) empty = true;
  }
  const Shape shape = instruction.shape();
  const int64_t width = ByteWidth(in.element_type());
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions());
  const std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
  int64_t src_offset = 0, dst_offset = 0;
  std::vector<int64_t> dst_strides(in.rank());
  for (int64_t d = 0; d < in.rank(); ++d) {
    src_offset += first_in[d] * in_strides[d];
    dst_offset += first_out[d] * out_strides[d];
    dst_strides[d] = out_strides[d] * step[d];
  }
  return MakeKernel(
      [=](KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        Literal result = Literal::Uninitialized(shape);
        char* out =
            static_cast<char*>(const_cast<void*>(result.untyped_data()));
        Fill(context.device(), width, shape.element_count(),
             operands[1].value->untyped_data(), out);
        if (!empty && in.element_count() > 0) {
          CopyND(context.device(), width, count,
                 static_cast<const char*>(operands[0].value->untyped_data()) +
                     src_offset * width,
                 in_strides, out + dst_offset * width, dst_strides);
        }
        return result;
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileReverse(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& in = instruction.operand(0)->shape();
  if (absl::Status s = ExpectArray(in, "operand"); !s.ok()) return s;
  if (absl::Status s = ExpectResultShape(instruction, in); !s.ok()) return s;
  std::vector<int64_t> strides = RowMajorStrides(in.dimensions());
  int64_t offset = 0;
  for (int64_t d : Dims(instruction)) {
    if (d < 0 || d >= in.rank()) {
      return Malformed(absl::StrCat("reverse dimension ", d, " out of range"));
    }
    if (strides[d] < 0) return Malformed("reverse dimensions repeat");
    offset += (in.dimensions(d) - 1) * strides[d];
    strides[d] = -strides[d];
  }
  return MakeStridedViewKernel(in, offset, std::move(strides));
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileIota(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 0); !s.ok()) return s;
  const Shape shape = instruction.shape();
  if (absl::Status s = ExpectArray(shape, "result"); !s.ok()) return s;
  std::vector<int64_t> dims = Dims(instruction);
  if (dims.size() != 1 || dims[0] < 0 ||
      dims[0] >= std::max<int64_t>(shape.rank(), 1)) {
    return Malformed("iota needs one iota_dimension within the rank");
  }
  if (shape.rank() == 0) return Malformed("iota result must have rank >= 1");
  const int64_t axis = dims[0];
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < shape.rank(); ++d)
    inner *= shape.dimensions(d);
  const int64_t extent = shape.dimensions(axis);
  const xla::PrimitiveType type = shape.element_type();
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) {
          return UnsupportedType(instruction, type);
        } else {
          return MakeKernel(
              [=](KernelContext& context,
                  absl::Span<const Operand>) -> absl::StatusOr<Literal> {
                Literal result = Literal::Uninitialized(shape);
                T* out =
                    static_cast<T*>(const_cast<void*>(result.untyped_data()));
                ParallelFor(
                    context.device(), shape.element_count(), 2,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t i = begin; i < end; ++i) {
                        const int64_t v = (i / inner) % extent;
                        if constexpr (kIsComplex<T>) {
                          out[i] = T(static_cast<typename T::value_type>(v));
                        } else {
                          out[i] =
                              static_cast<T>(static_cast<ComputeType<T>>(v));
                        }
                      }
                    });
                return result;
              });
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

}  // namespace

void RegisterDataMovementKernels(KernelRegistry& registry) {
  registry.Register("broadcast", &CompileBroadcast);
  registry.Register("reshape", &CompileReshape);
  registry.Register("bitcast", &CompileReshape);
  registry.Register("transpose", &CompileTranspose);
  registry.Register("slice", &CompileSlice);
  registry.Register("dynamic-slice", &CompileDynamicSlice);
  registry.Register("dynamic-update-slice", &CompileDynamicUpdateSlice);
  registry.Register("concatenate", &CompileConcatenate);
  registry.Register("pad", &CompilePad);
  registry.Register("reverse", &CompileReverse);
  registry.Register("iota", &CompileIota);
}

}  // namespace tpu::emulator::interpreter
