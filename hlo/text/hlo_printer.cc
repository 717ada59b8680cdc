// The module: the HloModule line with its attributes, then each computation
// with its signature and instructions (in schedule order when scheduled).

#include "hlo/text/hlo_printer.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hlo/text/printer_internal.h"

namespace tpu::hlo {
namespace {

using text_internal::AppendLiteral;
using text_internal::AppendShape;
using text_internal::InstructionPrinter;
using text_internal::IntList;
using text_internal::PrintFrontendAttributes;
using text_internal::PrintSharding;
using text_internal::Quoted;

bool IsScheduled(const xla::HloModuleProto& m) {
  return m.has_schedule() && !m.schedule().sequences().empty();
}

// ", input_output_alias={ {0}: (0, {}, may-alias), ... }"
void AppendAliases(const xla::HloModuleProto& m, std::string* out) {
  if (m.has_input_output_alias() && m.input_output_alias().entries_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& e : m.input_output_alias().entries()) {
      parts.push_back(absl::StrCat(
          IntList(e.output_shape_index()), ": (", e.parameter_number(), ", ",
          IntList(e.parameter_shape_index()), ", ",
          e.kind() == xla::MUST_ALIAS ? "must-alias" : "may-alias", ")"));
    }
    absl::StrAppend(out, ", input_output_alias={ ", absl::StrJoin(parts, ", "),
                    " }");
  }
  if (m.has_buffer_donor() && m.buffer_donor().entries_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& e : m.buffer_donor().entries()) {
      parts.push_back(absl::StrCat("(", e.parameter_number(), ", ",
                                   IntList(e.parameter_shape_index()), ")"));
    }
    absl::StrAppend(out, ", buffer_donor={ ", absl::StrJoin(parts, ", "), " }");
  }
}

std::string ModuleHeader(const xla::HloModuleProto& m) {
  std::string out = absl::StrCat("HloModule ", m.name());
  if (IsScheduled(m)) out += ", is_scheduled=true";
  if (m.has_host_program_shape()) {
    absl::StrAppend(&out, ", entry_computation_layout={",
                    text_internal::ProgramShapeText(m.host_program_shape()),
                    "}");
  }
  AppendAliases(m, &out);
  if (m.has_frontend_attributes() && !m.frontend_attributes().map().empty()) {
    absl::StrAppend(&out, ", frontend_attributes=",
                    PrintFrontendAttributes(m.frontend_attributes()));
  }
  if (m.has_spmd_output_sharding()) {
    absl::StrAppend(&out, ", spmd_output_sharding=",
                    PrintSharding(m.spmd_output_sharding()));
  }
  if (m.spmd_parameters_shardings_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& s : m.spmd_parameters_shardings()) {
      parts.push_back(PrintSharding(s));
    }
    absl::StrAppend(&out, ", spmd_parameters_shardings={",
                    absl::StrJoin(parts, ","), "}");
  }
  out += "\n";
  return out;
}

// The stack-frame tables, as XLA prints them after the module attributes;
// nothing when the module has none. Parents print one higher than stored.
std::string StackFrameTables(const xla::StackFrameIndexProto& index) {
  if (index.file_names_size() + index.function_names_size() +
          index.file_locations_size() + index.stack_frames_size() ==
      0) {
    return "";
  }
  std::string out = "\nFileNames\n";
  for (int i = 0; i < index.file_names_size(); ++i) {
    absl::StrAppend(&out, i + 1, " ", Quoted(index.file_names(i)), "\n");
  }
  out += "\nFunctionNames\n";
  for (int i = 0; i < index.function_names_size(); ++i) {
    absl::StrAppend(&out, i + 1, " ", Quoted(index.function_names(i)), "\n");
  }
  out += "\nFileLocations\n";
  for (int i = 0; i < index.file_locations_size(); ++i) {
    const auto& l = index.file_locations(i);
    absl::StrAppend(&out, i + 1, " {file_name_id=", l.file_name_id(),
                    " function_name_id=", l.function_name_id(),
                    " line=", l.line(), " end_line=", l.end_line(),
                    " column=", l.column(), " end_column=", l.end_column(),
                    "}\n");
  }
  out += "\nStackFrames\n";
  for (int i = 0; i < index.stack_frames_size(); ++i) {
    const auto& f = index.stack_frames(i);
    absl::StrAppend(&out, i + 1, " {file_location_id=", f.file_location_id(),
                    " parent_frame_id=", f.parent_frame_id() + 1, "}\n");
  }
  return out;
}

// "%name (p: f32[2], ...) -> f32[2]"; informational: the parser reads the
// parameters from the body.
void AppendSignature(const xla::HloComputationProto& c, std::string* out) {
  absl::StrAppend(out, "%", c.name(), " ");
  const auto& ps = c.program_shape();
  *out += "(";
  for (int i = 0; i < ps.parameters_size(); ++i) {
    if (i > 0) *out += ", ";
    absl::StrAppend(out,
                    i < ps.parameter_names_size() ? ps.parameter_names(i)
                                                  : absl::StrCat("p", i),
                    ": ");
    AppendShape(ps.parameters(i), false, out);
  }
  *out += ") -> ";
  AppendShape(ps.result(), false, out);
}

// The schedule's order when the module is scheduled and the sequence covers
// the computation, else the stored order.
std::vector<const xla::HloInstructionProto*> PrintOrder(
    const xla::HloModuleProto& m, const xla::HloComputationProto& c,
    const InstructionPrinter& printer) {
  std::vector<const xla::HloInstructionProto*> ordered;
  if (IsScheduled(m)) {
    auto it = m.schedule().sequences().find(c.id());
    if (it != m.schedule().sequences().end() &&
        it->second.instruction_ids_size() == c.instructions_size()) {
      for (int64_t id : it->second.instruction_ids()) {
        const auto* i = printer.Find(id);
        if (i == nullptr) {
          ordered.clear();
          break;
        }
        ordered.push_back(i);
      }
    }
  }
  if (ordered.empty()) {
    for (const auto& i : c.instructions()) ordered.push_back(&i);
  }
  return ordered;
}

void AppendComputation(const xla::HloModuleProto& m,
                       const xla::HloComputationProto& c,
                       const InstructionPrinter& printer, std::string* out) {
  *out += "\n";
  if (c.id() == m.entry_computation_id()) *out += "ENTRY ";
  AppendSignature(c, out);
  *out += " {\n";
  for (const xla::HloInstructionProto* i : PrintOrder(m, c, printer)) {
    *out += "  ";
    printer.Instruction(*i, i->id() == c.root_id(), out);
    *out += "\n";
  }
  *out += "}";
  if (!c.execution_thread().empty() && c.execution_thread() != "main") {
    absl::StrAppend(out, ", execution_thread=", Quoted(c.execution_thread()));
  }
  *out += "\n";
}

}  // namespace

std::string PrintHloModule(const xla::HloModuleProto& module) {
  const InstructionPrinter printer(&module);
  std::string out = ModuleHeader(module);
  out += StackFrameTables(module.stack_frame_index());
  for (const xla::HloComputationProto& c : module.computations()) {
    AppendComputation(module, c, printer, &out);
  }
  return out;
}

std::string PrintHloInstruction(const xla::HloInstructionProto& instruction,
                                const xla::HloComputationProto& computation,
                                const xla::HloModuleProto* module) {
  InstructionPrinter printer(module);
  printer.IndexComputation(computation);
  std::string out;
  printer.Instruction(instruction, false, &out);
  return out;
}

std::string PrintShape(const xla::ShapeProto& shape) {
  std::string out;
  AppendShape(shape, true, &out);
  return out;
}

std::string PrintLiteral(const xla::LiteralProto& literal) {
  std::string out;
  AppendLiteral(literal, &out);
  return out;
}

}  // namespace tpu::hlo
