#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_CONV_EPILOGUE_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_CONV_EPILOGUE_H_

// A convolution's epilogue: the bias add, activation floor (relu) and max
// pool that CNNs put after a convolution, run on the convolution's output
// while it is in cache instead of as separate passes over memory. fusion.cc
// finds the pattern; the convolution family builds the fused kernel
// (registered as kFusedConvolutionOpcode, see kernels_convolution.cc).
//
// Semantics are unchanged: each element is computed with exactly the f32
// operations, in the operand order, of the instructions it replaces.
//
// Thread safety: stateless functions; ConvEpilogue is a plain value.

#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hlo/hlo_module.h"

namespace Eigen {
struct ThreadPoolDevice;
}

namespace tpu::emulator::interpreter {

// The registry name of the fused kernel's factory (not an HLO opcode): it
// is called with the root of a matched pattern.
inline constexpr char kFusedConvolutionOpcode[] = "convolution+epilogue";

struct ConvEpilogue {
  const HloInstruction* convolution = nullptr;
  // F32 or BF16: every instruction of the pattern has this element type.
  // bf16 values are computed in f32 and rounded after each instruction, as
  // the unfused kernels do.
  xla::PrimitiveType type = xla::F32;
  // add(conv, broadcast(bias)) along the feature dimension, if any.
  const HloInstruction* bias = nullptr;  // the [features] operand
  // maximum(x, broadcast(floor)) (floor_first: maximum(broadcast, x)), or
  // the lower bound of clamp(floor, x, ceiling).
  bool has_floor = false;
  bool floor_first = false;
  float floor = 0.0f;
  // The upper bound of clamp(floor, x, ceiling) (relu6).
  bool has_ceiling = false;
  float ceiling = 0.0f;
  // reduce-window max with init -inf over non-overlapping, unpadded windows
  // of these sizes on the spatial dimensions; empty if none.
  std::vector<int64_t> pool;
  // The instructions the fused kernel computes (all but the root), and the
  // values it reads: convolution input, kernel, then bias if any.
  std::vector<const HloInstruction*> absorbed;
  std::vector<const HloInstruction*> leaves;
};

// Matches convolution -> [add bias] -> [maximum floor | clamp] -> [max pool]
// ending at `root` (at least one stage after the convolution), all f32 or
// all bf16, with the
// convolution's output in canonical order [batch, spatial..., feature].
// When `users` is given, every value inside the pattern must have exactly
// one user and not be `computation_root`.
std::optional<ConvEpilogue> MatchConvEpilogue(
    const HloInstruction& root,
    const absl::flat_hash_map<const HloInstruction*, int>* users,
    const HloInstruction* computation_root);

// out = epilogue(in) where in is the convolution output, unrounded f32,
// with dims [batch, spatial..., features], and out (of epilogue.type) has
// the root's shape. in == out is allowed for f32 without pooling. bias (of
// epilogue.type) has `features` elements, or is null without bias.
void ApplyConvEpilogue(const Eigen::ThreadPoolDevice* device,
                       const ConvEpilogue& epilogue,
                       const std::vector<int64_t>& dims, const float* in,
                       const void* bias, void* out);

// The epilogue of `e` (which must have no pool) on `rows` rows of
// `features` unrounded f32 convolution outputs, on the calling thread, so
// that a kernel can run it on rows it just computed while they are in
// cache. `bias` is the bias converted to f32 (exact), or null; `out` (of
// e.type) receives rows * features elements. Same values as
// ApplyConvEpilogue.
void ApplyConvEpilogueRows(const ConvEpilogue& e, int64_t features,
                           int64_t rows, const float* in, const float* bias,
                           void* out);

// The same with e's 2-D pool, on a block of whole pool windows: `in` holds
// image_rows (a multiple of e.pool[0]) rows of `width` positions of
// `features` unrounded f32 outputs (of one image); `out` receives
// image_rows / e.pool[0] rows of width / e.pool[1] pooled positions. Same
// values as ApplyConvEpilogue.
void ApplyConvEpiloguePooledRows(const ConvEpilogue& e, int64_t features,
                                 int64_t width, int64_t image_rows,
                                 const float* in, const float* bias, void* out);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_CONV_EPILOGUE_H_
