// Kernel family: convolution, with XLA's full semantics: any dimension
// numbers and number of spatial dimensions, strides, padding (negative crops),
// lhs (base) and rhs (window) dilation, window reversal, feature_group_count
// and batch_group_count, operand types that differ from the result type
// (preferred_element_type), and the TPU-numerics option.
//
// Method: operands are brought into a canonical layout in the GEMM compute
// type (input [N, S..., C], kernel [K..., I, O]), then every group is an
// im2col + GEMM: rows of output positions, columns of (kernel tap, input
// feature). Rows are processed in tiles, each tile's patch matrix built into a
// cache-sized scratch buffer and multiplied by the group's kernel matrix on
// one thread; tiles run in parallel on the device. A 1x1 unit-stride,
// unpadded convolution skips im2col and is one threaded GEMM.

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include "emulator/interpreter/conv_epilogue.h"
#include "emulator/interpreter/gemm.h"
#include "emulator/interpreter/gemm_routine.h"
#include "emulator/interpreter/operand_prep.h"
#include "emulator/interpreter/window_util.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

struct ConvPlan {
  Shape result;
  int64_t spatial_rank = 0;
  // Operand dims -> canonical order.
  std::vector<int64_t> input_perm, kernel_perm;
  // Canonical output [N_out, P..., O] -> result order (result dim i is
  // canonical dim output_perm[i]); empty if the identity.
  std::vector<int64_t> output_perm;
  std::vector<int64_t> canonical_output_dims;
  int64_t in_batch = 0, in_features = 0;
  std::vector<int64_t> in_spatial, kernel_spatial, out_spatial;
  int64_t in_spatial_count = 1, kernel_count = 1, out_spatial_count = 1;
  int64_t out_batch = 0, out_features = 0;
  // Groups: G = feature_group_count or batch_group_count (at most one > 1).
  int64_t groups = 1;
  bool batch_grouped = false;
  int64_t group_in_features = 0, group_out_features = 0;
  // Per spatial dim: [p * K_d + k] -> input index or -1.
  std::vector<std::vector<int64_t>> tables;
  std::vector<bool> reversed;
  bool any_reversed = false;
  // 1x1, unit stride, no padding or dilation, one group: no im2col.
  bool direct = false;
  // One input feature per group (depthwise): computed directly, vectorized
  // over features, instead of im2col and a GEMM per group.
  bool depthwise = false;
  // Two spatial dims and one output feature per input feature (MobileNet's
  // depthwise convolutions): RunDepthwise2d instead of RunDepthwisePass.
  bool depthwise_2d = false;
  // A fused epilogue without pooling runs on each block of output rows as
  // soon as it is computed (see RowEpilogue): set for the fused kernel where
  // one pass computes every row in blocks (the direct product, im2col tiles,
  // RunDepthwise2d).
  bool epilogue_on_rows = false;
  // bf16 input (and, for the direct product, kernel) read as they are: set
  // for bf16 operands without TPU passes on the direct path when its route
  // takes bf16, and on the depthwise path.
  bool bf16_input = false;
  // 0: exact; 1: bf16 operands (DEFAULT); 3: bf16x3 (HIGH).
  int tpu_passes = 0;
  // Rows (output positions) per im2col tile, and the library routes of the
  // f32 GEMMs: the direct product, a full tile and the last, shorter tile.
  int64_t tile = 1;
  GemmRoutine direct_routine, tile_routine, tail_routine;
  // Few output rows (the late, small layers of a detector): every patch
  // row at once and one product threaded over the output features
  // (whole_routine, f32) instead of a tile per thread.
  bool whole = false;
  GemmRoutine whole_routine;
  // whole_routine takes bf16 patches and kernel as they are (bf16 operands
  // without TPU passes): the kernel, often the largest operand of these
  // layers, is then read once at half the size instead of converted.
  bool whole_bf16 = false;
  xla::PrimitiveType lhs_type = xla::F32, rhs_type = xla::F32;
};

// Tiles of ~512 KiB of patches and at least 8 of them (for balance on the
// pool) where rows allow; the f32 GEMMs' routes follow from the tile sizes.
void PlanGemms(ConvPlan& plan) {
  const int64_t rows = plan.out_batch * plan.out_spatial_count;
  const int64_t kc = plan.kernel_count * plan.group_in_features;
  const int64_t og = plan.group_out_features;
  int64_t tile =
      std::max<int64_t>(16, (512 * 1024) / std::max<int64_t>(1, kc * 4));
  tile = std::min(tile, std::max<int64_t>(8, (rows * plan.groups + 7) / 8));
  plan.tile = std::max<int64_t>(1, std::min(tile, rows));
  const xla::PrimitiveType rt = plan.result.element_type();
  if (rt != xla::F32 && rt != xla::BF16 && rt != xla::F16) return;
  const bool bf16 = plan.tpu_passes == 0 && plan.lhs_type == xla::BF16 &&
                    plan.rhs_type == xla::BF16;
  plan.direct_routine = GemmRoutine::Choose({1, rows, og, kc}, bf16);
  plan.bf16_input =
      bf16 &&
      ((plan.direct && plan.direct_routine.bf16_operands()) || plan.depthwise);
  plan.tile_routine = GemmRoutine::Choose({1, plan.tile, og, kc}, false);
  plan.tail_routine = GemmRoutine::Choose({1, rows % plan.tile, og, kc}, false);
  plan.whole = plan.groups == 1 && !plan.direct && !plan.depthwise &&
               rows <= 64 && kc * og >= 64 * 64 && rows * kc <= (1 << 20) &&
               rows * og <= (1 << 20);
  if (plan.whole) {
    plan.whole_routine = GemmRoutine::Choose({1, rows, og, kc}, bf16);
    plan.whole_bf16 = plan.whole_routine.bf16_operands();
  }
}

// A product of the plan: out (m x og) (+)= a (m x kc) * w (kc x og).
template <typename C>
void ConvGemm(const Eigen::ThreadPoolDevice* device, const ConvPlan& plan,
              const GemmRoutine& routine, int64_t m, const C* a, const C* w,
              C* out, bool accumulate) {
  if constexpr (std::is_same_v<C, float>) {
    routine.Run(device, a, w, out, accumulate);
  } else {
    BatchedGemm<C>(device, 1, m, plan.group_out_features,
                   plan.kernel_count * plan.group_in_features, a, false, w,
                   false, out, accumulate);
  }
}

template <typename C>
const C* PrepareAnyType(const Eigen::ThreadPoolDevice* device,
                        const Literal& in, const std::vector<int64_t>& perm,
                        OperandRounding rounding,
                        std::shared_ptr<AlignedBuffer>& storage) {
  return DispatchType(
      in.shape().element_type(),
      [&](auto tag) -> const C* {
        using S = typename decltype(tag)::type;
        if constexpr (kIsComplex<S> && !kIsComplex<C>) {
          return nullptr;  // rejected at compile time
        } else {
          return PrepareOperand<C, S>(device, in, perm, rounding, storage);
        }
      },
      []() -> const C* { return nullptr; });
}

// The kernel as per-group GEMM matrices [G][K*Cg, Og], window reversal
// applied (tap k of a reversed dim uses kernel element K-1-k).
template <typename C>
const C* GroupKernels(const Eigen::ThreadPoolDevice* device,
                      const ConvPlan& plan, const C* canonical,
                      std::shared_ptr<AlignedBuffer>& storage) {
  const int64_t d = plan.spatial_rank;
  const int64_t i_dim = plan.group_in_features;
  const int64_t o_dim = plan.out_features;
  const C* src = canonical;
  std::shared_ptr<AlignedBuffer> flipped;
  if (plan.any_reversed) {
    std::vector<int64_t> dims = plan.kernel_spatial;
    dims.push_back(i_dim);
    dims.push_back(o_dim);
    std::vector<int64_t> strides = RowMajorStrides(dims);
    const C* base = canonical;
    for (int64_t s = 0; s < d; ++s) {
      if (plan.reversed[s] && dims[s] > 0) {
        base += (dims[s] - 1) * strides[s];
        strides[s] = -strides[s];
      }
    }
    flipped =
        AlignedBuffer::Allocate(plan.kernel_count * i_dim * o_dim * sizeof(C));
    StridedCopy(device, sizeof(C), dims, base, strides, flipped->data());
    src = static_cast<const C*>(flipped->data());
  }
  if (plan.groups == 1 || plan.depthwise) {
    storage = std::move(flipped);
    return src;
  }
  const int64_t g = plan.groups, og = plan.group_out_features;
  const int64_t rows = plan.kernel_count * i_dim;
  storage = AlignedBuffer::Allocate(g * rows * og * sizeof(C));
  StridedCopy(device, sizeof(C), {g, rows, og}, src, {og, o_dim, 1},
              storage->data());
  return static_cast<const C*>(storage->data());
}

// The batch index of output row r; its spatial position goes to `pos`.
int64_t OutputPosition(const ConvPlan& plan, int64_t r,
                       std::vector<int64_t>& pos) {
  int64_t rem = r % plan.out_spatial_count;
  for (int64_t s = plan.spatial_rank - 1; s >= 0; --s) {
    pos[s] = rem % plan.out_spatial[s];
    rem /= plan.out_spatial[s];
  }
  return r / plan.out_spatial_count;
}

// Scratch memory of the calling thread that outlives the call: patch tiles
// are half a MiB, and a fresh allocation per tile cost page faults and
// zeroing on every execution. REQUIRES: no other use of `slot` on this
// thread while the result is in use.
template <typename C>
C* ThreadScratch(int slot, int64_t count) {
  struct Block {
    std::unique_ptr<char[]> data;
    int64_t size = 0;
  };
  thread_local Block blocks[2];
  Block& b = blocks[slot];
  const int64_t bytes = std::max<int64_t>(1, count) * sizeof(C);
  if (b.size < bytes) {
    b.data.reset(new char[bytes]);
    b.size = bytes;
  }
  return reinterpret_cast<C*>(b.data.get());
}

// Fills patch rows [r0, r1) of group `group`: row r, column k * Cg + c holds
// the input element under tap k for feature c of the group (0 off the input).
template <typename C>
void BuildPatches(const ConvPlan& plan, const C* x, int64_t group, int64_t r0,
                  int64_t r1, C* patch) {
  const int64_t d = plan.spatial_rank;
  const int64_t cg = plan.group_in_features;
  const int64_t kc = plan.kernel_count * cg;
  const int64_t batch_offset = plan.batch_grouped ? group * plan.out_batch : 0;
  const int64_t chan_offset = plan.batch_grouped ? 0 : group * cg;
  std::vector<int64_t> in_strides(d + 1, 1);  // in elements of [S...]
  for (int64_t s = d - 1; s >= 0; --s) {
    in_strides[s] = in_strides[s + 1] * plan.in_spatial[s];
  }
  std::vector<int64_t> pos(d), tap(d);
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = OutputPosition(plan, r, pos);
    const C* image =
        x + ((batch_offset + n) * plan.in_spatial_count) * plan.in_features +
        chan_offset;
    C* row = patch + (r - r0) * kc;
    // The taps along the last spatial dim usually read adjacent input
    // positions; with all features of the input in the group, their
    // features are one contiguous run, copied at once.
    const int64_t kl = d > 0 ? plan.kernel_spatial[d - 1] : 1;
    const int64_t* last =
        d > 0 ? plan.tables[d - 1].data() + pos[d - 1] * kl : nullptr;
    bool run = d > 0 && cg == plan.in_features && kl > 0 && last[0] >= 0;
    for (int64_t t = 1; run && t < kl; ++t) run = last[t] == last[0] + t;
    std::fill(tap.begin(), tap.end(), 0);
    for (int64_t k = 0; k < plan.kernel_count; k += run ? kl : 1) {
      int64_t offset = 0;
      bool valid = true;
      for (int64_t s = 0; s < d; ++s) {
        const int64_t index =
            plan.tables[s][pos[s] * plan.kernel_spatial[s] + tap[s]];
        if (index < 0) {
          valid = false;
          break;
        }
        offset += index * in_strides[s + 1];
      }
      C* dst = row + k * cg;
      const int64_t count = run ? kl * cg : cg;
      if (valid) {
        std::memcpy(dst, image + offset * plan.in_features, count * sizeof(C));
      } else {
        std::fill(dst, dst + count, C(0));
      }
      for (int64_t s = run ? d - 2 : d - 1; s >= 0; --s) {
        if (++tap[s] < plan.kernel_spatial[s]) break;
        tap[s] = 0;
      }
    }
  }
}

// Copies `count` elements; the runs of patch rows are often a few
// elements (3 input features), where a call to memcpy costs more than the
// copy.
template <typename C>
inline void CopyRun(const C* src, int64_t count, C* dst) {
  if (count >= 32) {
    std::memcpy(dst, src, count * sizeof(C));
  } else {
    for (int64_t i = 0; i < count; ++i) dst[i] = src[i];
  }
}

// BuildPatches for two spatial dims and one group: the output position
// advances incrementally instead of being divided out per row, and each
// kernel row's taps are one run where the input columns are adjacent.
template <typename C>
void BuildPatches2d(const ConvPlan& plan, const C* x, int64_t r0, int64_t r1,
                    C* patch) {
  const int64_t cg = plan.in_features;
  const int64_t kh = plan.kernel_spatial[0], kw = plan.kernel_spatial[1];
  const int64_t oh = plan.out_spatial[0], ow = plan.out_spatial[1];
  const int64_t in_w = plan.in_spatial[1];
  const int64_t kc = kh * kw * cg;
  const std::vector<int64_t>& ty = plan.tables[0];
  const std::vector<int64_t>& tx = plan.tables[1];
  int64_t n = r0 / (oh * ow);
  int64_t oy = (r0 / ow) % oh, ox = r0 % ow;
  for (int64_t r = r0; r < r1; ++r) {
    const C* image = x + n * plan.in_spatial_count * cg;
    C* row = patch + (r - r0) * kc;
    const int64_t* cols = tx.data() + ox * kw;
    bool run = cols[0] >= 0;
    for (int64_t t = 1; run && t < kw; ++t) run = cols[t] == cols[0] + t;
    for (int64_t ky = 0; ky < kh; ++ky) {
      C* dst = row + ky * kw * cg;
      const int64_t iy = ty[oy * kh + ky];
      if (iy < 0) {
        std::fill(dst, dst + kw * cg, C(0));
        continue;
      }
      const C* src = image + iy * in_w * cg;
      if (run) {
        CopyRun(src + cols[0] * cg, kw * cg, dst);
        continue;
      }
      for (int64_t kx = 0; kx < kw; ++kx) {
        if (cols[kx] < 0) {
          std::fill(dst + kx * cg, dst + (kx + 1) * cg, C(0));
        } else {
          CopyRun(src + cols[kx] * cg, cg, dst + kx * cg);
        }
      }
    }
    if (++ox == ow) {
      ox = 0;
      if (++oy == oh) {
        oy = 0;
        ++n;
      }
    }
  }
}

// acc[o] += x[o / og] * w[o] for one tap of a depthwise convolution.
template <typename C, typename X>
void AccumulateTap(const X* x, const C* w, int64_t o_dim, int64_t og, C* acc) {
  if constexpr (std::is_same_v<X, bf16>) {
    if (og == 1) {
      // bf16 widened by a shift (exact), so that the loop vectorizes.
      const auto* raw = reinterpret_cast<const uint16_t*>(x);
      for (int64_t o = 0; o < o_dim; ++o) {
        const uint32_t bits = static_cast<uint32_t>(raw[o]) << 16;
        float v;
        std::memcpy(&v, &bits, 4);
        acc[o] += v * w[o];
      }
      return;
    }
  }
  if (og == 1) {
    for (int64_t o = 0; o < o_dim; ++o) acc[o] += static_cast<C>(x[o]) * w[o];
  } else {
    for (int64_t o = 0; o < o_dim; ++o) {
      acc[o] += static_cast<C>(x[o / og]) * w[o];
    }
  }
}

// The depthwise pass: out[n, p, o] (+)= sum over taps of x[n, in(p, tap),
// o / og] * w[tap, o], with w canonical [K..., 1, O]; one output position at
// a time, features innermost.
template <typename C, typename X>
void RunDepthwisePass(const Eigen::ThreadPoolDevice* device,
                      const ConvPlan& plan, const X* x, const C* w, C* out,
                      bool accumulate) {
  const int64_t d = plan.spatial_rank;
  const int64_t o_dim = plan.out_features, og = plan.group_out_features;
  const int64_t c_dim = plan.in_features;
  std::vector<int64_t> in_strides(d + 1, 1);
  for (int64_t s = d - 1; s >= 0; --s) {
    in_strides[s] = in_strides[s + 1] * plan.in_spatial[s];
  }
  const int64_t rows = plan.out_batch * plan.out_spatial_count;
  ParallelFor(
      device, rows, 2.0 * plan.kernel_count * o_dim + 20,
      [&](int64_t begin, int64_t end) {
        std::vector<int64_t> pos(d), tap(d);
        std::vector<C> acc(o_dim);
        for (int64_t r = begin; r < end; ++r) {
          const int64_t n = OutputPosition(plan, r, pos);
          const X* image = x + n * plan.in_spatial_count * c_dim;
          std::fill(acc.begin(), acc.end(), C(0));
          std::fill(tap.begin(), tap.end(), 0);
          for (int64_t k = 0; k < plan.kernel_count; ++k) {
            int64_t offset = 0;
            bool valid = true;
            for (int64_t s = 0; s < d && valid; ++s) {
              const int64_t index =
                  plan.tables[s][pos[s] * plan.kernel_spatial[s] + tap[s]];
              valid = index >= 0;
              offset += index * in_strides[s + 1];
            }
            if (valid) {
              AccumulateTap(image + offset * c_dim, w + k * o_dim, o_dim, og,
                            acc.data());
            }
            for (int64_t s = d - 1; s >= 0; --s) {
              if (++tap[s] < plan.kernel_spatial[s]) break;
              tap[s] = 0;
            }
          }
          C* dst = out + r * o_dim;
          for (int64_t o = 0; o < o_dim; ++o) {
            dst[o] = accumulate ? dst[o] + acc[o] : acc[o];
          }
        }
      });
}

// Where finished rows of a fused convolution go when its epilogue runs on
// them in cache (plan.epilogue_on_rows): the root's result.
struct RowEpilogue {
  const ConvEpilogue* epilogue = nullptr;
  const float* bias = nullptr;  // f32, or null without bias
  void* out = nullptr;          // of epilogue->type
  int64_t features = 0;

  // With a pool (2-D, plan.epilogue_on_rows): the output width, and the
  // output height is a multiple of the pool's, so that blocks of rows that
  // start and end on pool windows (plan.tile) hold whole windows.
  int64_t width = 0;

  // Rows [r0, r0 + m) of the canonical output, computed (unrounded f32) in
  // `rows`.
  void Finish(int64_t r0, int64_t m, const float* rows) const {
    const int64_t size = epilogue->type == xla::BF16 ? 2 : 4;
    if (epilogue->pool.empty()) {
      ApplyConvEpilogueRows(*epilogue, features, m, rows, bias,
                            static_cast<char*>(out) + r0 * features * size);
      return;
    }
    const int64_t pooled_row = r0 / width / epilogue->pool[0];
    const int64_t pooled_width = width / epilogue->pool[1];
    ApplyConvEpiloguePooledRows(
        *epilogue, features, width, m / width, rows, bias,
        static_cast<char*>(out) + pooled_row * pooled_width * features * size);
  }
};

inline float Widen(float v) { return v; }
// Exact, by a shift, so that loops over it vectorize.
inline float Widen(bf16 v) {
  const uint32_t bits =
      static_cast<uint32_t>(Eigen::numext::bit_cast<uint16_t>(v)) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// dst[j] (+)= sum over taps t, in order, of x[xoff[t] + j] * w[woff[t] + j]
// for j < width (<= 16): one output position's block of features.
template <typename X>
inline void DepthwiseBlock(const X* x, const float* w, const int64_t* xoff,
                           const int64_t* woff, int64_t taps, int64_t width,
                           float* dst, bool accumulate) {
  float acc[16] = {};
  for (int64_t t = 0; t < taps; ++t) {
    const X* xp = x + xoff[t];
    const float* wp = w + woff[t];
    for (int64_t j = 0; j < width; ++j) {
      acc[j] = std::fma(Widen(xp[j]), wp[j], acc[j]);
    }
  }
  for (int64_t j = 0; j < width; ++j) {
    dst[j] = accumulate ? dst[j] + acc[j] : acc[j];
  }
}

#if defined(__AVX512F__)
// DepthwiseBlock for kBlocks full blocks of 16 features at once, their sums
// in registers (GCC's loop vectorizer does not keep them there: the loop
// over taps is the outer one): kBlocks independent FMA chains hide the FMA
// latency. Each tap is one FMA per element, as in DepthwiseBlock.
template <int kBlocks, typename X>
inline void DepthwiseBlocks(const X* x, const float* w, const int64_t* xoff,
                            const int64_t* woff, int64_t taps, float* dst,
                            bool accumulate) {
  __m512 acc[kBlocks];
  for (int b = 0; b < kBlocks; ++b) acc[b] = _mm512_setzero_ps();
  for (int64_t t = 0; t < taps; ++t) {
    const X* xp = x + xoff[t];
    const float* wp = w + woff[t];
    for (int b = 0; b < kBlocks; ++b) {
      __m512 xv;
      if constexpr (std::is_same_v<X, bf16>) {
        const __m256i raw =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xp + 16 * b));
        xv = _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
      } else {
        xv = _mm512_loadu_ps(xp + 16 * b);
      }
      acc[b] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(wp + 16 * b), acc[b]);
    }
  }
  for (int b = 0; b < kBlocks; ++b) {
    if (accumulate) {
      acc[b] = _mm512_add_ps(_mm512_loadu_ps(dst + 16 * b), acc[b]);
    }
    _mm512_storeu_ps(dst + 16 * b, acc[b]);
  }
}
#endif

// One output position of a depthwise convolution: all features.
template <typename X>
inline void DepthwisePosition(const X* x, const float* w, const int64_t* xoff,
                              const int64_t* woff, int64_t taps, int64_t c_dim,
                              float* dst, bool accumulate) {
  int64_t c0 = 0;
#if defined(__AVX512F__)
  for (; c0 + 64 <= c_dim; c0 += 64) {
    DepthwiseBlocks<4>(x + c0, w + c0, xoff, woff, taps, dst + c0, accumulate);
  }
  if (c0 + 32 <= c_dim) {
    DepthwiseBlocks<2>(x + c0, w + c0, xoff, woff, taps, dst + c0, accumulate);
    c0 += 32;
  }
  if (c0 + 16 <= c_dim) {
    DepthwiseBlocks<1>(x + c0, w + c0, xoff, woff, taps, dst + c0, accumulate);
    c0 += 16;
  }
#endif
  for (; c0 < c_dim; c0 += 16) {
    DepthwiseBlock(x + c0, w + c0, xoff, woff, taps,
                   std::min<int64_t>(16, c_dim - c0), dst + c0, accumulate);
  }
}

// RunDepthwisePass for plan.depthwise_2d: each task is one output image row;
// each output position lists its valid taps once and sums them, in the same
// row-major order as RunDepthwisePass (so the same values), 16 features at a
// time in registers instead of a pass over all features per tap. Finished
// rows go to `sink` if given (then `out` is unused).
template <typename X>
void RunDepthwise2d(const Eigen::ThreadPoolDevice* device, const ConvPlan& plan,
                    const X* x, const float* w, float* out, bool accumulate,
                    const RowEpilogue* sink) {
  const int64_t c_dim = plan.out_features;
  const int64_t in_w = plan.in_spatial[1];
  const int64_t kh = plan.kernel_spatial[0], kw = plan.kernel_spatial[1];
  const int64_t oh = plan.out_spatial[0], ow = plan.out_spatial[1];
  const std::vector<int64_t>& ty = plan.tables[0];
  const std::vector<int64_t>& tx = plan.tables[1];
  const int64_t rows = plan.out_batch * oh;
  ParallelFor(device, rows, 2.0 * kh * kw * ow * c_dim + 20.0 * ow,
              [&](int64_t begin, int64_t end) {
                float* scratch = sink != nullptr
                                     ? ThreadScratch<float>(0, ow * c_dim)
                                     : nullptr;
                std::vector<int64_t> xoff(kh * kw), woff(kh * kw);
                for (int64_t r = begin; r < end; ++r) {
                  const int64_t n = r / oh, oy = r % oh;
                  const X* image = x + n * plan.in_spatial_count * c_dim;
                  float* row = sink != nullptr ? scratch : out + r * ow * c_dim;
                  for (int64_t ox = 0; ox < ow; ++ox) {
                    int64_t taps = 0;
                    for (int64_t ky = 0; ky < kh; ++ky) {
                      const int64_t iy = ty[oy * kh + ky];
                      if (iy < 0) continue;
                      for (int64_t kx = 0; kx < kw; ++kx) {
                        const int64_t ix = tx[ox * kw + kx];
                        if (ix < 0) continue;
                        xoff[taps] = (iy * in_w + ix) * c_dim;
                        woff[taps] = (ky * kw + kx) * c_dim;
                        ++taps;
                      }
                    }
                    DepthwisePosition(image, w, xoff.data(), woff.data(), taps,
                                      c_dim, row + ox * c_dim, accumulate);
                  }
                  if (sink != nullptr) sink->Finish(r * ow, ow, scratch);
                }
              });
}

// out (canonical [N_out * P, O]) = or += conv(x, w) for prepared operands.
// The pass for plan.whole: X is f32, or bf16 for plan.whole_bf16.
template <typename X>
void RunWhole(const Eigen::ThreadPoolDevice* device, const ConvPlan& plan,
              const X* x, const X* w, float* out, bool accumulate,
              const RowEpilogue* sink) {
  const int64_t rows = plan.out_batch * plan.out_spatial_count;
  const int64_t kc = plan.kernel_count * plan.group_in_features;
  const int64_t og = plan.group_out_features;
  std::shared_ptr<AlignedBuffer> patches =
      AlignedBuffer::Allocate(rows * kc * sizeof(X));
  X* a = static_cast<X*>(patches->data());
  if (plan.spatial_rank == 2) {
    BuildPatches2d(plan, x, 0, rows, a);
  } else {
    BuildPatches(plan, x, 0, 0, rows, a);
  }
  std::shared_ptr<AlignedBuffer> scratch;
  float* dst = out;
  if (sink != nullptr) {
    scratch = AlignedBuffer::Allocate(rows * og * sizeof(float));
    dst = static_cast<float*>(scratch->data());
  }
  plan.whole_routine.Run(device, a, w, dst, sink == nullptr && accumulate);
  if (sink != nullptr) sink->Finish(0, rows, dst);
}

// With `sink` (plan.epilogue_on_rows), rows go there instead of to `out`.
template <typename C>
void RunConvPass(const Eigen::ThreadPoolDevice* device, const ConvPlan& plan,
                 const C* x, const C* w, C* out, bool accumulate,
                 const RowEpilogue* sink) {
  const int64_t rows = plan.out_batch * plan.out_spatial_count;
  const int64_t cg = plan.group_in_features, og = plan.group_out_features;
  const int64_t kc = plan.kernel_count * cg;
  if (rows == 0 || plan.out_features == 0) return;
  if (plan.direct) {
    if constexpr (std::is_same_v<C, float>) {
      if (sink != nullptr) {
        plan.direct_routine.RunRows(device, x, w, out,
                                    [&](int64_t m0, int64_t m1) {
                                      sink->Finish(m0, m1 - m0, out + m0 * og);
                                    });
        return;
      }
    }
    ConvGemm<C>(device, plan, plan.direct_routine, rows, x, w, out, accumulate);
    return;
  }
  if (plan.depthwise) {
    if constexpr (std::is_same_v<C, float>) {
      if (plan.depthwise_2d) {
        RunDepthwise2d<float>(device, plan, x, w, out, accumulate, sink);
        return;
      }
    }
    RunDepthwisePass<C, C>(device, plan, x, w, out, accumulate);
    return;
  }
  if constexpr (std::is_same_v<C, float>) {
    if (plan.whole) {
      RunWhole<float>(device, plan, x, w, out, accumulate, sink);
      return;
    }
  }
  const int64_t tile = plan.tile;
  const int64_t tiles = (rows + tile - 1) / tile;
  auto work = [&](int64_t begin, int64_t end) {
    C* patch = ThreadScratch<C>(0, tile * std::max<int64_t>(kc, 1));
    C* tile_out =
        ThreadScratch<C>(1, plan.groups > 1 || sink != nullptr ? tile * og : 0);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t g = item / tiles;
      const int64_t r0 = (item % tiles) * tile;
      const int64_t r1 = std::min(rows, r0 + tile);
      const int64_t m = r1 - r0;
      const C* wg = w + g * kc * og;
      if (kc > 0 && plan.groups == 1 && plan.spatial_rank == 2) {
        BuildPatches2d(plan, x, r0, r1, patch);
      } else if (kc > 0) {
        BuildPatches(plan, x, g, r0, r1, patch);
      }
      const GemmRoutine& routine =
          m == tile ? plan.tile_routine : plan.tail_routine;
      if (plan.groups == 1) {
        if constexpr (std::is_same_v<C, float>) {
          if (sink != nullptr) {
            ConvGemm<C>(nullptr, plan, routine, m, patch, wg, tile_out, false);
            sink->Finish(r0, m, tile_out);
            continue;
          }
        }
        ConvGemm<C>(nullptr, plan, routine, m, patch, wg, out + r0 * og,
                    accumulate);
        continue;
      }
      ConvGemm<C>(nullptr, plan, routine, m, patch, wg, tile_out, false);
      for (int64_t r = 0; r < m; ++r) {
        C* dst = out + (r0 + r) * plan.out_features + g * og;
        const C* src = tile_out + r * og;
        if (accumulate) {
          for (int64_t j = 0; j < og; ++j) dst[j] += src[j];
        } else {
          std::copy(src, src + og, dst);
        }
      }
    }
  };
  const double cost = 2.0 * tile * std::max<int64_t>(kc, 1) * og + tile * kc;
  if (device == nullptr) {
    work(0, plan.groups * tiles);
  } else {
    ParallelFor(device, plan.groups * tiles, cost, work);
  }
}

// out (canonical [N_out, P..., O], compute type C) = conv(operands).
// With `sink` (plan.epilogue_on_rows), rows go there instead of to `out`.
template <typename C>
void ComputeCanonical(const Eigen::ThreadPoolDevice* device,
                      const ConvPlan& plan, absl::Span<const Operand> operands,
                      C* out, const RowEpilogue* sink = nullptr) {
  auto pass = [&](OperandRounding lr, OperandRounding rr, bool accumulate) {
    std::shared_ptr<AlignedBuffer> xs, ws, gs;
    if constexpr (std::is_same_v<C, float>) {
      if (plan.whole_bf16) {
        const bf16* x = PrepareOperand<bf16, bf16>(device, *operands[0].value,
                                                   plan.input_perm, lr, xs);
        const bf16* wc = PrepareOperand<bf16, bf16>(device, *operands[1].value,
                                                    plan.kernel_perm, rr, ws);
        const bf16* w = GroupKernels<bf16>(device, plan, wc, gs);
        RunWhole<bf16>(device, plan, x, w, out, accumulate, sink);
        return;
      }
      if (plan.bf16_input) {
        const bf16* x = PrepareOperand<bf16, bf16>(device, *operands[0].value,
                                                   plan.input_perm, lr, xs);
        if (plan.direct) {
          const bf16* w = PrepareOperand<bf16, bf16>(device, *operands[1].value,
                                                     plan.kernel_perm, rr, ws);
          if (sink != nullptr) {
            plan.direct_routine.RunRows(
                device, x, w, out, [&](int64_t m0, int64_t m1) {
                  sink->Finish(m0, m1 - m0, out + m0 * plan.out_features);
                });
          } else {
            plan.direct_routine.Run(device, x, w, out, accumulate);
          }
          return;
        }
        const float* wc = PrepareAnyType<float>(device, *operands[1].value,
                                                plan.kernel_perm, rr, ws);
        const float* w = GroupKernels<float>(device, plan, wc, gs);
        if (plan.depthwise_2d) {
          RunDepthwise2d<bf16>(device, plan, x, w, out, accumulate, sink);
        } else {
          RunDepthwisePass<float, bf16>(device, plan, x, w, out, accumulate);
        }
        return;
      }
    }
    const C* x =
        PrepareAnyType<C>(device, *operands[0].value, plan.input_perm, lr, xs);
    const C* w_canonical =
        PrepareAnyType<C>(device, *operands[1].value, plan.kernel_perm, rr, ws);
    const C* w = GroupKernels<C>(device, plan, w_canonical, gs);
    RunConvPass<C>(device, plan, x, w, out, accumulate, sink);
  };
  if (plan.out_features > 0 &&
      plan.group_in_features * plan.kernel_count == 0) {
    std::fill(out, out + plan.result.element_count(), C(0));
  } else {
    RunPrecisionPasses(plan.tpu_passes, pass);
  }
}

// A convolution with its epilogue: the convolution's f32 output stays
// canonical and unrounded, and the epilogue writes the root's result (f32 or
// bf16) from it.
std::unique_ptr<Kernel> MakeFusedConvKernel(ConvPlan plan,
                                            ConvEpilogue epilogue,
                                            Shape root_shape) {
  return MakeKernel(
      [plan = std::move(plan), epilogue = std::move(epilogue),
       root_shape = std::move(root_shape)](
          KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const Eigen::ThreadPoolDevice* device = context.device();
        Literal result = Literal::Uninitialized(root_shape);
        void* out = result.mutable_untyped_data();
        const void* bias =
            operands.size() > 2 ? operands[2].value->untyped_data() : nullptr;
        if (plan.epilogue_on_rows) {
          std::vector<float> bias_f32;
          if (bias != nullptr) {
            bias_f32.resize(plan.out_features);
            for (int64_t f = 0; f < plan.out_features; ++f) {
              bias_f32[f] =
                  epilogue.type == xla::BF16
                      ? static_cast<float>(static_cast<const bf16*>(bias)[f])
                      : static_cast<const float*>(bias)[f];
            }
          }
          RowEpilogue sink{&epilogue, bias ? bias_f32.data() : nullptr, out,
                           plan.out_features,
                           plan.spatial_rank == 2 ? plan.out_spatial[1] : 0};
          // The direct product writes every row to memory first (as the
          // library lays them out); the other paths keep rows in scratch.
          float* conv = nullptr;
          std::shared_ptr<AlignedBuffer> storage;
          if (plan.direct && epilogue.type == xla::F32) {
            conv = static_cast<float*>(out);
          } else if (plan.direct) {
            storage = AlignedBuffer::Allocate(plan.result.element_count() * 4);
            conv = static_cast<float*>(storage->data());
          }
          ComputeCanonical<float>(device, plan, operands, conv, &sink);
          return result;
        }
        std::shared_ptr<AlignedBuffer> storage;
        float* conv = static_cast<float*>(out);
        if (!epilogue.pool.empty() || epilogue.type != xla::F32) {
          storage = AlignedBuffer::Allocate(plan.result.element_count() * 4);
          conv = static_cast<float*>(storage->data());
        }
        ComputeCanonical<float>(device, plan, operands, conv);
        ApplyConvEpilogue(device, epilogue, plan.canonical_output_dims, conv,
                          bias, out);
        return result;
      });
}

// A pred convolution reads its operands as pred (nonzero is true), as XLA's
// evaluator converts them, and computes the OR of ANDs: an integer count of
// true products, nonzero when any is.
Literal NonzeroAsPred(const Literal& in) {
  Literal out =
      Literal::Uninitialized(Shape::Array(xla::PRED, in.shape().dimensions()));
  bool* dst = static_cast<bool*>(out.mutable_untyped_data());
  DispatchType(
      in.shape().element_type(),
      [&](auto tag) {
        using S = typename decltype(tag)::type;
        const S* src = in.data<S>().data();
        for (int64_t i = 0; i < in.shape().element_count(); ++i) {
          dst[i] = src[i] != S(0);
        }
      },
      [] {});
  return out;
}

template <typename R>
std::unique_ptr<Kernel> MakeConvKernel(ConvPlan plan) {
  using C = GemmType<R>;
  return MakeKernel(
      [plan = std::move(plan)](
          KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const Eigen::ThreadPoolDevice* device = context.device();
        Literal result = Literal::Uninitialized(plan.result);
        const int64_t count = plan.result.element_count();
        const bool in_place = std::is_same_v<C, R> && plan.output_perm.empty();
        std::shared_ptr<AlignedBuffer> canonical_storage;
        C* out;
        if (in_place) {
          out = static_cast<C*>(result.mutable_untyped_data());
        } else {
          canonical_storage = AlignedBuffer::Allocate(count * sizeof(C));
          out = static_cast<C*>(canonical_storage->data());
        }
        if constexpr (std::is_same_v<R, bool>) {
          Literal lhs_pred, rhs_pred;
          std::vector<Operand> as_pred(operands.begin(), operands.end());
          for (int i = 0; i < 2; ++i) {
            if (as_pred[i].value->shape().element_type() == xla::PRED) continue;
            Literal& converted = i == 0 ? lhs_pred : rhs_pred;
            converted = NonzeroAsPred(*as_pred[i].value);
            as_pred[i].value = &converted;
          }
          ComputeCanonical<C>(device, plan, as_pred, out);
        } else {
          ComputeCanonical<C>(device, plan, operands, out);
        }
        if (in_place) return result;
        const C* canonical = out;
        std::shared_ptr<AlignedBuffer> converted;
        if constexpr (!std::is_same_v<C, R>) {
          converted = AlignedBuffer::Allocate(count * sizeof(R));
          R* dst = static_cast<R*>(converted->data());
          UnaryLoop(device, canonical, dst, count, 2,
                    [](const C& v) { return static_cast<R>(v); });
          if (plan.output_perm.empty()) {
            std::memcpy(result.mutable_untyped_data(), dst, count * sizeof(R));
            return result;
          }
          Transpose(device, sizeof(R), plan.canonical_output_dims,
                    plan.output_perm, dst, result.mutable_untyped_data());
        } else {
          Transpose(device, sizeof(R), plan.canonical_output_dims,
                    plan.output_perm, canonical, result.mutable_untyped_data());
        }
        return result;
      });
}

// Checks that `dims` (the named roles of one operand) are distinct and cover
// 0..rank-1 exactly.
absl::Status CheckPermutation(const std::vector<int64_t>& dims, int64_t rank,
                              const char* what) {
  std::vector<bool> seen(rank, false);
  if (static_cast<int64_t>(dims.size()) != rank) {
    return Malformed(absl::StrCat("convolution ", what, " has rank ", rank,
                                  " but the dimension numbers name ",
                                  dims.size(), " dimensions"));
  }
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[d]) {
      return Malformed(absl::StrCat("convolution ", what, " dimension ", d,
                                    " is out of range or used twice"));
    }
    seen[d] = true;
  }
  return absl::OkStatus();
}

bool IsIdentityPerm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Checks operands and dimension numbers; fills the permutations of `plan`
// and the canonical order of the output dims (`out_roles`).
absl::Status ReadLayouts(const HloInstruction& instruction, ConvPlan& plan,
                         std::vector<int64_t>& out_roles) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  const Shape& lhs = instruction.operand(0)->shape();
  const Shape& rhs = instruction.operand(1)->shape();
  if (absl::Status s = ExpectArray(lhs, "convolution input"); !s.ok()) return s;
  if (absl::Status s = ExpectArray(rhs, "convolution kernel"); !s.ok()) {
    return s;
  }
  if (absl::Status s = ExpectArray(instruction.shape(), "convolution result");
      !s.ok()) {
    return s;
  }
  const xla::ConvolutionDimensionNumbers& dn =
      instruction.proto().convolution_dimension_numbers();
  const int64_t d = dn.input_spatial_dimensions_size();
  if (dn.kernel_spatial_dimensions_size() != d ||
      dn.output_spatial_dimensions_size() != d) {
    return Malformed(
        absl::StrCat("convolution dimension numbers name ", d, " input, ",
                     dn.kernel_spatial_dimensions_size(), " kernel and ",
                     dn.output_spatial_dimensions_size(),
                     " output spatial dimensions; they must agree"));
  }
  plan.spatial_rank = d;
  plan.input_perm.push_back(dn.input_batch_dimension());
  for (int64_t s : dn.input_spatial_dimensions()) plan.input_perm.push_back(s);
  plan.input_perm.push_back(dn.input_feature_dimension());
  for (int64_t s : dn.kernel_spatial_dimensions()) {
    plan.kernel_perm.push_back(s);
  }
  plan.kernel_perm.push_back(dn.kernel_input_feature_dimension());
  plan.kernel_perm.push_back(dn.kernel_output_feature_dimension());
  out_roles.push_back(dn.output_batch_dimension());
  for (int64_t s : dn.output_spatial_dimensions()) out_roles.push_back(s);
  out_roles.push_back(dn.output_feature_dimension());
  if (absl::Status s = CheckPermutation(plan.input_perm, lhs.rank(), "input");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckPermutation(plan.kernel_perm, rhs.rank(), "kernel");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckPermutation(out_roles, instruction.shape().rank(), "output");
      !s.ok()) {
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<ConvPlan> BuildConvPlan(const HloInstruction& instruction,
                                       KernelCompiler& compiler) {
  ConvPlan plan;
  std::vector<int64_t> out_roles;
  if (absl::Status s = ReadLayouts(instruction, plan, out_roles); !s.ok()) {
    return s;
  }
  const Shape& lhs = instruction.operand(0)->shape();
  const Shape& rhs = instruction.operand(1)->shape();
  const xla::ConvolutionDimensionNumbers& dn =
      instruction.proto().convolution_dimension_numbers();
  const int64_t d = plan.spatial_rank;
  const Shape& result_shape = instruction.shape();
  plan.in_batch = lhs.dimensions(dn.input_batch_dimension());
  plan.in_features = lhs.dimensions(dn.input_feature_dimension());
  for (int64_t s : dn.input_spatial_dimensions()) {
    plan.in_spatial.push_back(lhs.dimensions(s));
    plan.in_spatial_count *= lhs.dimensions(s);
  }
  for (int64_t s : dn.kernel_spatial_dimensions()) {
    plan.kernel_spatial.push_back(rhs.dimensions(s));
    plan.kernel_count *= rhs.dimensions(s);
  }
  const int64_t kernel_in = rhs.dimensions(dn.kernel_input_feature_dimension());
  const int64_t kernel_out =
      rhs.dimensions(dn.kernel_output_feature_dimension());
  const int64_t fgc =
      std::max<int64_t>(1, instruction.proto().feature_group_count());
  const int64_t bgc =
      std::max<int64_t>(1, instruction.proto().batch_group_count());
  if (fgc > 1 && bgc > 1) {
    return Malformed(
        absl::StrCat("convolution cannot have both feature_group_count (", fgc,
                     ") and batch_group_count (", bgc, ") greater than 1"));
  }
  if (plan.in_features != kernel_in * fgc) {
    return Malformed(
        absl::StrCat("convolution input feature size ", plan.in_features,
                     " must equal kernel input feature size ", kernel_in,
                     " times feature_group_count ", fgc));
  }
  if (kernel_out % fgc != 0 || kernel_out % bgc != 0) {
    return Malformed(absl::StrCat("convolution kernel output feature size ",
                                  kernel_out,
                                  " must be divisible by feature_group_count ",
                                  fgc, " and batch_group_count ", bgc));
  }
  if (plan.in_batch % bgc != 0) {
    return Malformed(
        absl::StrCat("convolution input batch size ", plan.in_batch,
                     " must be divisible by batch_group_count ", bgc));
  }
  absl::StatusOr<std::vector<WindowDim>> window =
      ReadWindow(instruction.proto().window(), plan.in_spatial, "convolution");
  if (!window.ok()) return window.status();
  std::vector<int64_t> canonical_out = {plan.in_batch / bgc};
  for (int64_t s = 0; s < d; ++s) {
    const WindowDim& w = (*window)[s];
    if (w.size != plan.kernel_spatial[s]) {
      return Malformed(absl::StrCat(
          "convolution window dimension ", s, " has size ", w.size,
          " but the kernel's spatial size is ", plan.kernel_spatial[s]));
    }
    const int64_t out = WindowOutputSize(plan.in_spatial[s], w);
    plan.out_spatial.push_back(out);
    plan.out_spatial_count *= out;
    absl::StatusOr<std::vector<int64_t>> table =
        WindowInputTable(plan.in_spatial[s], out, w, "convolution");
    if (!table.ok()) return table.status();
    plan.tables.push_back(*std::move(table));
    plan.reversed.push_back(w.reversal);
    plan.any_reversed |= w.reversal && w.size > 1;
    canonical_out.push_back(out);
  }
  canonical_out.push_back(kernel_out);
  std::vector<int64_t> result_dims(result_shape.rank());
  for (size_t i = 0; i < out_roles.size(); ++i) {
    result_dims[out_roles[i]] = canonical_out[i];
  }
  const xla::PrimitiveType rt = result_shape.element_type();
  if (absl::Status s =
          ExpectResultShape(instruction, Shape::Array(rt, result_dims));
      !s.ok()) {
    return s;
  }
  for (const Shape* operand : {&lhs, &rhs}) {
    const xla::PrimitiveType t = operand->element_type();
    if (IsComplex(t) && !IsComplex(rt)) {
      return Malformed(
          "convolution of complex operands needs a complex result");
    }
    if (IsFloatingPoint(t) && !IsFloatingPoint(rt) && !IsComplex(rt) &&
        rt != xla::PRED) {
      return Malformed(
          absl::StrCat("convolution of ", PrimitiveTypeName(t),
                       " operands cannot produce an integer result (",
                       PrimitiveTypeName(rt), ")"));
    }
  }
  plan.result = result_shape;
  plan.canonical_output_dims = canonical_out;
  plan.out_batch = canonical_out[0];
  plan.out_features = kernel_out;
  plan.groups = std::max(fgc, bgc);
  plan.batch_grouped = bgc > 1;
  plan.group_in_features = kernel_in;
  plan.group_out_features = kernel_out / plan.groups;
  // Result dim i is canonical dim inverse[i].
  std::vector<int64_t> output_perm(result_shape.rank());
  for (size_t i = 0; i < out_roles.size(); ++i) output_perm[out_roles[i]] = i;
  if (!IsIdentityPerm(output_perm)) plan.output_perm = output_perm;
  bool trivial_window = plan.groups == 1;
  for (const WindowDim& w : *window) {
    trivial_window &= w.size == 1 && w.stride == 1 && w.padding_low == 0 &&
                      w.padding_high == 0 && w.base_dilation == 1;
  }
  plan.direct = trivial_window;
  plan.depthwise =
      !plan.batch_grouped && plan.groups > 1 && plan.group_in_features == 1;
  plan.depthwise_2d = plan.depthwise && d == 2 && plan.group_out_features == 1;
  plan.tpu_passes =
      TpuPrecisionPasses(compiler.options().tpu_numerics, instruction,
                         lhs.element_type(), rhs.element_type(), rt);
  plan.lhs_type = lhs.element_type();
  plan.rhs_type = rhs.element_type();
  PlanGemms(plan);
  return plan;
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileConvolution(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  absl::StatusOr<ConvPlan> plan = BuildConvPlan(instruction, compiler);
  if (!plan.ok()) return plan.status();
  const xla::PrimitiveType rt = instruction.shape().element_type();
  return DispatchType(
      rt,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using R = typename decltype(tag)::type;
        return MakeConvKernel<R>(*std::move(plan));
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, rt);
      });
}

// The fused factory (kFusedConvolutionOpcode), called with the root of a
// pattern MatchConvEpilogue accepts.
absl::StatusOr<std::unique_ptr<Kernel>> CompileFusedConvolution(
    const HloInstruction& root, KernelCompiler& compiler) {
  std::optional<ConvEpilogue> epilogue =
      MatchConvEpilogue(root, nullptr, nullptr);
  if (!epilogue) {
    return absl::UnimplementedError(
        absl::StrCat(kFusedConvolutionOpcode, " is not an HLO opcode (",
                     root.opcode(), " does not end a convolution epilogue)"));
  }
  absl::StatusOr<ConvPlan> plan =
      BuildConvPlan(*epilogue->convolution, compiler);
  if (!plan.ok()) return plan.status();
  if (plan->result.element_type() != epilogue->type ||
      !plan->output_perm.empty() ||
      (epilogue->bias != nullptr &&
       epilogue->bias->shape().element_count() != plan->out_features)) {
    return Malformed("convolution epilogue does not fit its convolution");
  }
  // Every row comes from one pass, in blocks: the direct product's row
  // tiles, im2col tiles of one group, or depthwise rows.
  plan->epilogue_on_rows = epilogue->pool.empty() && plan->tpu_passes == 0 &&
                           plan->group_in_features * plan->kernel_count > 0 &&
                           (plan->groups == 1 || plan->depthwise_2d);
  // A 2-D pool over im2col tiles of whole pool windows: tiles of a multiple
  // of pool-height output rows, in an output whose height the pool divides.
  if (epilogue->pool.size() == 2 && plan->tpu_passes == 0 &&
      plan->groups == 1 && !plan->direct && plan->spatial_rank == 2 &&
      plan->group_in_features * plan->kernel_count > 0 &&
      plan->out_spatial[0] % epilogue->pool[0] == 0 &&
      plan->out_spatial[1] >= epilogue->pool[1] && plan->out_features <= 4096) {
    const int64_t unit = epilogue->pool[0] * plan->out_spatial[1];
    const int64_t rows = plan->out_batch * plan->out_spatial_count;
    plan->tile = std::min(rows, std::max(unit, plan->tile / unit * unit));
    const int64_t kc = plan->kernel_count * plan->group_in_features;
    const int64_t og = plan->group_out_features;
    plan->tile_routine = GemmRoutine::Choose({1, plan->tile, og, kc}, false);
    plan->tail_routine =
        GemmRoutine::Choose({1, rows % plan->tile, og, kc}, false);
    plan->epilogue_on_rows = true;
  }
  return MakeFusedConvKernel(*std::move(plan), *std::move(epilogue),
                             root.shape());
}

}  // namespace

void RegisterConvolutionKernels(KernelRegistry& registry) {
  registry.Register("convolution", &CompileConvolution);
  registry.Register(kFusedConvolutionOpcode, &CompileFusedConvolution);
}

}  // namespace tpu::emulator::interpreter
