#include "emulator/interpreter/collective_combine.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "emulator/interpreter/elementwise_common.h"
#include "emulator/interpreter/stream_store.h"

namespace tpu::emulator::interpreter {
namespace {

// Elements folded per block: the accumulator block stays in L1 while the
// contributions stream through it.
constexpr int64_t kBlock = 2048;

// Contributions folded per pass over a block. Reading them together keeps
// that many sequential streams going at once, which the hardware prefetchers
// follow; one contribution per pass (8 KiB, then the next) stalled on memory
// and ran the 64 MiB 8-way all-reduce 2-3x slower. Eight read streams plus
// the accumulator fit the prefetchers and the registers.
constexpr int kGroup = 8;

// Results at least this large are written with non-temporal stores: they
// do not fit the caches anyway, and skipping the read-for-ownership saves
// a tenth of an 8-way all-reduce's memory traffic.
constexpr int64_t kStreamBytes = int64_t{8} << 20;

// acc[i] = (((acc[i] op s[0][i]) op s[1][i]) ... op s[G-1][i]) for i < len,
// or with kFirst, (s[0][i] op s[1][i]) ... without reading acc. Each step
// rounds to T, as applying the HLO computation does, and the order is the
// sources' order, so the result is the same bits as one source at a time.
template <Red kOp, typename T, int G, bool kFirst>
void FoldGroup(T* __restrict acc, const T* const* s, int64_t len) {
  using C = ComputeType<T>;
  const T* p[G];
  for (int g = 0; g < G; ++g) p[g] = s[g];
  for (int64_t i = 0; i < len; ++i) {
    T v = kFirst ? p[0][i] : acc[i];
    for (int g = kFirst ? 1 : 0; g < G; ++g) {
      v = static_cast<T>(
          Combine<kOp, C>(static_cast<C>(v), static_cast<C>(p[g][i])));
    }
    acc[i] = v;
  }
}

// FoldGroup for a group size known only at run time (1..kGroup).
template <Red kOp, typename T, bool kFirst>
void FoldSome(T* acc, const T* const* s, int count, int64_t len) {
  switch (count) {
    case 1:
      return FoldGroup<kOp, T, 1, kFirst>(acc, s, len);
    case 2:
      return FoldGroup<kOp, T, 2, kFirst>(acc, s, len);
    case 3:
      return FoldGroup<kOp, T, 3, kFirst>(acc, s, len);
    case 4:
      return FoldGroup<kOp, T, 4, kFirst>(acc, s, len);
    case 5:
      return FoldGroup<kOp, T, 5, kFirst>(acc, s, len);
    case 6:
      return FoldGroup<kOp, T, 6, kFirst>(acc, s, len);
    case 7:
      return FoldGroup<kOp, T, 7, kFirst>(acc, s, len);
    default:
      return FoldGroup<kOp, T, kGroup, kFirst>(acc, s, len);
  }
}

// Folds the sources in order into `out`, one block at a time: the block
// stays in L1 while the contributions stream through it, kGroup at a time.
// A large result accumulates on the stack and is streamed to `out`.
template <Red kOp, typename T>
void FoldTyped(const std::vector<const T*>& sources, T* out, int64_t n,
               const Eigen::ThreadPoolDevice* device) {
  const bool stream = std::is_trivial_v<T> &&
                      n * static_cast<int64_t>(sizeof(T)) >= kStreamBytes;
  const int count = static_cast<int>(sources.size());
  ParallelFor(device, n, 2.0 * count, [&](int64_t begin, int64_t end) {
    alignas(64) T block[std::is_trivial_v<T> ? kBlock : 1];
    const T* group[kGroup];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t len = std::min(end, b + kBlock) - b;
      T* acc = stream ? block : out + b;
      for (int k = 0; k < count; k += kGroup) {
        const int size = std::min(kGroup, count - k);
        for (int g = 0; g < size; ++g) group[g] = sources[k + g] + b;
        if (k == 0) {
          FoldSome<kOp, T, true>(acc, group, size, len);
        } else {
          FoldSome<kOp, T, false>(acc, group, size, len);
        }
      }
      if (stream) StreamCopy(out + b, acc, len * sizeof(T));
    }
    if (stream) StreamFence();
  });
}

template <typename T>
bool FoldRecognized(Red kind, const std::vector<const T*>& sources, T* out,
                    int64_t n, const Eigen::ThreadPoolDevice* device) {
  auto run = [&](auto op) {
    constexpr Red kOp = decltype(op)::value;
    if constexpr (Supported<kOp, T>()) {
      FoldTyped<kOp, T>(sources, out, n, device);
      return true;
    } else {
      return false;
    }
  };
  switch (kind) {
    case Red::kAdd:
      return run(std::integral_constant<Red, Red::kAdd>{});
    case Red::kMul:
      return run(std::integral_constant<Red, Red::kMul>{});
    case Red::kMax:
      return run(std::integral_constant<Red, Red::kMax>{});
    case Red::kMin:
      return run(std::integral_constant<Red, Red::kMin>{});
    case Red::kAnd:
      return run(std::integral_constant<Red, Red::kAnd>{});
    case Red::kOr:
      return run(std::integral_constant<Red, Red::kOr>{});
    default:
      return false;
  }
}

// One scalar of `array` at flat index i, as its own literal.
Literal ScalarAt(const Literal& array, int64_t i) {
  const int64_t width = ByteWidth(array.shape().element_type());
  Literal scalar =
      Literal::Uninitialized(Shape::Scalar(array.shape().element_type()));
  std::memcpy(scalar.mutable_untyped_data(),
              static_cast<const char*>(array.untyped_data()) + i * width,
              width);
  return scalar;
}

// The general case: the reduction computation, called per element.
absl::Status FoldByCalling(const std::vector<const Literal*>& sources,
                           const ScalarReducer& reducer, Literal* out) {
  const int64_t width = ByteWidth(out->shape().element_type());
  char* dst = static_cast<char*>(out->mutable_untyped_data());
  const int64_t n = out->shape().element_count();
  for (int64_t i = 0; i < n; ++i) {
    Literal acc = ScalarAt(*sources[0], i);
    for (size_t k = 1; k < sources.size(); ++k) {
      absl::StatusOr<Literal> next = reducer(acc, ScalarAt(*sources[k], i));
      if (!next.ok()) return next.status();
      acc = *std::move(next);
    }
    std::memcpy(dst + i * width, acc.untyped_data(), width);
  }
  return absl::OkStatus();
}

absl::StatusOr<Literal> ReduceLeaf(const std::vector<const Literal*>& sources,
                                   const Reduction& reduction,
                                   const Eigen::ThreadPoolDevice* device) {
  const Shape& shape = sources[0]->shape();
  if (sources.size() == 1) return *sources[0];
  Literal out = Literal::Uninitialized(shape);
  const int64_t n = shape.element_count();
  const bool done = DispatchType(
      shape.element_type(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::vector<const T*> typed;
        for (const Literal* source : sources) {
          typed.push_back(static_cast<const T*>(source->untyped_data()));
        }
        return FoldRecognized<T>(reduction.kind, typed,
                                 static_cast<T*>(out.mutable_untyped_data()), n,
                                 device);
      },
      [] { return false; });
  if (done) return out;
  if (!reduction.reducer) {
    return absl::InvalidArgumentError(
        absl::StrCat("the reduction cannot combine ",
                     PrimitiveTypeName(shape.element_type()), " elements"));
  }
  if (absl::Status s = FoldByCalling(sources, reduction.reducer, &out);
      !s.ok()) {
    return s;
  }
  return out;
}

// Splits an array's dimensions around `dimension` into (outer, the
// dimension, inner elements), the view every along-a-dimension copy uses.
struct AlongView {
  int64_t outer = 1;
  int64_t extent = 1;
  int64_t inner = 1;
};

AlongView ViewAlong(const Shape& shape, int64_t dimension) {
  AlongView view;
  for (int64_t d = 0; d < shape.rank(); ++d) {
    if (d < dimension) view.outer *= shape.dimensions(d);
    if (d > dimension) view.inner *= shape.dimensions(d);
  }
  view.extent = shape.dimensions(dimension);
  return view;
}

// Copies `rows` rows of `row_bytes`, row o from src + o*src_pitch to
// dst + o*dst_pitch, in parallel when there is enough to copy.
void CopyRows(const Eigen::ThreadPoolDevice* device, int64_t rows,
              int64_t row_bytes, const char* src, int64_t src_pitch, char* dst,
              int64_t dst_pitch) {
  ParallelFor(device, rows, static_cast<double>(row_bytes),
              [&](int64_t begin, int64_t end) {
                for (int64_t o = begin; o < end; ++o) {
                  std::memcpy(dst + o * dst_pitch, src + o * src_pitch,
                              row_bytes);
                }
              });
}

}  // namespace

absl::StatusOr<Literal> ReduceContributions(
    const std::vector<Literal>& contributions, const std::vector<int>& order,
    const Reduction& reduction, const Eigen::ThreadPoolDevice* device) {
  const Literal& first = contributions[order[0]];
  if (!first.shape().IsTuple()) {
    std::vector<const Literal*> sources;
    for (int index : order) sources.push_back(&contributions[index]);
    return ReduceLeaf(sources, reduction, device);
  }
  std::vector<Literal> elements;
  for (int64_t j = 0; j < first.tuple_size(); ++j) {
    std::vector<const Literal*> sources;
    for (int index : order) sources.push_back(&contributions[index].element(j));
    absl::StatusOr<Literal> reduced = ReduceLeaf(sources, reduction, device);
    if (!reduced.ok()) return reduced.status();
    elements.push_back(*std::move(reduced));
  }
  return Literal::Tuple(std::move(elements));
}

Literal ConcatenateAlong(const std::vector<const Literal*>& parts,
                         int64_t dimension,
                         const Eigen::ThreadPoolDevice* device) {
  const Shape& part_shape = parts[0]->shape();
  std::vector<int64_t> dims = part_shape.dimensions();
  dims[dimension] *= static_cast<int64_t>(parts.size());
  Literal out = Literal::Uninitialized(
      Shape::Array(part_shape.element_type(), std::move(dims)));
  const AlongView view = ViewAlong(part_shape, dimension);
  const int64_t row =
      view.extent * view.inner * ByteWidth(part_shape.element_type());
  char* dst = static_cast<char*>(out.mutable_untyped_data());
  const int64_t pitch = row * static_cast<int64_t>(parts.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    CopyRows(device, view.outer, row,
             static_cast<const char*>(parts[k]->untyped_data()), row,
             dst + k * row, pitch);
  }
  return out;
}

Literal SliceAlong(const Literal& array, int64_t dimension, int64_t index,
                   int64_t count, const Eigen::ThreadPoolDevice* device) {
  const Shape& shape = array.shape();
  std::vector<int64_t> dims = shape.dimensions();
  dims[dimension] /= count;
  Literal out =
      Literal::Uninitialized(Shape::Array(shape.element_type(), dims));
  const AlongView view = ViewAlong(shape, dimension);
  const int64_t row =
      dims[dimension] * view.inner * ByteWidth(shape.element_type());
  CopyRows(device, view.outer, row,
           static_cast<const char*>(array.untyped_data()) + index * row,
           row * count, static_cast<char*>(out.mutable_untyped_data()), row);
  return out;
}

std::vector<Literal> AllToAllArrays(const std::vector<Literal>& contributions,
                                    int64_t dimension,
                                    const Eigen::ThreadPoolDevice* device) {
  const int64_t n = static_cast<int64_t>(contributions.size());
  const Shape& shape = contributions[0].shape();
  const AlongView view = ViewAlong(shape, dimension);
  // Each chunk is extent/n slices of `inner` elements.
  const int64_t chunk =
      view.extent / n * view.inner * ByteWidth(shape.element_type());
  std::vector<Literal> outputs;
  for (int64_t i = 0; i < n; ++i) {
    Literal out = Literal::Uninitialized(shape);
    char* dst = static_cast<char*>(out.mutable_untyped_data());
    for (int64_t j = 0; j < n; ++j) {
      const char* src =
          static_cast<const char*>(contributions[j].untyped_data());
      CopyRows(device, view.outer, chunk, src + i * chunk, chunk * n,
               dst + j * chunk, chunk * n);
    }
    outputs.push_back(std::move(out));
  }
  return outputs;
}

}  // namespace tpu::emulator::interpreter
