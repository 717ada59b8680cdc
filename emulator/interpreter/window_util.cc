#include "emulator/interpreter/window_util.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "hlo/memory_budget.h"

namespace tpu::emulator::interpreter {

absl::StatusOr<std::vector<WindowDim>> ReadWindow(
    const xla::Window& window, absl::Span<const int64_t> input_sizes,
    const char* what) {
  if (window.dimensions_size() != static_cast<int>(input_sizes.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " window has ", window.dimensions_size(),
                     " dimensions, expected ", input_sizes.size()));
  }
  std::vector<WindowDim> dims;
  for (int i = 0; i < window.dimensions_size(); ++i) {
    const xla::WindowDimension& w = window.dimensions(i);
    WindowDim d;
    d.size = w.size();
    d.stride = w.stride() == 0 ? 1 : w.stride();
    d.padding_low = w.padding_low();
    d.padding_high = w.padding_high();
    d.window_dilation = w.window_dilation() == 0 ? 1 : w.window_dilation();
    d.base_dilation = w.base_dilation() == 0 ? 1 : w.base_dilation();
    d.reversal = w.window_reversal();
    if (d.size < 0 || d.stride < 0 || d.window_dilation < 0 ||
        d.base_dilation < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " window dimension ", i,
          " has a negative size, stride or dilation: ", w.ShortDebugString()));
    }
    // Guard the products below against overflow from hostile protos.
    constexpr int64_t kLimit = int64_t{1} << 40;
    if (d.size > kLimit || d.stride > kLimit || d.window_dilation > kLimit ||
        d.base_dilation > kLimit || d.padding_low > kLimit ||
        d.padding_high > kLimit || d.padding_low < -kLimit ||
        d.padding_high < -kLimit) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " window dimension ", i,
                       " is too large: ", w.ShortDebugString()));
    }
    const int64_t dilated_base =
        input_sizes[i] == 0 ? 0 : (input_sizes[i] - 1) * d.base_dilation + 1;
    if (dilated_base + d.padding_low + d.padding_high < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " window dimension ", i,
          ": negative padding removes more than the whole input (size ",
          input_sizes[i], ", ", w.ShortDebugString(), ")"));
    }
    dims.push_back(d);
  }
  return dims;
}

int64_t WindowOutputSize(int64_t input_size, const WindowDim& dim) {
  const int64_t dilated_base =
      input_size == 0 ? 0 : (input_size - 1) * dim.base_dilation + 1;
  const int64_t padded = dilated_base + dim.padding_low + dim.padding_high;
  const int64_t dilated_window =
      dim.size == 0 ? 0 : (dim.size - 1) * dim.window_dilation + 1;
  if (padded < dilated_window) return 0;
  return (padded - dilated_window) / dim.stride + 1;
}

absl::StatusOr<std::vector<int64_t>> WindowInputTable(int64_t input_size,
                                                      int64_t output_size,
                                                      const WindowDim& dim,
                                                      const char* what) {
  int64_t entries = 0, bytes = 0;
  const bool overflows =
      __builtin_mul_overflow(output_size, dim.size, &entries) ||
      __builtin_mul_overflow(entries, int64_t{sizeof(int64_t)}, &bytes);
  const MemoryBudget* budget = MemoryBudget::Process();
  if (overflows ||
      (budget != nullptr && bytes > budget->limit() - budget->committed())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, ": the window's index table (", output_size,
        " output positions x ", dim.size, " window positions) needs ",
        overflows ? "more than 2^63" : absl::StrCat(bytes), " bytes",
        budget != nullptr
            ? absl::StrCat(", more than is left of ", budget->name(), " (",
                           budget->committed(), " of ", budget->limit(),
                           " bytes committed)")
            : std::string(),
        "; use a smaller window or output"));
  }
  std::vector<int64_t> table(entries, -1);
  for (int64_t p = 0; p < output_size; ++p) {
    for (int64_t k = 0; k < dim.size; ++k) {
      const int64_t dilated =
          p * dim.stride - dim.padding_low + k * dim.window_dilation;
      if (dilated < 0 || dilated % dim.base_dilation != 0) continue;
      const int64_t index = dilated / dim.base_dilation;
      if (index < input_size) table[p * dim.size + k] = index;
    }
  }
  return table;
}

}  // namespace tpu::emulator::interpreter
