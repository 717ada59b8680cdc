// The state and the grammar pieces of the HLO text parser behind
// ParseHloModule (hlo_parser.h). The parser reads the text once, keeping
// every computation and instruction as a pending proto plus the names it
// refers to; Resolve (name_resolution.cc) then turns names into ids and moves
// the protos into the module.
//
// The methods live in one file per concern: parse_values.cc (small values),
// parse_shape.cc, parse_module.cc, parse_instruction.cc, parse_attributes.cc
// (the attribute table), parse_attribute_values.cc, parse_sharding.cc,
// parse_literal.cc and name_resolution.cc.
//
// Every method that fails returns INVALID_ARGUMENT with "line L, column C:"
// and leaves the parser unusable; callers return the error unchanged.
//
// Thread-compatible: one Parser per parse.

#ifndef HLO_TEXT_PARSER_INTERNAL_H_
#define HLO_TEXT_PARSER_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/repeated_field.h"
#include "hlo/text/hlo_lexer.h"
#include "proto/hlo.pb.h"
#include "proto/xla_data.pb.h"

#define HLO_RETURN_IF_ERROR(expr)      \
  do {                                 \
    absl::Status status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (0)

namespace tpu::hlo::text_internal {

// A reference by name to an instruction or computation, resolved after the
// whole text is read (operands may be defined after their users).
struct NameRef {
  absl::string_view name;  // Into the text or Parser::owned_names_.
  size_t pos = 0;          // For error messages.
  // A computation the parser made itself (an async wrapper) is referred to
  // by its index in computations_, not by name.
  int index = -1;
};

struct PendingInstruction {
  PendingInstruction() : owned(new xla::HloInstructionProto()), proto(*owned) {}
  PendingInstruction(const PendingInstruction&) = delete;
  PendingInstruction& operator=(const PendingInstruction&) = delete;
  // The proto stays where it is; the reference follows it.
  PendingInstruction(PendingInstruction&&) = default;

  // Allocated once and handed to the module without copying or swapping.
  std::unique_ptr<xla::HloInstructionProto> owned;
  xla::HloInstructionProto& proto;
  size_t pos = 0;  // Start of the instruction name.
  std::vector<NameRef> operands;
  std::vector<NameRef> control_predecessors;
  std::vector<NameRef> called;  // In XLA's called_computations order.
  // Set for compare without type=: the type follows from the operand's
  // element type, known only after resolution.
  bool default_comparison_type = false;
  // The text gives no result shape; it is inferred after name resolution
  // (shape_inference.h), as XLA's parser does.
  bool infer_shape = false;
  // Written in the async shorthand ("negate-start"): the wrapped opcode
  // ("negate") and the async opcode it stands for ("async-start").
  std::string async_wrapped_opcode;
  std::string async_opcode;
  // Resolved indices (into the computation's instructions / computations_).
  std::vector<int> operand_index;
  std::vector<int> control_index;
  std::vector<int> called_index;
};

struct PendingComputation {
  absl::string_view name;
  size_t pos = 0;
  bool is_entry = false;
  std::string execution_thread = "main";
  // A deque: instructions keep their addresses while more are added.
  std::deque<PendingInstruction> instructions;
  absl::flat_hash_map<absl::string_view, int> by_name;
  int root = -1;
  // Made by the parser to wrap an async shorthand (XLA's "async_wrapped");
  // its parameter shapes are the async-start's operand shapes, filled in
  // during resolution.
  bool synthesized = false;
};

class Parser {
 public:
  explicit Parser(absl::string_view text) : lexer_(text) {}

  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  // The whole text as one module (parse_module.cc).
  absl::Status ParseModule(xla::HloModuleProto* module);
  // The whole text as one shape (parse_shape.cc).
  absl::Status ParseSingleShape(xla::ShapeProto* shape);

  // --- Grammar pieces shared by the attribute table -----------------------
  // They consume what they parse; on error the cursor is unspecified.

  HloLexer& lexer() { return lexer_; }

  // Errors (the messages are API: tests and users match them).
  absl::Status ErrorAt(size_t pos, absl::string_view message) const;
  // "expected X, got Y" at the next token.
  absl::Status Expected(absl::string_view what);
  absl::Status ExpectedAt(size_t pos, absl::string_view what) const;
  absl::Status Expect(char c);
  absl::Status ExpectStr(absl::string_view s);

  // Small values (parse_values.cc).
  absl::Status ParseInt(int64_t* value);
  absl::Status ParseBool(bool* value);
  absl::Status ParseString(std::string* value);
  absl::Status ParseDouble(double* value);
  // Ints separated by `sep` with no spaces ("3x3", "1_2").
  absl::Status ParseSeparatedInts(char sep, std::vector<int64_t>* out);
  // '{' [int (',' int)*] '}'
  template <typename Field>
  absl::Status ParseIntList(Field* out);
  // '{' [item (',' item)*] '}' where `item` parses one element.
  template <typename ParseItem>
  absl::Status ParseBracedList(ParseItem item);
  // item (sep item)* with `sep` right after each item ("3x3", "0_1x2_3").
  template <typename ParseItem>
  absl::Status ParseSeparated(char sep, ParseItem item);
  // '{' (key '=' value [','])* '}' where value(key, key_pos) parses the
  // value. With `what` non-empty, an empty key is "expected <what>".
  template <typename ParseValue>
  absl::Status ParseKeyValues(absl::string_view what, ParseValue value);
  // A word, uppercased and optionally prefixed, looked up in `type`.
  template <typename Enum>
  absl::Status ParseEnum(const google::protobuf::EnumDescriptor* type,
                         absl::string_view prefix, Enum* value);
  // An unknown attribute value: balanced groups and words, up to ',' or the
  // end of the line at depth 0.
  absl::Status SkipValue();
  absl::Status ParseNameRef(NameRef* ref);
  absl::Status ParseNameList(std::vector<NameRef>* names);

  // Shapes (parse_shape.cc).
  absl::Status ParseShape(xla::ShapeProto* shape);
  absl::Status ParseShapeIndex(
      google::protobuf::RepeatedField<int64_t>* index) {
    return ParseIntList(index);
  }

  // Attribute values (parse_attribute_values.cc, parse_sharding.cc).
  absl::Status ParseWindow(xla::Window* window);
  absl::Status ParseDimLabels(xla::ConvolutionDimensionNumbers* dnums);
  absl::Status ParsePadding(xla::PaddingConfig* padding);
  absl::Status ParseSlices(xla::HloInstructionProto* proto);
  absl::Status ParseReplicaGroups(
      google::protobuf::RepeatedPtrField<xla::ReplicaGroup>* groups);
  absl::Status ParseSharding(xla::OpSharding* sharding);
  absl::Status ParseMetadata(xla::OpMetadata* metadata);
  absl::Status ParseFrontendAttributes(xla::FrontendAttributes* attributes);
  absl::Status ParseStatistics(xla::StatisticsViz* statistics);
  absl::Status ParseSparsity(xla::HloInstructionProto* proto);
  absl::Status ParseDomain(xla::HloInstructionProto* proto);
  absl::Status ParseResultAccuracy(xla::ResultAccuracy* accuracy);
  absl::Status ParseBackendConfig(std::string* config);

  // Literals (parse_literal.cc).
  absl::Status ParseLiteral(const xla::ShapeProto& shape,
                            xla::LiteralProto* literal);
  // One real number; `single` is the value read as a float directly when
  // `type` is f32 or narrower (no double rounding).
  absl::Status ParseFloatValue(xla::PrimitiveType type, double* value,
                               float* single);

 private:
  // Shapes.
  absl::Status ParseLayout(int rank, xla::LayoutProto* layout);
  absl::Status ParseLayoutItem(xla::LayoutProto* layout);
  absl::Status ParseDimLevelTypes(xla::LayoutProto* layout);
  absl::Status ParseTiles(xla::LayoutProto* layout);
  absl::Status ParseSplitConfig(xla::LayoutProto* layout);
  absl::Status ParseProgramShape(xla::ProgramShapeProto* program_shape);

  // Module level (parse_module.cc).
  absl::Status ParseModuleAttribute(xla::HloModuleProto* module);
  absl::Status ParseEntryComputationLayout();
  absl::Status ParseInputOutputAlias(xla::HloModuleProto* module);
  absl::Status ParseBufferDonor(xla::HloModuleProto* module);
  // Stack-frame tables after the module attributes (parse_stack_frames.cc).
  absl::Status ParseStackFrameIndex(xla::HloModuleProto* module);
  absl::Status ParseNumberedStrings(
      google::protobuf::RepeatedPtrField<std::string>* out);
  absl::Status ParseFileLocation(
      xla::StackFrameIndexProto::FileLocation* location);
  absl::Status ParseStackFrame(xla::StackFrameIndexProto::StackFrame* frame);
  // "param, {index}" of an alias or donor entry.
  absl::Status ParseParameterAndIndex(
      int64_t* param, google::protobuf::RepeatedField<int64_t>* index);

  // Computations and instructions (parse_instruction.cc).
  absl::Status ParseComputation();
  absl::Status ParseInstruction(PendingComputation* computation);
  // shape opcode(operands)[, attributes]; the shape may be left out where
  // XLA infers it. Nested instructions take no attributes.
  absl::Status ParseInstructionRhs(PendingComputation* computation,
                                   PendingInstruction* instruction,
                                   bool allow_attributes);
  absl::Status ParseOpcode(bool has_shape, PendingInstruction* instruction);
  absl::Status ParseOperands(PendingComputation* computation,
                             PendingInstruction* instruction);
  absl::Status ParseOperand(PendingComputation* computation,
                            PendingInstruction* instruction);
  // True if a shape starts at the cursor (after space): '(' or a type name
  // right before '['.
  bool StartsShape();
  // Only the second form: a type name right before '['.
  bool StartsArrayShape();
  // A type name, with or without '[' after it.
  bool StartsTypeName();
  // An instruction written as an operand: "add(f32[] constant(1), x)".
  absl::Status ParseNestedInstruction(PendingComputation* computation,
                                      NameRef* ref);
  // Adds a parsed instruction under its name; returns its index.
  absl::StatusOr<int> AddInstruction(PendingComputation* computation,
                                     PendingInstruction instruction);
  // A name not in the text ("constant.anon", "async_param.1"), unique in
  // `computation`; stored in owned_names_.
  absl::string_view UniqueName(const PendingComputation& computation,
                               absl::string_view base);

  // Async shorthand (async_shorthand.cc): "x = shape negate-start(...)" is
  // an async-start calling a computation that wraps the negate, as XLA
  // represents it; -update and -done take the start's computation.
  absl::Status FinishAsyncShorthand(PendingComputation* computation,
                                    PendingInstruction* instruction,
                                    size_t opcode_pos);
  absl::Status WrapAsyncStart(PendingInstruction* start, size_t opcode_pos);
  absl::Status LinkAsyncUpdateOrDone(const PendingComputation& computation,
                                     PendingInstruction* instruction,
                                     size_t opcode_pos);
  // Reads "key=value" after an instruction (parse_attributes.cc).
  absl::Status ParseAttribute(PendingInstruction* instruction);

  // Attribute value pieces.
  absl::Status ParseTolerance(xla::ResultAccuracy::Tolerance* tolerance);

  // Sharding pieces (parse_sharding.cc).
  absl::Status ParseIotaList(std::vector<int64_t>* reshape,
                             std::vector<int64_t>* perm);
  absl::Status ParseTileAssignment(xla::OpSharding* sharding);
  absl::Status ParseLastTileDims(xla::OpSharding* sharding);
  absl::Status ParseIotaReshape(std::vector<int64_t>* reshape,
                                std::vector<int64_t>* perm);
  absl::Status ParseMetadataList(
      google::protobuf::RepeatedPtrField<xla::OpMetadata>* metadata);
  bool StartsNamedSharding();

  // Named shardings (parse_named_sharding.cc).
  absl::Status ParseNamedSharding(xla::NamedShardingProto* sharding);
  absl::Status ParseNamedShardingMetadata(xla::NamedShardingProto* sharding);
  absl::Status ParseMesh(xla::MeshProto* mesh, bool* maximal);
  absl::Status ParseMeshDeviceIds(xla::MeshProto* mesh);
  absl::Status ParseAxisName(std::string* name);
  absl::Status ParseAxisRef(const xla::MeshProto& mesh,
                            xla::AxisRefProto* axis);
  absl::Status ParseAxisRefList(
      const xla::MeshProto& mesh,
      google::protobuf::RepeatedPtrField<xla::AxisRefProto>* axes);
  absl::Status ParseDimensionShardings(const xla::MeshProto& mesh,
                                       xla::NamedShardingProto* sharding);

  // Literals.
  absl::Status ParseArrayElements(const xla::ShapeProto& shape, int dim,
                                  xla::LiteralProto* literal);
  absl::Status ParseElement(xla::PrimitiveType type,
                            xla::LiteralProto* literal);
  absl::Status ParseIntegerElement(xla::PrimitiveType type,
                                   xla::LiteralProto* literal);
  // Skips an old-style shape repeated inside a literal ("f32[2] {1, 2}").
  absl::Status SkipRepeatedShape();

  // Name resolution (name_resolution.cc): everything that needs the whole
  // text, in the order XLA stores it.
  struct Resolution;
  absl::Status Resolve(xla::HloModuleProto* module);
  absl::Status IndexComputations(Resolution* r);
  absl::Status ResolveNames(Resolution* r);
  absl::Status ResolveInstructionNames(
      const absl::flat_hash_map<absl::string_view, int>& computation_index,
      PendingComputation* computation, Resolution* r);
  absl::Status OrderComputations(Resolution* r);
  absl::Status OrderInstructions(int c, Resolution* r);
  absl::Status InferShapes(int c, const Resolution& r);
  void SetDefaultComparisonTypes();
  absl::Status EmitComputation(int c, const Resolution& r,
                               xla::HloComputationProto* out);
  absl::Status SetProgramShape(const PendingComputation& computation,
                               xla::ProgramShapeProto* program_shape);
  absl::Status SetHostProgramShape(const Resolution& r,
                                   xla::HloModuleProto* module);
  void SetSchedule(const Resolution& r, xla::HloModuleProto* module);

  // Recursive descent takes a stack frame per level of tuple shapes,
  // literals, array braces and operand instructions; beyond kMaxNesting
  // levels the text is refused (INVALID_ARGUMENT) before the stack runs out.
  static constexpr int kMaxNesting = 256;
  class NestingScope {
   public:
    explicit NestingScope(Parser* parser) : parser_(parser) {
      ++parser_->nesting_;
    }
    ~NestingScope() { --parser_->nesting_; }
    NestingScope(const NestingScope&) = delete;
    NestingScope& operator=(const NestingScope&) = delete;
    absl::Status status() const {
      if (parser_->nesting_ <= kMaxNesting) return absl::OkStatus();
      return parser_->ErrorAt(
          parser_->lexer_.pos(),
          absl::StrCat("nesting deeper than ", kMaxNesting,
                       " levels (tuple shapes, literals, braces or operand "
                       "instructions)"));
    }

   private:
    Parser* parser_;
  };
  int nesting_ = 0;

  HloLexer lexer_;
  std::deque<PendingComputation> computations_;
  // Names the parser makes up; a deque so views into them stay valid.
  std::deque<std::string> owned_names_;
  bool is_scheduled_ = false;
  bool has_entry_layout_ = false;
  size_t entry_layout_pos_ = 0;
  xla::ProgramShapeProto entry_layout_;
  xla::ShapeProto scratch_shape_;  // Reused for operand shapes.
};

// Device ids of an iota list: iota(prod(reshape)) reshaped to `reshape`,
// then transposed by `perm` (parse_sharding.cc).
std::vector<int64_t> ExpandIota(const std::vector<int64_t>& reshape,
                                const std::vector<int64_t>& perm);

// --- Templates --------------------------------------------------------------

template <typename ParseItem>
absl::Status Parser::ParseBracedList(ParseItem item) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  if (lexer_.TryConsume('}')) return absl::OkStatus();
  while (true) {
    HLO_RETURN_IF_ERROR(item());
    if (lexer_.TryConsume('}')) return absl::OkStatus();
    HLO_RETURN_IF_ERROR(Expect(','));
  }
}

template <typename ParseItem>
absl::Status Parser::ParseSeparated(char sep, ParseItem item) {
  while (true) {
    HLO_RETURN_IF_ERROR(item());
    if (!lexer_.TryConsumeRaw(sep)) return absl::OkStatus();
  }
}

template <typename ParseValue>
absl::Status Parser::ParseKeyValues(absl::string_view what, ParseValue value) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  while (!lexer_.TryConsume('}')) {
    lexer_.SkipSpace();
    const size_t key_pos = lexer_.pos();
    absl::string_view key = lexer_.ConsumeWord();
    if (key.empty() && !what.empty()) return Expected(what);
    HLO_RETURN_IF_ERROR(Expect('='));
    HLO_RETURN_IF_ERROR(value(key, key_pos));
    lexer_.TryConsume(',');
  }
  return absl::OkStatus();
}

template <typename Field>
absl::Status Parser::ParseIntList(Field* out) {
  return ParseBracedList([&]() -> absl::Status {
    int64_t v;
    HLO_RETURN_IF_ERROR(ParseInt(&v));
    out->Add(v);
    return absl::OkStatus();
  });
}

template <typename Enum>
absl::Status Parser::ParseEnum(const google::protobuf::EnumDescriptor* type,
                               absl::string_view prefix, Enum* value) {
  lexer_.SkipSpace();
  const size_t pos = lexer_.pos();
  absl::string_view word = lexer_.ConsumeWord();
  if (word.empty()) return Expected(absl::StrCat(type->name(), " value"));
  std::string upper = absl::AsciiStrToUpper(word);
  const google::protobuf::EnumValueDescriptor* v = type->FindValueByName(upper);
  if (v == nullptr && !prefix.empty()) {
    v = type->FindValueByName(absl::StrCat(prefix, upper));
  }
  if (v == nullptr) {
    return ErrorAt(pos, absl::StrCat("expected ", type->name(), " value, got '",
                                     word, "'"));
  }
  *value = static_cast<Enum>(v->number());
  return absl::OkStatus();
}

}  // namespace tpu::hlo::text_internal

#endif  // HLO_TEXT_PARSER_INTERNAL_H_
