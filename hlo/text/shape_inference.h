// Result shapes of instructions written without one ("ROOT y = add(x, x)"),
// for the opcodes XLA's parser infers (CanInferShape in opcodes.h), with the
// rules of XLA's ShapeInference.
//
// Layouts: a result that is an operand's shape with another element type
// (elementwise ops, select, copy, ...) keeps that operand's layout, like
// XLA; a newly built array shape (dot, convolution, reduce, ...) gets the
// default layout, as the parser gives any shape written without one.
//
// Thread-safe: pure functions.

#ifndef HLO_TEXT_SHAPE_INFERENCE_H_
#define HLO_TEXT_SHAPE_INFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "proto/hlo.pb.h"
#include "proto/xla_data.pb.h"

namespace tpu::hlo::text_internal {

// The result shape of `instruction` (its opcode and attributes are read)
// given the shapes of its operands and the result shapes of the
// computations it calls, in called_computations order.
// Errors: INVALID_ARGUMENT when the operands do not fit the op (the message
// says what is wrong), UNIMPLEMENTED for an inferable op whose rule is not
// written here (ragged-dot, scan, scaled-dot).
absl::StatusOr<xla::ShapeProto> InferShape(
    const xla::HloInstructionProto& instruction,
    const std::vector<const xla::ShapeProto*>& operands,
    const std::vector<const xla::ShapeProto*>& called_results);

}  // namespace tpu::hlo::text_internal

#endif  // HLO_TEXT_SHAPE_INFERENCE_H_
