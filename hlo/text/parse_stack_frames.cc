// The stack-frame tables current XLA prints between the HloModule line and
// the first computation, which metadata={stack_frame_id=N} refers to:
//
//   FileNames
//   1 "model.py"
//   FunctionNames
//   1 "main"
//   FileLocations
//   1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1
//      end_column=9}
//   StackFrames
//   1 {file_location_id=1 parent_frame_id=1}
//
// The leading numbers are positions (1-based) and not stored. XLA prints a
// frame's parent one higher than it stores it (parent_frame_id 0 in the
// proto prints as 1), so the parser stores the printed value minus one.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo::text_internal {
namespace {

bool AtDigit(HloLexer& lexer) {
  const char c = lexer.Peek();
  return c >= '0' && c <= '9';
}

// One integer key of a table record.
template <typename Record>
struct RecordField {
  absl::string_view key;
  void (*set)(Record*, int32_t);
  bool required;
};

// "N {key=int key=int ...}" into `record`: keys from `fields` in any order,
// commas optional; `expected_keys` and `missing` are the error texts for an
// unknown key and a missing required one.
template <typename Record, size_t kCount>
absl::Status ParseNumberedRecord(Parser& p,
                                 const RecordField<Record> (&fields)[kCount],
                                 absl::string_view expected_keys,
                                 absl::string_view missing, Record* record) {
  int64_t position;
  HLO_RETURN_IF_ERROR(p.ParseInt(&position));
  p.lexer().SkipSpace();
  const size_t start = p.lexer().pos();
  uint32_t seen = 0;  // Bit i: fields[i] was given.
  HLO_RETURN_IF_ERROR(
      p.ParseKeyValues("table attribute or '}'",
                       [&](absl::string_view key, size_t at) -> absl::Status {
                         for (size_t i = 0; i < kCount; ++i) {
                           if (fields[i].key != key) continue;
                           int64_t value;
                           HLO_RETURN_IF_ERROR(p.ParseInt(&value));
                           fields[i].set(record, static_cast<int32_t>(value));
                           seen |= 1u << i;
                           return absl::OkStatus();
                         }
                         return p.ExpectedAt(at, expected_keys);
                       }));
  for (size_t i = 0; i < kCount; ++i) {
    if (fields[i].required && (seen & (1u << i)) == 0) {
      return p.ErrorAt(start, missing);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Parser::ParseStackFrameIndex(xla::HloModuleProto* module) {
  if (!lexer_.TryConsumeKeyword("FileNames")) return absl::OkStatus();
  xla::StackFrameIndexProto* index = module->mutable_stack_frame_index();
  HLO_RETURN_IF_ERROR(ParseNumberedStrings(index->mutable_file_names()));
  if (!lexer_.TryConsumeKeyword("FunctionNames")) {
    return Expected("'FunctionNames'");
  }
  HLO_RETURN_IF_ERROR(ParseNumberedStrings(index->mutable_function_names()));
  if (!lexer_.TryConsumeKeyword("FileLocations")) {
    return Expected("'FileLocations'");
  }
  while (AtDigit(lexer_)) {
    HLO_RETURN_IF_ERROR(ParseFileLocation(index->add_file_locations()));
  }
  if (!lexer_.TryConsumeKeyword("StackFrames")) {
    return Expected("'StackFrames'");
  }
  while (AtDigit(lexer_)) {
    HLO_RETURN_IF_ERROR(ParseStackFrame(index->add_stack_frames()));
  }
  return absl::OkStatus();
}

// (int string)*
absl::Status Parser::ParseNumberedStrings(
    google::protobuf::RepeatedPtrField<std::string>* out) {
  while (AtDigit(lexer_)) {
    int64_t position;
    HLO_RETURN_IF_ERROR(ParseInt(&position));
    HLO_RETURN_IF_ERROR(ParseString(out->Add()));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseFileLocation(
    xla::StackFrameIndexProto::FileLocation* location) {
  using L = xla::StackFrameIndexProto::FileLocation;
  // The end_ keys are newer and optional.
  static const RecordField<L> kFields[] = {
      {"file_name_id", [](L* l, int32_t v) { l->set_file_name_id(v); }, true},
      {"function_name_id", [](L* l, int32_t v) { l->set_function_name_id(v); },
       true},
      {"line", [](L* l, int32_t v) { l->set_line(v); }, true},
      {"end_line", [](L* l, int32_t v) { l->set_end_line(v); }, false},
      {"column", [](L* l, int32_t v) { l->set_column(v); }, true},
      {"end_column", [](L* l, int32_t v) { l->set_end_column(v); }, false},
  };
  return ParseNumberedRecord(*this, kFields,
                             "file_name_id, function_name_id, line, "
                             "end_line, column or end_column",
                             "file location needs file_name_id, "
                             "function_name_id, line and column",
                             location);
}

absl::Status Parser::ParseStackFrame(
    xla::StackFrameIndexProto::StackFrame* frame) {
  using F = xla::StackFrameIndexProto::StackFrame;
  static const RecordField<F> kFields[] = {
      {"file_location_id", [](F* f, int32_t v) { f->set_file_location_id(v); },
       true},
      {"parent_frame_id",
       [](F* f, int32_t v) { f->set_parent_frame_id(v - 1); }, true},
  };
  return ParseNumberedRecord(
      *this, kFields, "file_location_id or parent_frame_id",
      "stack frame needs file_location_id and parent_frame_id", frame);
}

}  // namespace tpu::hlo::text_internal
