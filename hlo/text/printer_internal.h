// The pieces of the HLO text printer behind hlo_printer.h, one file per
// concern: print_shape.cc, print_literal.cc, print_attribute_values.cc
// (metadata, shardings, windows, ...), print_instruction.cc (an instruction
// and its attributes) and hlo_printer.cc (computations and the module).
//
// Everything prints what the parser (parser_internal.h) reads back to the
// same proto. Thread-safe: pure functions; an InstructionPrinter is
// immutable after construction.

#ifndef HLO_TEXT_PRINTER_INTERNAL_H_
#define HLO_TEXT_PRINTER_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_field.h"
#include "proto/hlo.pb.h"
#include "proto/xla_data.pb.h"

namespace tpu::hlo::text_internal {

// --- Text helpers (print_attribute_values.cc) -------------------------------

// "{1,2,3}"
template <typename Container>
std::string IntList(const Container& values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}
// A double-quoted string with C escapes.
std::string Quoted(absl::string_view s);
// An enum value name without `prefix`, in lower case ("ALG_X" -> "x").
std::string LowerEnumName(const std::string& name, absl::string_view prefix);

// --- Shapes and literals ----------------------------------------------------

// Appends "f32[2,3]{1,0}"; without the layout if !print_layout.
void AppendShape(const xla::ShapeProto& shape, bool print_layout,
                 std::string* out);
// "(f32[2]{0}, s32[])->f32[2]{0}"
std::string ProgramShapeText(const xla::ProgramShapeProto& shape);
// Appends the literal as it stands inside constant(...).
void AppendLiteral(const xla::LiteralProto& literal, std::string* out);

// --- Attribute values (print_attribute_values.cc) ---------------------------

std::string PrintMetadata(const xla::OpMetadata& m);
std::string PrintSharding(const xla::OpSharding& s);
std::string PrintFrontendAttributes(const xla::FrontendAttributes& attributes);
std::string PrintWindow(const xla::Window& window);
std::string PrintDimLabels(const xla::ConvolutionDimensionNumbers& d);
std::string PrintReplicaGroups(
    const google::protobuf::RepeatedPtrField<xla::ReplicaGroup>& groups);
// The backend config raw when it is one balanced {...} on one line (as
// newer XLA prints JSON), else quoted.
std::string PrintBackendConfig(const std::string& config);

// --- Instructions (print_instruction.cc) ------------------------------------

// Attributes of one instruction, in print order.
class AttributeList {
 public:
  template <typename... Parts>
  void Add(const Parts&... parts) {
    items_.push_back(absl::StrCat(parts...));
  }
  const std::vector<std::string>& items() const { return items_; }

 private:
  std::vector<std::string> items_;
};

// Prints instructions, looking operand and callee names up by id.
class InstructionPrinter {
 public:
  // Indexes `module` (may be null: then names are unknown until
  // IndexComputation). `module` must outlive the printer.
  explicit InstructionPrinter(const xla::HloModuleProto* module);

  // Indexes the instructions of `computation`, which must outlive the
  // printer.
  void IndexComputation(const xla::HloComputationProto& computation);

  // Appends "[ROOT ]%name = shape opcode(operands), attributes".
  void Instruction(const xla::HloInstructionProto& instruction, bool is_root,
                   std::string* out) const;

  const xla::HloInstructionProto* Find(int64_t id) const {
    auto it = instructions_.find(id);
    return it == instructions_.end() ? nullptr : it->second;
  }

 private:
  std::string ComputationName(int64_t id) const;
  void Operands(const xla::HloInstructionProto& in, std::string* out) const;
  void Attributes(const xla::HloInstructionProto& in,
                  AttributeList* attrs) const;
  void ComparisonAttributes(const xla::HloInstructionProto& in,
                            AttributeList* attrs) const;
  void CalledComputations(const xla::HloInstructionProto& in,
                          AttributeList* attrs) const;
  void ControlPredecessors(const xla::HloInstructionProto& in,
                           AttributeList* attrs) const;

  absl::flat_hash_map<int64_t, const xla::HloComputationProto*> computations_;
  absl::flat_hash_map<int64_t, const xla::HloInstructionProto*> instructions_;
};

}  // namespace tpu::hlo::text_internal

#endif  // HLO_TEXT_PRINTER_INTERNAL_H_
