#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_WINDOW_UTIL_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_WINDOW_UTIL_H_

// Window geometry shared by convolution, reduce-window and
// select-and-scatter: reading and validating an xla::Window, the output size
// of a windowed dimension, and per-dimension tables that map (output
// position, window position) to an input position.
//
// Semantics (XLA's): the input of a dimension is first base-dilated
// (base_dilation - 1 holes between elements), then padded with padding_low /
// padding_high (negative values crop), then a window of `size` taps spaced
// window_dilation apart slides over it with `stride`. Taps that land on a
// hole or on padding read nothing.
//
// Thread safety: stateless functions; WindowTable is immutable.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/xla_data.pb.h"

namespace tpu::emulator::interpreter {

struct WindowDim {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padding_low = 0;
  int64_t padding_high = 0;
  int64_t window_dilation = 1;
  int64_t base_dilation = 1;
  bool reversal = false;
};

// Reads `window`, which must have one dimension per entry of `input_sizes`.
// Strides and dilations of 0 (unset proto fields) mean 1. INVALID_ARGUMENT
// for a wrong dimension count, size < 0 (or < 1 when `sizes_must_be_positive`),
// negative strides or dilations, or a window that does not fit its input;
// messages name `what` (e.g. "reduce-window").
absl::StatusOr<std::vector<WindowDim>> ReadWindow(
    const xla::Window& window, absl::Span<const int64_t> input_sizes,
    const char* what);

// Number of window positions along one dimension of `input_size` elements
// (0 if the dilated window does not fit the padded, dilated input).
int64_t WindowOutputSize(int64_t input_size, const WindowDim& dim);

// For one dimension: table[p * dim.size + k] is the input index read by tap k
// of output position p, or -1 if that tap lands on padding or a hole. Window
// reversal is NOT applied here (it concerns which kernel element a tap uses).
// The table is built at compile time and its size is the product of two
// dimensions a client chooses, so RESOURCE_EXHAUSTED (naming `what`) when it
// would not fit what is left of the process's host memory budget.
absl::StatusOr<std::vector<int64_t>> WindowInputTable(int64_t input_size,
                                                      int64_t output_size,
                                                      const WindowDim& dim,
                                                      const char* what);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_WINDOW_UTIL_H_
