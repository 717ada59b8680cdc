#include "emulator/interpreter/conv_epilogue.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "emulator/interpreter/kernel_util.h"
#include "emulator/interpreter/reducer.h"

namespace tpu::emulator::interpreter {
namespace {

bool Is(const HloInstruction& i, xla::PrimitiveType type) {
  return i.shape().IsArray() && i.shape().element_type() == type;
}

// The value of a scalar constant of `type` (f32 or bf16).
std::optional<float> ScalarConstant(const HloInstruction& i,
                                    xla::PrimitiveType type) {
  if (i.opcode() != "constant" || !Is(i, type) || i.shape().rank() != 0) {
    return std::nullopt;
  }
  const xla::LiteralProto& literal = i.proto().literal();
  if (type == xla::F32 && literal.f32s_size() == 1) return literal.f32s(0);
  if (type == xla::BF16 && literal.bf16s().size() == 2) {
    uint16_t bits;
    std::memcpy(&bits, literal.bf16s().data(), 2);  // little-endian
    return static_cast<float>(Eigen::numext::bit_cast<bf16>(bits));
  }
  return std::nullopt;
}

// A scalar constant of `type`, or a broadcast of one.
std::optional<float> UniformConstant(const HloInstruction& i,
                                     xla::PrimitiveType type) {
  if (i.opcode() == "broadcast" && i.operand_count() == 1 && Is(i, type)) {
    return ScalarConstant(*i.operand(0), type);
  }
  return ScalarConstant(i, type);
}

// The operand of broadcast `b` if it broadcasts along exactly `dims`.
const HloInstruction* BroadcastOf(const HloInstruction& b,
                                  const std::vector<int64_t>& dims,
                                  xla::PrimitiveType type) {
  if (b.opcode() != "broadcast" || b.operand_count() != 1 || !Is(b, type) ||
      !Is(*b.operand(0), type)) {
    return nullptr;
  }
  if (b.proto().dimensions_size() != static_cast<int>(dims.size())) {
    return nullptr;
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (b.proto().dimensions(i) != dims[i]) return nullptr;
  }
  return b.operand(0);
}

// The convolution's output is [batch, spatial..., feature] in order.
bool CanonicalOutput(const HloInstruction& conv) {
  const xla::ConvolutionDimensionNumbers& dn =
      conv.proto().convolution_dimension_numbers();
  const int64_t rank = conv.shape().rank();
  if (dn.output_batch_dimension() != 0 ||
      dn.output_feature_dimension() != rank - 1 ||
      dn.output_spatial_dimensions_size() != rank - 2) {
    return false;
  }
  for (int64_t s = 0; s < rank - 2; ++s) {
    if (dn.output_spatial_dimensions(s) != s + 1) return false;
  }
  return true;
}

// Window sizes of a max pool over spatial dims (see ConvEpilogue::pool).
std::optional<std::vector<int64_t>> PoolWindow(const HloInstruction& rw,
                                               xla::PrimitiveType type) {
  if (rw.operand_count() != 2 || rw.called_computations().size() != 1 ||
      MatchReducer(*rw.called_computations()[0]) != Red::kMax) {
    return std::nullopt;
  }
  std::optional<float> init = ScalarConstant(*rw.operand(1), type);
  if (!init || !(std::isinf(*init) && *init < 0)) return std::nullopt;
  const xla::Window& window = rw.proto().window();
  const int64_t rank = rw.shape().rank();
  if (window.dimensions_size() != rank) return std::nullopt;
  std::vector<int64_t> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    const xla::WindowDimension& w = window.dimensions(d);
    const int64_t stride = w.stride() == 0 ? 1 : w.stride();
    if (w.padding_low() != 0 || w.padding_high() != 0 || w.window_reversal() ||
        std::max<int64_t>(1, w.window_dilation()) != 1 ||
        std::max<int64_t>(1, w.base_dilation()) != 1 || w.size() < 1 ||
        stride != w.size()) {
      return std::nullopt;
    }
    const bool spatial = d > 0 && d < rank - 1;
    if (!spatial && w.size() != 1) return std::nullopt;
    const int64_t in = rw.operand(0)->shape().dimensions(d);
    if (rw.shape().dimensions(d) != (in - w.size()) / stride + 1) {
      return std::nullopt;
    }
    if (spatial) sizes.push_back(w.size());
  }
  return sizes;
}

}  // namespace

std::optional<ConvEpilogue> MatchConvEpilogue(
    const HloInstruction& root,
    const absl::flat_hash_map<const HloInstruction*, int>* users,
    const HloInstruction* computation_root) {
  ConvEpilogue e;
  // Inner values must have one user (the next stage) and not be the root.
  auto inner = [&](const HloInstruction* i) {
    if (users == nullptr) return true;
    auto it = users->find(i);
    return it != users->end() && it->second == 1 && i != computation_root;
  };
  const HloInstruction* x = &root;
  e.type = root.shape().IsArray() ? root.shape().element_type() : xla::PRED;
  if (e.type != xla::F32 && e.type != xla::BF16) return std::nullopt;
  if (x->opcode() == "reduce-window") {
    std::optional<std::vector<int64_t>> pool = PoolWindow(*x, e.type);
    if (!pool || !inner(x->operand(0))) return std::nullopt;
    e.pool = *pool;
    x = x->operand(0);
  }
  const int64_t rank = x->shape().rank();
  if (x->opcode() == "maximum" && x->operand_count() == 2 && Is(*x, e.type)) {
    for (int first = 0; first < 2; ++first) {
      const HloInstruction* b = x->operand(first);
      std::optional<float> floor = b->opcode() == "broadcast"
                                       ? UniformConstant(*b, e.type)
                                       : std::nullopt;
      const HloInstruction* value = x->operand(1 - first);
      if (floor && inner(b) && inner(value) && b != value) {
        e.has_floor = true;
        e.floor_first = first == 0;
        e.floor = *floor;
        e.absorbed.push_back(b);
        e.absorbed.push_back(x);
        x = value;
        break;
      }
    }
  } else if (x->opcode() == "clamp" && x->operand_count() == 3 &&
             Is(*x, e.type)) {
    const HloInstruction* lo = x->operand(0);
    const HloInstruction* hi = x->operand(2);
    std::optional<float> floor = UniformConstant(*lo, e.type);
    std::optional<float> ceiling = UniformConstant(*hi, e.type);
    const HloInstruction* value = x->operand(1);
    if (floor && ceiling && inner(value) && value != lo && value != hi &&
        (lo->opcode() != "broadcast" || inner(lo)) &&
        (hi->opcode() != "broadcast" || inner(hi)) && lo != hi) {
      e.has_floor = e.has_ceiling = true;
      e.floor = *floor;
      e.ceiling = *ceiling;
      for (const HloInstruction* b : {lo, hi}) {
        if (b->opcode() == "broadcast") e.absorbed.push_back(b);
      }
      e.absorbed.push_back(x);
      x = value;
    }
  }
  if (x->opcode() == "add" && x->operand_count() == 2 && Is(*x, e.type)) {
    for (int k = 0; k < 2; ++k) {
      const HloInstruction* b = x->operand(k);
      const HloInstruction* bias = BroadcastOf(*b, {rank - 1}, e.type);
      const HloInstruction* value = x->operand(1 - k);
      if (bias != nullptr && value->opcode() == "convolution" && inner(b) &&
          inner(value)) {
        e.bias = bias;
        e.absorbed.push_back(b);
        e.absorbed.push_back(x);
        x = value;
        break;
      }
    }
  }
  if (x->opcode() != "convolution" || x->operand_count() != 2 ||
      !Is(*x, e.type) || !CanonicalOutput(*x) || x == &root) {
    return std::nullopt;
  }
  e.convolution = x;
  e.absorbed.push_back(x);
  // The root itself is the fused kernel's instruction, not absorbed.
  e.absorbed.erase(std::remove(e.absorbed.begin(), e.absorbed.end(), &root),
                   e.absorbed.end());
  e.leaves = {x->operand(0), x->operand(1)};
  if (e.bias != nullptr) e.leaves.push_back(e.bias);
  return e;
}

namespace {

// XLA's maximum and minimum (NaN propagates; the first operand wins ties).
inline float Max(float a, float b) { return (a > b || a != a) ? a : b; }
inline float Min(float a, float b) { return (a < b || a != a) ? a : b; }

inline uint32_t Bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

// Rounds as an instruction of element type T stores its result: for bf16,
// Eigen's conversion (to nearest even; NaN becomes the quiet NaN of its
// sign) written without branches so that it vectorizes.
template <typename T>
inline float Round(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    uint32_t u = Bits(v);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    const uint32_t nan = (u & 0x80000000u) | 0x7fc00000u;
    u = (u & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
    std::memcpy(&v, &u, 4);
    return v;
  }
}

// Stores a value that is already exact in T.
template <typename T>
inline T Store(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return Eigen::numext::bit_cast<T>(static_cast<uint16_t>(Bits(v) >> 16));
  }
}

// The floor and ceiling stages of `e` on n values in place.
inline void Activate(const ConvEpilogue& e, int64_t n, float* v) {
  if (e.has_floor) {
    const float floor = e.floor;
    if (e.floor_first) {
      for (int64_t i = 0; i < n; ++i) v[i] = Max(floor, v[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) v[i] = Max(v[i], floor);
    }
  }
  if (e.has_ceiling) {
    const float ceiling = e.ceiling;
    for (int64_t i = 0; i < n; ++i) v[i] = Min(v[i], ceiling);
  }
}

// dst = the stages of `e` on one row of features of the unrounded
// convolution output, each rounded to T; loops without branches inside so
// that they vectorize.
template <typename T>
void Stage(const ConvEpilogue& e, const float* src, const float* bias,
           int64_t features, float* dst) {
  for (int64_t f = 0; f < features; ++f) dst[f] = Round<T>(src[f]);
  if (bias != nullptr) {
    for (int64_t f = 0; f < features; ++f) {
      dst[f] = Round<T>(dst[f] + bias[f]);
    }
  }
  Activate(e, features, dst);
}

template <typename T>
void Apply(const Eigen::ThreadPoolDevice* device, const ConvEpilogue& e,
           const std::vector<int64_t>& dims, const float* in,
           const T* bias_values, T* out) {
  const int64_t features = dims.back();
  // The bias in f32 once (exact), so that the stage loops vectorize.
  std::vector<float> bias_f32;
  if (bias_values != nullptr) {
    bias_f32.assign(bias_values, bias_values + features);
  }
  const float* bias = bias_values != nullptr ? bias_f32.data() : nullptr;
  if (e.pool.empty()) {
    int64_t positions = 1;
    for (size_t d = 0; d + 1 < dims.size(); ++d) positions *= dims[d];
    ParallelFor(
        device, positions, 3.0 * features, [&](int64_t begin, int64_t end) {
          std::vector<float> value(features);
          for (int64_t p = begin; p < end; ++p) {
            Stage<T>(e, in + p * features, bias, features, value.data());
            T* dst = out + p * features;
            for (int64_t f = 0; f < features; ++f) {
              dst[f] = Store<T>(value[f]);
            }
          }
        });
    return;
  }
  const int64_t spatial = dims.size() - 2;
  std::vector<int64_t> out_dims = {dims[0]};
  int64_t out_positions = dims[0], taps = 1;
  for (int64_t s = 0; s < spatial; ++s) {
    out_dims.push_back((dims[s + 1] - e.pool[s]) / e.pool[s] + 1);
    out_positions *= out_dims.back();
    taps *= e.pool[s];
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(dims);
  ParallelFor(device, out_positions, 3.0 * taps * features,
              [&](int64_t begin, int64_t end) {
                std::vector<int64_t> pos(spatial + 1), tap(spatial, 0);
                std::vector<float> value(features), acc(features);
                for (int64_t o = begin; o < end; ++o) {
                  int64_t rem = o;
                  for (int64_t s = spatial; s >= 0; --s) {
                    pos[s] = rem % out_dims[s];
                    rem /= out_dims[s];
                  }
                  int64_t base = pos[0] * in_strides[0];
                  for (int64_t s = 0; s < spatial; ++s) {
                    base += pos[s + 1] * e.pool[s] * in_strides[s + 1];
                  }
                  // reduce-window's order: init, then the taps in row-major
                  // order.
                  std::fill(acc.begin(), acc.end(),
                            -std::numeric_limits<float>::infinity());
                  std::fill(tap.begin(), tap.end(), 0);
                  for (int64_t t = 0; t < taps; ++t) {
                    int64_t offset = base;
                    for (int64_t s = 0; s < spatial; ++s) {
                      offset += tap[s] * in_strides[s + 1];
                    }
                    Stage<T>(e, in + offset, bias, features, value.data());
                    for (int64_t f = 0; f < features; ++f) {
                      acc[f] = Max(acc[f], value[f]);
                    }
                    for (int64_t s = spatial - 1; s >= 0; --s) {
                      if (++tap[s] < e.pool[s]) break;
                      tap[s] = 0;
                    }
                  }
                  T* dst = out + o * features;
                  for (int64_t f = 0; f < features; ++f) {
                    dst[f] = Store<T>(acc[f]);
                  }
                }
              });
}

template <typename T>
void ApplyRows(const ConvEpilogue& e, int64_t features, int64_t rows,
               const float* in, const float* bias, T* out) {
  // Several short rows at a time: the elementwise stages run as one loop
  // over the block (the same operations per element as Stage), only the
  // bias add per row.
  constexpr int64_t kBlock = 2048;
  if (features <= kBlock / 4) {
    float block[kBlock];
    const int64_t per = kBlock / features;
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
      const int64_t count = std::min(per, rows - r0);
      const int64_t n = count * features;
      const float* src = in + r0 * features;
      for (int64_t i = 0; i < n; ++i) block[i] = Round<T>(src[i]);
      if (bias != nullptr) {
        for (int64_t r = 0; r < count; ++r) {
          float* v = block + r * features;
          for (int64_t f = 0; f < features; ++f) {
            v[f] = Round<T>(v[f] + bias[f]);
          }
        }
      }
      Activate(e, n, block);
      T* dst = out + r0 * features;
      for (int64_t i = 0; i < n; ++i) dst[i] = Store<T>(block[i]);
    }
    return;
  }
  float value[256];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t f0 = 0; f0 < features; f0 += 256) {
      const int64_t n = std::min<int64_t>(256, features - f0);
      Stage<T>(e, in + r * features + f0, bias == nullptr ? nullptr : bias + f0,
               n, value);
      T* dst = out + r * features + f0;
      for (int64_t f = 0; f < n; ++f) dst[f] = Store<T>(value[f]);
    }
  }
}

template <typename T>
void ApplyPooledRows(const ConvEpilogue& e, int64_t features, int64_t width,
                     int64_t image_rows, const float* in, const float* bias,
                     T* out) {
  const int64_t ph = e.pool[0], pw = e.pool[1];
  const int64_t out_w = width / pw;
  float value[256], acc[256];
  for (int64_t py = 0; py < image_rows / ph; ++py) {
    for (int64_t px = 0; px < out_w; ++px) {
      for (int64_t f0 = 0; f0 < features; f0 += 256) {
        const int64_t n = std::min<int64_t>(256, features - f0);
        // reduce-window's order: init, then the taps in row-major order.
        std::fill(acc, acc + n, -std::numeric_limits<float>::infinity());
        for (int64_t dy = 0; dy < ph; ++dy) {
          for (int64_t dx = 0; dx < pw; ++dx) {
            const float* src =
                in + ((py * ph + dy) * width + px * pw + dx) * features + f0;
            Stage<T>(e, src, bias == nullptr ? nullptr : bias + f0, n, value);
            for (int64_t f = 0; f < n; ++f) acc[f] = Max(acc[f], value[f]);
          }
        }
        T* dst = out + (py * out_w + px) * features + f0;
        for (int64_t f = 0; f < n; ++f) dst[f] = Store<T>(acc[f]);
      }
    }
  }
}

}  // namespace

void ApplyConvEpiloguePooledRows(const ConvEpilogue& e, int64_t features,
                                 int64_t width, int64_t image_rows,
                                 const float* in, const float* bias,
                                 void* out) {
  if (e.type == xla::BF16) {
    ApplyPooledRows<bf16>(e, features, width, image_rows, in, bias,
                          static_cast<bf16*>(out));
  } else {
    ApplyPooledRows<float>(e, features, width, image_rows, in, bias,
                           static_cast<float*>(out));
  }
}

void ApplyConvEpilogueRows(const ConvEpilogue& e, int64_t features,
                           int64_t rows, const float* in, const float* bias,
                           void* out) {
  if (e.type == xla::BF16) {
    ApplyRows<bf16>(e, features, rows, in, bias, static_cast<bf16*>(out));
  } else {
    ApplyRows<float>(e, features, rows, in, bias, static_cast<float*>(out));
  }
}

void ApplyConvEpilogue(const Eigen::ThreadPoolDevice* device,
                       const ConvEpilogue& e, const std::vector<int64_t>& dims,
                       const float* in, const void* bias, void* out) {
  if (e.type == xla::BF16) {
    Apply<bf16>(device, e, dims, in, static_cast<const bf16*>(bias),
                static_cast<bf16*>(out));
  } else {
    Apply<float>(device, e, dims, in, static_cast<const float*>(bias),
                 static_cast<float*>(out));
  }
}

}  // namespace tpu::emulator::interpreter
