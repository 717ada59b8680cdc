#include "emulator/worker/program_memory.h"

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "hlo/shape.h"

namespace tpu::emulator {
namespace {

// The largest array within `shape` (itself, or a tuple element at any depth).
const Shape* LargestArray(const Shape& shape) {
  if (shape.IsArray()) return &shape;
  const Shape* largest = nullptr;
  if (!shape.IsTuple()) return nullptr;
  // Iterative: tuple nesting is bounded by Shape::kMaxNesting, but a wide
  // tuple need not recurse for each element.
  std::vector<const Shape*> stack = {&shape};
  while (!stack.empty()) {
    const Shape* s = stack.back();
    stack.pop_back();
    if (s->IsArray()) {
      if (largest == nullptr || s->ByteSize() > largest->ByteSize()) {
        largest = s;
      }
    } else if (s->IsTuple()) {
      for (const Shape& element : s->tuple_shapes()) stack.push_back(&element);
    }
  }
  return largest;
}

}  // namespace

absl::Status CheckValuesFitBudget(const xla::HloModuleProto& module,
                                  const MemoryBudget& budget) {
  for (const xla::HloComputationProto& computation : module.computations()) {
    for (const xla::HloInstructionProto& instruction :
         computation.instructions()) {
      absl::StatusOr<Shape> shape = Shape::FromProto(instruction.shape());
      if (!shape.ok()) continue;
      const Shape* largest = LargestArray(*shape);
      if (largest == nullptr || largest->ByteSize() <= budget.limit()) {
        continue;
      }
      return absl::ResourceExhaustedError(absl::StrCat(
          "HLO computation ", computation.name(), ", instruction ",
          instruction.name(), " (", instruction.opcode(), "): its value ",
          largest->ToString(), " takes ", FormatByteCount(largest->ByteSize()),
          ", more than ", budget.name(), " of ",
          FormatByteCount(budget.limit()),
          " allows in all; make the program smaller or raise the budget."));
    }
  }
  return absl::OkStatus();
}

}  // namespace tpu::emulator
