#include "emulator/interpreter/kernel_util.h"

#include <cstring>
#include <limits>

#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {

absl::Status UnsupportedType(const HloInstruction& instruction,
                             xla::PrimitiveType type) {
  return absl::UnimplementedError(
      absl::StrCat("the interpreter does not support ", instruction.opcode(),
                   " on element type ", PrimitiveTypeName(type)));
}

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

absl::Status ExpectOperands(const HloInstruction& instruction, int64_t n) {
  if (instruction.operand_count() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(instruction.opcode(), " takes ", n, " operand",
                     n == 1 ? "" : "s", ", got ", instruction.operand_count()));
  }
  return absl::OkStatus();
}

absl::Status ExpectArray(const Shape& shape, absl::string_view what) {
  if (!shape.IsArray()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be an array, got ", shape.ToString()));
  }
  return absl::OkStatus();
}

absl::Status ExpectResultShape(const HloInstruction& instruction,
                               const Shape& expected) {
  if (instruction.shape() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "result shape ", instruction.shape().ToString(), " does not match ",
        instruction.opcode(), "'s inferred shape ", expected.ToString()));
  }
  return absl::OkStatus();
}

std::unique_ptr<Kernel> MakeForwardKernel(int64_t index) {
  return MakeKernel(
      [index](KernelContext&,
              absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        return *operands[index].value;
      });
}

std::unique_ptr<Kernel> MakeElementKernel(int64_t index) {
  return MakeKernel(
      [index](KernelContext&,
              absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        return operands[0].value->element(index);
      });
}

std::unique_ptr<Kernel> MakeConstantKernel(Literal value) {
  return MakeKernel([value = std::move(value)](
                        KernelContext&,
                        absl::Span<const Operand>) -> absl::StatusOr<Literal> {
    return value;
  });
}

void ParallelFor(const Eigen::ThreadPoolDevice* device, int64_t n,
                 double cost_per_item,
                 const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (device == nullptr || device->numThreads() <= 1 ||
      n * cost_per_item < 20000) {
    fn(0, n);
    return;
  }
  device->parallelFor(
      n, Eigen::TensorOpCost(0, 0, cost_per_item),
      [&fn](Eigen::Index begin, Eigen::Index end) { fn(begin, end); });
}

// Kernels write outputs through const_cast<void*>(out.untyped_data()), not
// mutable_untyped_data(): a reused output shares its buffer with the dead
// operand until the executor drops that operand right after the kernel, so
// copy-on-write would defeat the reuse. Outputs are the kernel's own.
Literal OutputReusing(const Shape& shape, absl::Span<const Operand> operands,
                      std::initializer_list<int> candidates) {
  for (int i : candidates) {
    const Operand& operand = operands[i];
    if (!operand.last_use) continue;
    const std::shared_ptr<AlignedBuffer>& buffer = operand.value->buffer();
    if (buffer == nullptr || buffer.use_count() != 1) continue;
    if (buffer->size() != shape.ByteSize()) continue;
    absl::StatusOr<Literal> reused = Literal::FromBuffer(shape, buffer);
    if (reused.ok()) return *std::move(reused);
  }
  return Literal::Uninitialized(shape);
}

std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

namespace {

template <typename W>
void CopyRow(const W* src, int64_t stride, int64_t n, W* dst) {
  if (stride == 1) {
    std::memcpy(dst, src, n * sizeof(W));
  } else if (stride == 0) {
    std::fill(dst, dst + n, *src);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i * stride];
  }
}

struct Bytes16 {
  uint64_t lo, hi;
};

void CopyRowOfWidth(int64_t width, const char* src, int64_t stride, int64_t n,
                    char* dst) {
  switch (width) {
    case 1:
      return CopyRow(reinterpret_cast<const uint8_t*>(src), stride, n,
                     reinterpret_cast<uint8_t*>(dst));
    case 2:
      return CopyRow(reinterpret_cast<const uint16_t*>(src), stride, n,
                     reinterpret_cast<uint16_t*>(dst));
    case 4:
      return CopyRow(reinterpret_cast<const uint32_t*>(src), stride, n,
                     reinterpret_cast<uint32_t*>(dst));
    case 8:
      return CopyRow(reinterpret_cast<const uint64_t*>(src), stride, n,
                     reinterpret_cast<uint64_t*>(dst));
    case 16:
      return CopyRow(reinterpret_cast<const Bytes16*>(src), stride, n,
                     reinterpret_cast<Bytes16*>(dst));
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(dst + i * width, src + i * stride * width, width);
      }
  }
}

template <typename W, int kRank>
void ShuffleImpl(const Eigen::ThreadPoolDevice* device,
                 const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& perm, const void* src, void* dst) {
  Eigen::array<Eigen::Index, kRank> in_dims, shuffle, out_dims;
  for (int i = 0; i < kRank; ++i) {
    in_dims[i] = dims[i];
    shuffle[i] = perm[i];
  }
  for (int i = 0; i < kRank; ++i) out_dims[i] = dims[perm[i]];
  Eigen::TensorMap<const Eigen::Tensor<W, kRank, Eigen::RowMajor>> in(
      static_cast<const W*>(src), in_dims);
  Eigen::TensorMap<Eigen::Tensor<W, kRank, Eigen::RowMajor>> out(
      static_cast<W*>(dst), out_dims);
  if (device != nullptr) {
    out.device(*device) = in.shuffle(shuffle);
  } else {
    out = in.shuffle(shuffle);
  }
}

template <typename W>
bool ShuffleOfWidth(const Eigen::ThreadPoolDevice* device,
                    const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& perm, const void* src,
                    void* dst) {
  switch (dims.size()) {
    case 2:
      ShuffleImpl<W, 2>(device, dims, perm, src, dst);
      return true;
    case 3:
      ShuffleImpl<W, 3>(device, dims, perm, src, dst);
      return true;
    case 4:
      ShuffleImpl<W, 4>(device, dims, perm, src, dst);
      return true;
    case 5:
      ShuffleImpl<W, 5>(device, dims, perm, src, dst);
      return true;
    default:
      return false;
  }
}

}  // namespace

void StridedCopy(const Eigen::ThreadPoolDevice* device, int64_t width,
                 absl::Span<const int64_t> out_dims, const void* src,
                 absl::Span<const int64_t> src_strides, void* dst) {
  const int64_t rank = out_dims.size();
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  if (rank == 0) {
    std::memcpy(d, s, width);
    return;
  }
  int64_t total = 1;
  for (int64_t dim : out_dims) total *= dim;
  if (total == 0) return;
  const int64_t inner = out_dims[rank - 1];
  const int64_t inner_stride = src_strides[rank - 1];
  const int64_t rows = total / inner;
  std::vector<int64_t> outer(out_dims.begin(), out_dims.end() - 1);
  std::vector<int64_t> strides(src_strides.begin(), src_strides.end() - 1);
  ParallelFor(device, rows, 2.0 * inner + 10, [&](int64_t begin, int64_t end) {
    // Multi-index of row `begin`.
    std::vector<int64_t> index(outer.size(), 0);
    int64_t r = begin;
    for (int64_t k = static_cast<int64_t>(outer.size()) - 1; k >= 0; --k) {
      index[k] = r % outer[k];
      r /= outer[k];
    }
    int64_t offset = 0;
    for (size_t k = 0; k < outer.size(); ++k) offset += index[k] * strides[k];
    for (int64_t row = begin; row < end; ++row) {
      CopyRowOfWidth(width, s + offset * width, inner_stride, inner,
                     d + row * inner * width);
      for (int64_t k = static_cast<int64_t>(outer.size()) - 1; k >= 0; --k) {
        offset += strides[k];
        if (++index[k] < outer[k]) break;
        offset -= strides[k] * outer[k];
        index[k] = 0;
      }
    }
  });
}

void Transpose(const Eigen::ThreadPoolDevice* device, int64_t width,
               absl::Span<const int64_t> in_dims,
               absl::Span<const int64_t> perm, const void* src, void* dst) {
  // Drop size-1 dimensions and merge runs of dimensions that stay adjacent.
  std::vector<int64_t> keep;  // input dims with size > 1
  int64_t total = 1;
  for (int64_t d : in_dims) total *= d;
  if (total == 0) return;
  std::vector<int64_t> new_index(in_dims.size(), -1);
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (in_dims[d] != 1) {
      new_index[d] = keep.size();
      keep.push_back(d);
    }
  }
  std::vector<int64_t> p;  // perm over kept dims
  for (int64_t d : perm) {
    if (new_index[d] >= 0) p.push_back(new_index[d]);
  }
  std::vector<int64_t> dims;
  for (int64_t d : keep) dims.push_back(in_dims[d]);
  // Merge: output positions i, i+1 with p[i+1] == p[i] + 1.
  std::vector<std::vector<int64_t>> groups;  // groups of input dims, in
                                             // output order
  for (size_t i = 0; i < p.size(); ++i) {
    if (!groups.empty() && groups.back().back() + 1 == p[i]) {
      groups.back().push_back(p[i]);
    } else {
      groups.push_back({p[i]});
    }
  }
  // Groups sorted by their first input dim give the merged input order.
  std::vector<size_t> by_input(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) by_input[g] = g;
  std::sort(by_input.begin(), by_input.end(),
            [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  std::vector<int64_t> merged_dims(groups.size());
  std::vector<int64_t> input_position(groups.size());
  for (size_t k = 0; k < by_input.size(); ++k) {
    int64_t size = 1;
    for (int64_t d : groups[by_input[k]]) size *= dims[d];
    merged_dims[k] = size;
    input_position[by_input[k]] = k;
  }
  std::vector<int64_t> merged_perm(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    merged_perm[g] = input_position[g];
  }
  bool identity = true;
  for (size_t i = 0; i < merged_perm.size(); ++i) {
    if (merged_perm[i] != static_cast<int64_t>(i)) identity = false;
  }
  if (identity) {
    std::memcpy(dst, src, total * width);
    return;
  }
  bool done = false;
  switch (width) {
    case 1:
      done =
          ShuffleOfWidth<uint8_t>(device, merged_dims, merged_perm, src, dst);
      break;
    case 2:
      done =
          ShuffleOfWidth<uint16_t>(device, merged_dims, merged_perm, src, dst);
      break;
    case 4:
      done =
          ShuffleOfWidth<uint32_t>(device, merged_dims, merged_perm, src, dst);
      break;
    case 8:
      done =
          ShuffleOfWidth<uint64_t>(device, merged_dims, merged_perm, src, dst);
      break;
    default:
      break;
  }
  if (done) return;
  std::vector<int64_t> in_strides = RowMajorStrides(merged_dims);
  std::vector<int64_t> out_dims(merged_perm.size()),
      strides(merged_perm.size());
  for (size_t i = 0; i < merged_perm.size(); ++i) {
    out_dims[i] = merged_dims[merged_perm[i]];
    strides[i] = in_strides[merged_perm[i]];
  }
  StridedCopy(device, width, out_dims, src, strides, dst);
}

// dst[sum(i_d * dst_strides[d])] = src[sum(i_d * src_strides[d])] for every
// index i of `dims`. Strides in elements, any sign.
void CopyND(const Eigen::ThreadPoolDevice* device, int64_t width,
            const std::vector<int64_t>& dims, const char* src,
            const std::vector<int64_t>& src_strides, char* dst,
            const std::vector<int64_t>& dst_strides) {
  const int64_t rank = dims.size();
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, width);
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t s_in = src_strides[rank - 1], d_in = dst_strides[rank - 1];
  const int64_t rows = total / inner;
  ParallelFor(device, rows, 2.0 * inner + 10, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> index(rank - 1, 0);
    int64_t r = begin;
    for (int64_t k = rank - 2; k >= 0; --k) {
      index[k] = r % dims[k];
      r /= dims[k];
    }
    int64_t so = 0, doff = 0;
    for (int64_t k = 0; k < rank - 1; ++k) {
      so += index[k] * src_strides[k];
      doff += index[k] * dst_strides[k];
    }
    for (int64_t row = begin; row < end; ++row) {
      const char* s = src + so * width;
      char* d = dst + doff * width;
      if (s_in == 1 && d_in == 1) {
        std::memcpy(d, s, inner * width);
      } else {
        for (int64_t i = 0; i < inner; ++i) {
          std::memcpy(d + i * d_in * width, s + i * s_in * width, width);
        }
      }
      for (int64_t k = rank - 2; k >= 0; --k) {
        so += src_strides[k];
        doff += dst_strides[k];
        if (++index[k] < dims[k]) break;
        so -= src_strides[k] * dims[k];
        doff -= dst_strides[k] * dims[k];
        index[k] = 0;
      }
    }
  });
}

// Fills `n` elements of `width` bytes with `value`.
void Fill(const Eigen::ThreadPoolDevice* device, int64_t width, int64_t n,
          const void* value, void* dst) {
  ParallelFor(device, n, 1, [&](int64_t begin, int64_t end) {
    char* d = static_cast<char*>(dst);
    switch (width) {
      case 1:
        std::memset(d + begin, *static_cast<const uint8_t*>(value),
                    end - begin);
        return;
      case 2:
        std::fill(reinterpret_cast<uint16_t*>(d) + begin,
                  reinterpret_cast<uint16_t*>(d) + end,
                  *static_cast<const uint16_t*>(value));
        return;
      case 4:
        std::fill(reinterpret_cast<uint32_t*>(d) + begin,
                  reinterpret_cast<uint32_t*>(d) + end,
                  *static_cast<const uint32_t*>(value));
        return;
      case 8:
        std::fill(reinterpret_cast<uint64_t*>(d) + begin,
                  reinterpret_cast<uint64_t*>(d) + end,
                  *static_cast<const uint64_t*>(value));
        return;
      default:
        for (int64_t i = begin; i < end; ++i) {
          std::memcpy(d + i * width, value, width);
        }
    }
  });
}

std::vector<double> ValuesAsDouble(const Literal& literal) {
  std::vector<double> out(literal.shape().element_count());
  DispatchType(
      literal.shape().element_type(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, c64> && !std::is_same_v<T, c128>) {
          const T* data = literal.data<T>().data();
          for (size_t i = 0; i < out.size(); ++i) {
            out[i] = static_cast<double>(data[i]);
          }
        }
      },
      [] {});
  return out;
}

namespace {

template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (v != v) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::min())) {
      return std::numeric_limits<T>::min();
    }
    // 2^bits is exact in double; values at or above it saturate.
    if (v >= static_cast<double>(std::numeric_limits<T>::max() / 2 + 1) * 2) {
      return std::numeric_limits<T>::max();
    }
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    // Through float, as convert from f64 does (one rounding for f32).
    return static_cast<T>(static_cast<float>(v));
  }
}

}  // namespace

Literal LiteralFromDoubles(const Shape& shape,
                           absl::Span<const double> values) {
  Literal out = Literal::Uninitialized(shape);
  DispatchType(
      shape.element_type(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, c64> && !std::is_same_v<T, c128>) {
          T* data = static_cast<T*>(out.mutable_untyped_data());
          for (size_t i = 0; i < values.size(); ++i) {
            data[i] = FromDouble<T>(values[i]);
          }
        }
      },
      [] {});
  return out;
}

int64_t ElementAsInt64(const Literal& literal, int64_t linear) {
  const void* p = literal.untyped_data();
  switch (literal.shape().element_type()) {
    case xla::S8:
      return static_cast<const int8_t*>(p)[linear];
    case xla::S16:
      return static_cast<const int16_t*>(p)[linear];
    case xla::S32:
      return static_cast<const int32_t*>(p)[linear];
    case xla::S64:
      return static_cast<const int64_t*>(p)[linear];
    case xla::U8:
      return static_cast<const uint8_t*>(p)[linear];
    case xla::U16:
      return static_cast<const uint16_t*>(p)[linear];
    case xla::U32:
      return static_cast<const uint32_t*>(p)[linear];
    case xla::U64: {
      // Indices past INT64_MAX clamp like any other out-of-range index.
      uint64_t v = static_cast<const uint64_t*>(p)[linear];
      return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX
                                                  : static_cast<int64_t>(v);
    }
    case xla::PRED:
      return static_cast<const bool*>(p)[linear] ? 1 : 0;
    default:
      return 0;
  }
}

}  // namespace tpu::emulator::interpreter
