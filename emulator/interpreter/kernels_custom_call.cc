// Kernel family: custom-call, by target.
//  - Annotations that mean nothing numerically on one device pass their
//    operand through: Sharding, SPMDFullToShardShape, SPMDShardToFullShape
//    (when they keep the shape, as without partitioning they do; where they
//    change it, they cut and gather tiles across partitions, spmd_shapes.h),
//    annotate_device_placement, MoveToHost, MoveToDevice.
//  - TopK, Qr and ProductOfElementaryHouseholderReflectors run as XLA's CPU
//    backend runs them (kernels_topk.cc, kernels_qr.cc).
//  - tpu_custom_call is a Pallas/Mosaic kernel compiled for the TPU's own
//    instruction set: UNIMPLEMENTED at compile time, naming the kernel.
//  - Any other target is UNIMPLEMENTED naming it.

#include "absl/strings/match.h"
#include "emulator/interpreter/kernel_util.h"
#include "emulator/interpreter/qr.h"
#include "emulator/interpreter/spmd_shapes.h"
#include "emulator/interpreter/topk.h"

namespace tpu::emulator::interpreter {
namespace {

bool IsPassThrough(const std::string& target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" ||
         target == "SPMDShardToFullShape" ||
         target == "annotate_device_placement" || target == "MoveToHost" ||
         target == "MoveToDevice";
}

absl::StatusOr<std::unique_ptr<Kernel>> CompilePassThrough(
    const HloInstruction& instruction) {
  const std::string& target = instruction.proto().custom_call_target();
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& operand = instruction.operand(0)->shape();
  if (operand != instruction.shape() &&
      (target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape")) {
    return CompileShardShapeChange(instruction);
  }
  if (operand != instruction.shape()) {
    return absl::UnimplementedError(absl::StrCat(
        "custom-call ", target, " changes the shape from ", operand.ToString(),
        " to ", instruction.shape().ToString(),
        ": that needs SPMD partitioning, which the interpreter does not do"));
  }
  return MakeKernel(
      [](KernelContext&,
         absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        return *operands[0].value;
      });
}

// The value of "key": "..." in a JSON backend config, or "".
std::string JsonString(absl::string_view json, absl::string_view key) {
  const std::string quoted = absl::StrCat("\"", key, "\"");
  size_t at = json.find(quoted);
  if (at == absl::string_view::npos) return "";
  at = json.find(':', at + quoted.size());
  if (at == absl::string_view::npos) return "";
  at = json.find('"', at);
  if (at == absl::string_view::npos) return "";
  const size_t end = json.find('"', at + 1);
  if (end == absl::string_view::npos) return "";
  return std::string(json.substr(at + 1, end - at - 1));
}

// Pallas kernels carry their name in the backend config when the frontend
// put it there, else in the op_name metadata (".../pallas_call").
absl::Status RejectMosaicKernel(const HloInstruction& instruction) {
  const std::string& config = instruction.proto().backend_config();
  std::string name = JsonString(config, "kernel_name");
  if (name.empty()) name = JsonString(config, "name");
  if (name.empty()) name = instruction.proto().metadata().op_name();
  if (name.empty()) name = instruction.name();
  return absl::UnimplementedError(absl::StrCat(
      "custom-call tpu_custom_call runs the Pallas/Mosaic kernel \"", name,
      "\", compiled for the TPU's own cores: a Pallas/Mosaic kernel cannot "
      "run on the emulator (run the program with the kernel's reference "
      "implementation, e.g. pallas_call(..., interpret=True))"));
}

// TopK's comparator decides the order: a compare with direction LT sorts
// ascending (smallest first); anything else is XLA's usual GT.
bool TopKLargest(const HloInstruction& instruction) {
  if (instruction.called_computations().empty()) return true;
  const HloInstruction* root = instruction.called_computations()[0]->root();
  return !(root->opcode() == "compare" &&
           root->proto().comparison_direction() == "LT");
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileTopKCall(
    const HloInstruction& instruction) {
  const Shape& shape = instruction.shape();
  if (!shape.IsTuple() || shape.tuple_size() != 2 ||
      !shape.tuple_shapes()[0].IsArray() ||
      shape.tuple_shapes()[0].rank() < 1) {
    return Malformed(
        absl::StrCat("custom-call TopK must return (values, indices), got ",
                     shape.ToString()));
  }
  const Shape& values = shape.tuple_shapes()[0];
  return CompileTopK(instruction, values.dimensions(values.rank() - 1),
                     TopKLargest(instruction));
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileCustomCall(
    const HloInstruction& instruction, KernelCompiler&) {
  const std::string& target = instruction.proto().custom_call_target();
  if (IsPassThrough(target)) return CompilePassThrough(instruction);
  if (target == "TopK") return CompileTopKCall(instruction);
  if (target == "Qr") return CompileQr(instruction);
  if (target == "ProductOfElementaryHouseholderReflectors") {
    return CompileHouseholderProduct(instruction);
  }
  if (target == "tpu_custom_call") return RejectMosaicKernel(instruction);
  return absl::UnimplementedError(absl::StrCat(
      "the interpreter does not support custom-call target \"", target, "\""));
}

}  // namespace

void RegisterCustomCallKernels(KernelRegistry& registry) {
  registry.Register("custom-call", &CompileCustomCall);
}

}  // namespace tpu::emulator::interpreter
