// Fuzz target: the .npy reader of tpu_run (files users hand it). Whatever it
// accepts must serialize and read back to the same array.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "tools/tpu_run/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto array = tpu::ParseNpy(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!array.ok()) return 0;
  // The element count and the data size must agree for anything accepted.
  if (array->element_count() * array->dtype.item_size !=
      static_cast<int64_t>(array->data.size())) {
    std::fprintf(stderr, "Accepted %s %s with %zu data bytes\n",
                 array->dtype.Name().c_str(), array->ShapeString().c_str(),
                 array->data.size());
    std::abort();
  }
  auto again = tpu::ParseNpy(tpu::SerializeNpy(*array));
  if (!again.ok() || again->dtype != array->dtype ||
      again->shape != array->shape || again->data != array->data) {
    std::fprintf(
        stderr, "Round trip of %s %s changed it: %s\n",
        array->dtype.Name().c_str(), array->ShapeString().c_str(),
        again.ok() ? "different array" : again.status().ToString().c_str());
    std::abort();
  }
  return 0;
}
