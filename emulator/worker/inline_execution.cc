#include "emulator/worker/inline_execution.h"

#include <string>

#include "absl/strings/match.h"

namespace tpu::emulator {
namespace {

// Elements of `shape` (a tuple's leaves summed), or -1 past `limit`.
int64_t ElementsUpTo(const xla::ShapeProto& shape, int64_t limit) {
  if (shape.tuple_shapes_size() > 0) {
    int64_t total = 0;
    for (const xla::ShapeProto& leaf : shape.tuple_shapes()) {
      const int64_t n = ElementsUpTo(leaf, limit - total);
      if (n < 0) return -1;
      total += n;
    }
    return total;
  }
  int64_t n = 1;
  for (int64_t d : shape.dimensions()) {
    if (d < 0 || (d > 0 && n > limit / d)) return -1;
    n *= d;
  }
  return n <= limit ? n : -1;
}

// Operations that loop, meet other cores, wait for the host or run code we
// cannot bound.
bool MayBlockOrLoop(const std::string& opcode) {
  return opcode == "while" || opcode == "infeed" || opcode == "outfeed" ||
         opcode == "custom-call" || opcode == "all-to-all" ||
         opcode == "reduce-scatter" || absl::StartsWith(opcode, "all-") ||
         absl::StartsWith(opcode, "ragged-all-") ||
         absl::StartsWith(opcode, "collective-") ||
         absl::StartsWith(opcode, "send") || absl::StartsWith(opcode, "recv") ||
         absl::StartsWith(opcode, "async-");
}

}  // namespace

bool RunsInline(const xla::HloModuleProto& module, int num_replicas) {
  if (num_replicas != 1) return false;
  int64_t budget = kMaxInlineElements;
  for (const xla::HloComputationProto& computation : module.computations()) {
    for (const xla::HloInstructionProto& instruction :
         computation.instructions()) {
      if (MayBlockOrLoop(instruction.opcode())) return false;
      const int64_t n = ElementsUpTo(instruction.shape(), budget);
      if (n < 0) return false;
      budget -= n;
    }
  }
  return true;
}

}  // namespace tpu::emulator
