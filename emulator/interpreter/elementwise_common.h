#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_ELEMENTWISE_COMMON_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_ELEMENTWISE_COMMON_H_

// Shared pieces of the elementwise kernel families: the arithmetic type used
// for an element type, and parallel loops over flat arrays.

#include <cmath>
#include <limits>
#include <type_traits>

#include "emulator/interpreter/kernel_util.h"

namespace tpu::emulator::interpreter {

// f16/bf16 compute in f32 and round once, as XLA's CPU backend does.
template <typename T>
using ComputeType =
    std::conditional_t<std::is_same_v<T, bf16> || std::is_same_v<T, f16>, float,
                       T>;

// Integers of type T as their unsigned twin, for wrapping arithmetic.
template <typename T>
using UnsignedOf = std::make_unsigned_t<T>;

// Checks that all operands have the result's dimensions (HLO has no implicit
// broadcasting) and the expected element types.
absl::Status ExpectSameDimensions(const HloInstruction& instruction);

// out[i] = f(a[i]) over n elements, in parallel.
template <typename In, typename Out, typename F>
void UnaryLoop(const Eigen::ThreadPoolDevice* device, const In* a, Out* out,
               int64_t n, double cost, F f) {
  ParallelFor(device, n, cost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = f(a[i]);
  });
}

template <typename A, typename B, typename Out, typename F>
void BinaryLoop(const Eigen::ThreadPoolDevice* device, const A* a, const B* b,
                Out* out, int64_t n, double cost, F f) {
  ParallelFor(device, n, cost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = f(a[i], b[i]);
  });
}

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_ELEMENTWISE_COMMON_H_
