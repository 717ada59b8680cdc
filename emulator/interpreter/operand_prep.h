#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_OPERAND_PREP_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_OPERAND_PREP_H_

// Bringing dot/convolution operands into the compute type and layout a GEMM
// wants, including the TPU's bf16 operand rounding.

#include <algorithm>
#include <memory>
#include <vector>

#include "emulator/interpreter/elementwise_common.h"

namespace tpu::emulator::interpreter {

// How f32 operands are rounded before the product (TPU numerics).
enum class OperandRounding {
  kNone,      // exact
  kBf16,      // round to bf16 (TPU DEFAULT precision)
  kBf16High,  // the low bf16 part (x - bf16(x)) rounded to bf16
};

// How many products an f32 dot or convolution takes: 0 for an exact f32
// product (tpu_numerics off, HIGHEST precision, or other types), 1 for the
// TPU's DEFAULT (operands rounded to bf16, f32 accumulation), 3 for HIGH
// (bf16x3: hi*hi + hi*lo + lo*hi). The highest operand precision decides.
inline int TpuPrecisionPasses(bool tpu_numerics,
                              const HloInstruction& instruction,
                              xla::PrimitiveType lhs, xla::PrimitiveType rhs,
                              xla::PrimitiveType result) {
  if (!tpu_numerics || lhs != xla::F32 || rhs != xla::F32 ||
      result != xla::F32) {
    return 0;
  }
  int precision = xla::PrecisionConfig::DEFAULT;
  for (int p : instruction.proto().precision_config().operand_precision()) {
    precision = std::max(precision, p);
  }
  if (precision == xla::PrecisionConfig::DEFAULT) return 1;
  if (precision == xla::PrecisionConfig::HIGH) return 3;
  return 0;
}

// Calls pass(lhs_rounding, rhs_rounding, accumulate) once per product of
// TpuPrecisionPasses; each later pass accumulates into the first's output.
template <typename Pass>
void RunPrecisionPasses(int passes, Pass&& pass) {
  using R = OperandRounding;
  if (passes == 0) {
    pass(R::kNone, R::kNone, false);
  } else if (passes == 1) {
    pass(R::kBf16, R::kBf16, false);
  } else {
    // Each of the three products is exact in f32.
    pass(R::kBf16High, R::kBf16, false);
    pass(R::kBf16, R::kBf16High, true);
    pass(R::kBf16, R::kBf16, true);
  }
}

// The compute type for a result type: f16/bf16 and f32 -> float, f64 ->
// double, complex as is, integers -> int32/int64 (wrapping, then truncated).
template <typename R>
using GemmType = std::conditional_t<
    kIsFloat<R>, std::conditional_t<std::is_same_v<R, double>, double, float>,
    std::conditional_t<kIsComplex<R>, R,
                       std::conditional_t<(sizeof(R) > 4), int64_t, int32_t>>>;

// Elements of `in` (type S) as C, rounded per `rounding`, permuted so that
// result dimension i is input dimension perm[i]. Returns `in`'s own bytes
// when no conversion or permutation is needed (then `storage` is unused).
template <typename C, typename S>
const C* PrepareOperand(const Eigen::ThreadPoolDevice* device,
                        const Literal& in, const std::vector<int64_t>& perm,
                        OperandRounding rounding,
                        std::shared_ptr<AlignedBuffer>& storage) {
  const int64_t n = in.shape().element_count();
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) identity = false;
  }
  const C* data;
  std::shared_ptr<AlignedBuffer> converted;
  if constexpr (std::is_same_v<C, S>) {
    data = in.data<S>().data();
    if (rounding != OperandRounding::kNone) {
      if constexpr (std::is_same_v<C, float>) {
        converted = AlignedBuffer::Allocate(n * sizeof(C));
        C* out = static_cast<C*>(converted->data());
        const float* src = data;
        UnaryLoop(device, src, out, n, 2, [rounding](float v) {
          const float hi = static_cast<float>(bf16(v));
          if (rounding == OperandRounding::kBf16) return hi;
          return static_cast<float>(bf16(v - hi));
        });
        data = out;
      }
    }
  } else if constexpr (std::is_same_v<S, bf16> && std::is_same_v<C, float>) {
    // Exact, and as plain integer shifts it vectorizes (Eigen's bf16 to
    // float conversion does not).
    converted = AlignedBuffer::Allocate(n * sizeof(C));
    auto* out = static_cast<uint32_t*>(converted->data());
    const auto* src = reinterpret_cast<const uint16_t*>(in.data<S>().data());
    UnaryLoop(device, src, out, n, 1,
              [](uint16_t v) { return static_cast<uint32_t>(v) << 16; });
    data = reinterpret_cast<const C*>(out);
  } else {
    converted = AlignedBuffer::Allocate(n * sizeof(C));
    C* out = static_cast<C*>(converted->data());
    UnaryLoop(device, in.data<S>().data(), out, n, 2, [](const S& v) {
      if constexpr (kIsComplex<C> && !kIsComplex<S>) {
        return C(static_cast<typename C::value_type>(
            static_cast<ComputeType<S>>(v)));
      } else if constexpr (kIsComplex<C>) {
        return C(v);
      } else if constexpr (std::is_same_v<S, bool>) {
        return C(v ? 1 : 0);
      } else {
        return static_cast<C>(static_cast<ComputeType<S>>(v));
      }
    });
    data = out;
  }
  if (identity) {
    storage = std::move(converted);
    return data;
  }
  storage = AlignedBuffer::Allocate(n * sizeof(C));
  Transpose(device, sizeof(C), in.shape().dimensions(), perm, data,
            storage->data());
  return static_cast<const C*>(storage->data());
}

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_OPERAND_PREP_H_
