// Printer from xla::HloModuleProto to XLA's HLO text syntax.
//
// The output is what XLA prints (names with '%', operands with their shapes,
// `/*index=N*/` every fifth operand, attributes in XLA's spelling) and is
// accepted by ParseHloModule, which reproduces the module:
// ParseHloModule(PrintHloModule(m)) == m for every m that ParseHloModule
// returned (ids are printed implicitly through names and reassigned in the
// same order). For hand-built protos the round trip also fills what the
// parser always fills (default layouts, comparison types, ...).
//
// The async shorthand is printed in its long form (async-start ...,
// calls=%async_wrapped, and the wrapped computation), which parses to the
// same proto. Not representable in text and therefore not printed:
// instruction ids,
// fields the text syntax has no attribute for (e.g. channel_name,
// outer_dimension_partitions, original_value, statistics of the module).
// Constants are printed in full (never elided).
//
// Thread-safe: no shared state.

#ifndef HLO_TEXT_HLO_PRINTER_H_
#define HLO_TEXT_HLO_PRINTER_H_

#include <string>

#include "proto/hlo.pb.h"
#include "proto/xla_data.pb.h"

namespace tpu::hlo {

// The whole module, one instruction per line, ending with a newline.
std::string PrintHloModule(const xla::HloModuleProto& module);

// One instruction ("%add.1 = f32[2]{0} add(f32[2]{0} %x, f32[2]{0} %y)"),
// without "ROOT" and without a newline; for error messages. Operand names are
// looked up in `computation`, called computations in `module` (may be null:
// then called computations print as "%computation.<id>").
std::string PrintHloInstruction(const xla::HloInstructionProto& instruction,
                                const xla::HloComputationProto& computation,
                                const xla::HloModuleProto* module = nullptr);

// "f32[2,3]{1,0}", "(s32[], token[])", "bf16[<=8]{0:T(128)S(1)}".
std::string PrintShape(const xla::ShapeProto& shape);

// The literal's values as they appear inside constant(...).
std::string PrintLiteral(const xla::LiteralProto& literal);

}  // namespace tpu::hlo

#endif  // HLO_TEXT_HLO_PRINTER_H_
