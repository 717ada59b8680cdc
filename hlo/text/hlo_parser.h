// Parser from XLA's HLO text syntax to xla::HloModuleProto.
//
// Accepts what XLA prints (HloModule::ToString and friends, old and new):
// the module header with its attributes ("HloModule name:" too), the
// stack-frame tables (FileNames ... StackFrames, kept in stack_frame_index),
// computations in any order with ENTRY anywhere (or, without ENTRY, the
// last computation is the entry), names with or without '%', operands with
// or without inline shapes, and the instruction attributes XLA prints,
// shardings in the older ({devices=[...]}) and the named ({mesh[...], ...})
// forms. Like XLA's parser it also accepts:
//   - instructions without a result shape for the opcodes XLA infers the
//     shape of ("y = add(x, x)"), inferred with XLA's rules;
//   - instructions written inline as operands ("add(f32[] constant(1), x)"),
//     added before their user and named "<opcode>.anon" (".anon.1", ...);
//   - the async shorthand ("s = ((f32[]), f32[], u32[]) negate-start(x)",
//     negate-update, negate-done), stored as XLA stores it: async-start,
//     -update and -done calling a computation "async_wrapped" whose
//     parameters "async_param" take the operands and whose root "async_op"
//     is the wrapped op with its attributes.
// The proto is filled as XLA serializes a module (HloModule::ToProto):
//   - opcode strings as XLA names them ("add", "get-tuple-element", ...);
//   - ids: one counter for the module, unique across computations and
//     instructions; computations are stored callees first and instructions
//     operands first; operand_ids, control_predecessor_ids and
//     called_computation_ids refer to these ids;
//   - every array shape has a layout (the default major-to-minor layout when
//     the text has none, format DENSE) and is_dynamic_dimension per
//     dimension;
//   - constants carry a LiteralProto in the field for the element type, in
//     the layout's physical order; 16-bit types little-endian in bytes fields,
//     8-bit and smaller types one element per byte;
//   - each computation's program_shape and root_id, the module's
//     entry_computation_name/id and host_program_shape (from
//     entry_computation_layout when given);
//   - with is_scheduled=true, a schedule holding the text order of every
//     non-fusion computation.
// Iota replica groups (`[2,4]<=[4,2]T(1,0)`) are expanded into explicit
// replica_groups.
//
// Elided constants `constant({...})` are filled deterministically so that
// modules dumped without weights still run: element i (in row-major order)
// gets k(i) = (i * 7 + 3) mod 17 - 8, an integer in [-8, 8]; floating-point
// and complex types store k(i) / 16 (real part; imaginary part 0), signed
// integers k(i), unsigned integers k(i) + 8, pred (i mod 2 == 1). Values are
// then converted to the element type (integers narrower than 8 bits keep the
// low bits, as XLA's convert does: s4 maps 8 to -8, u2 maps 10 to 2).
//
// Module attributes that are not part of HloModuleProto (replica_count,
// num_partitions, alias_passthrough_params, allow_spmd_...) are accepted and
// dropped; unknown module and instruction attributes are skipped (their value
// must be balanced and end at ',' or the end of the line).
//
// Thread-safe: no shared state.

#ifndef HLO_TEXT_HLO_PARSER_H_
#define HLO_TEXT_HLO_PARSER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/hlo.pb.h"
#include "proto/xla_data.pb.h"

namespace tpu::hlo {

// Parses a whole module. Errors are INVALID_ARGUMENT with the message
// "line L, column C: expected X, got Y" for syntax errors and
// "line L, column C: <problem>" for semantic ones (unknown operand or
// computation names, duplicate names, bad literals, cycles, ...).
absl::StatusOr<xla::HloModuleProto> ParseHloModule(absl::string_view text);

// Parses a single shape such as "f32[2,3]{1,0}" or "(s32[], token[])".
// Array shapes without a layout get the default layout.
absl::StatusOr<xla::ShapeProto> ParseShape(absl::string_view text);

}  // namespace tpu::hlo

#endif  // HLO_TEXT_HLO_PARSER_H_
