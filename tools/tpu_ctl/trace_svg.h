#ifndef SOFTWARE_TPU_TOOLS_TPU_CTL_TRACE_SVG_H_
#define SOFTWARE_TPU_TOOLS_TPU_CTL_TRACE_SVG_H_

// A Chrome trace-event JSON timeline drawn as SVG, with no browser: one row
// per track (cores first, then clients), complete slices ("X") as rectangles
// nested by depth and named, flow arrows as lines. `tpu_ctl trace ...
// --svg=FILE`.
//
// Thread safety: stateless function.

#include <string>

#include "absl/status/statusor.h"

namespace tpu::tools {

// INVALID_ARGUMENT if `json` is not a JSON object with a "traceEvents" list.
// Each track is one <g class="row"> element.
absl::StatusOr<std::string> TraceJsonToSvg(const std::string& json);

}  // namespace tpu::tools

#endif  // SOFTWARE_TPU_TOOLS_TPU_CTL_TRACE_SVG_H_
