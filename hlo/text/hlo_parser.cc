#include "hlo/text/hlo_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "hlo/text/hlo_lexer.h"
#include "hlo/text/hlo_text_util.h"

namespace tpu::hlo {
namespace {

using text_internal::HloLexer;

#define HLO_RETURN_IF_ERROR(expr)      \
  do {                                 \
    absl::Status status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (0)

// Every opcode XLA has printed (current and historical names).
constexpr absl::string_view kOpcodes[] = {
    "abs",
    "add",
    "add-dependency",
    "after-all",
    "all-gather",
    "all-gather-done",
    "all-gather-start",
    "all-reduce",
    "all-reduce-done",
    "all-reduce-start",
    "all-to-all",
    "and",
    "async-done",
    "async-start",
    "async-update",
    "atan2",
    "batch-norm-grad",
    "batch-norm-inference",
    "batch-norm-training",
    "bitcast",
    "bitcast-convert",
    "broadcast",
    "call",
    "cbrt",
    "ceil",
    "cholesky",
    "clamp",
    "collective-broadcast",
    "collective-permute",
    "collective-permute-done",
    "collective-permute-start",
    "compare",
    "complex",
    "concatenate",
    "conditional",
    "constant",
    "convert",
    "convolution",
    "copy",
    "copy-done",
    "copy-start",
    "cosine",
    "count-leading-zeros",
    "cross-replica-sum",
    "custom-call",
    "divide",
    "domain",
    "dot",
    "dynamic-reshape",
    "dynamic-slice",
    "dynamic-update-slice",
    "erf",
    "exponential",
    "exponential-minus-one",
    "fft",
    "floor",
    "fusion",
    "gather",
    "get-dimension-size",
    "get-tuple-element",
    "imag",
    "infeed",
    "iota",
    "is-finite",
    "log",
    "log-plus-one",
    "logistic",
    "map",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "opt-barrier",
    "or",
    "outfeed",
    "pad",
    "parameter",
    "partition-id",
    "popcnt",
    "power",
    "ragged-all-to-all",
    "ragged-dot",
    "real",
    "recv",
    "recv-done",
    "reduce",
    "reduce-precision",
    "reduce-scatter",
    "reduce-window",
    "remainder",
    "replica-id",
    "reshape",
    "reverse",
    "rng",
    "rng-bit-generator",
    "rng-get-and-update-state",
    "round-nearest-afz",
    "round-nearest-even",
    "rsqrt",
    "scatter",
    "select",
    "select-and-scatter",
    "send",
    "send-done",
    "set-dimension-size",
    "shift-left",
    "shift-right-arithmetic",
    "shift-right-logical",
    "sign",
    "sine",
    "slice",
    "sort",
    "sqrt",
    "stochastic-convert",
    "subtract",
    "tan",
    "tanh",
    "topk",
    "trace",
    "transpose",
    "triangular-solve",
    "tuple",
    "tuple-select",
    "while",
    "xor",
};

bool IsKnownOpcode(absl::string_view opcode) {
  static const auto* const kSet = new absl::flat_hash_set<absl::string_view>(
      std::begin(kOpcodes), std::end(kOpcodes));
  return kSet->contains(opcode);
}

// Instruction attributes the parser understands.
enum class Attr {
  kUnknown,
  kAlgorithm,
  kApiVersion,
  kAsyncExecutionThread,
  kBackendConfig,
  kBatchGroupCount,
  kBody,
  kBranchComputations,
  kCalledComputations,
  kCalls,
  kChannelId,
  kCollapsedSliceDims,
  kCondition,
  kConstrainLayout,
  kControlPredecessors,
  kCrossProgramPrefetchIndex,
  kCustomCallHasSideEffect,
  kCustomCallTarget,
  kDelta,
  kDimLabels,
  kDimensions,
  kDirection,
  kDistribution,
  kDomain,
  kDynamicSliceSizes,
  kEpsilon,
  kExponentBits,
  kFalseComputation,
  kFeatureGroupCount,
  kFeatureIndex,
  kFftLength,
  kFftType,
  kFrontendAttributes,
  kIndex,
  kIndexVectorDim,
  kIndicesAreSorted,
  kInfeedConfig,
  kInputBatchingDims,
  kInsertedWindowDims,
  kIotaDimension,
  kIsComposite,
  kIsCrossProgramPrefetch,
  kIsHostTransfer,
  kIsStable,
  kK,
  kKind,
  kLargest,
  kLeftSide,
  kLhsBatchDims,
  kLhsContractingDims,
  kLhsRaggedDims,
  kLower,
  kMantissaBits,
  kMetadata,
  kOffsetDims,
  kOperandBatchingDims,
  kOperandLayoutConstraints,
  kOperandPrecision,
  kOutfeedConfig,
  kOutfeedShape,
  kOutputToOperandAliasing,
  kPadding,
  kPaddingType,
  kParameterReplication,
  kReplicaGroups,
  kResultAccuracy,
  kRhsBatchDims,
  kRhsContractingDims,
  kRhsGroupDims,
  kSchedule,
  kScatter,
  kScatterDimsToOperandDims,
  kScatterIndicesBatchingDims,
  kSelect,
  kSharding,
  kSlice,
  kSliceSizes,
  kSourceTargetPairs,
  kSparsity,
  kStartIndexMap,
  kStartIndicesBatchingDims,
  kStatistics,
  kToApply,
  kTransposeA,
  kTrueComputation,
  kType,
  kUniqueIndices,
  kUnitDiagonal,
  kUpdateWindowDims,
  kUseGlobalDeviceIds,
  kWindow,
};

Attr LookupAttr(absl::string_view key) {
  static const auto* const kMap =
      new absl::flat_hash_map<absl::string_view, Attr>({
          {"algorithm", Attr::kAlgorithm},
          {"api_version", Attr::kApiVersion},
          {"async_execution_thread", Attr::kAsyncExecutionThread},
          {"backend_config", Attr::kBackendConfig},
          {"batch_group_count", Attr::kBatchGroupCount},
          {"body", Attr::kBody},
          {"branch_computations", Attr::kBranchComputations},
          {"called_computations", Attr::kCalledComputations},
          {"calls", Attr::kCalls},
          {"channel_id", Attr::kChannelId},
          {"collapsed_slice_dims", Attr::kCollapsedSliceDims},
          {"condition", Attr::kCondition},
          {"constrain_layout", Attr::kConstrainLayout},
          {"control-predecessors", Attr::kControlPredecessors},
          {"cross_program_prefetch_index", Attr::kCrossProgramPrefetchIndex},
          {"custom_call_has_side_effect", Attr::kCustomCallHasSideEffect},
          {"custom_call_target", Attr::kCustomCallTarget},
          {"custom_call_schedule", Attr::kSchedule},
          {"delta", Attr::kDelta},
          {"dim_labels", Attr::kDimLabels},
          {"dimensions", Attr::kDimensions},
          {"direction", Attr::kDirection},
          {"distribution", Attr::kDistribution},
          {"domain", Attr::kDomain},
          {"dynamic_slice_sizes", Attr::kDynamicSliceSizes},
          {"epsilon", Attr::kEpsilon},
          {"exponent_bits", Attr::kExponentBits},
          {"false_computation", Attr::kFalseComputation},
          {"feature_group_count", Attr::kFeatureGroupCount},
          {"feature_index", Attr::kFeatureIndex},
          {"fft_length", Attr::kFftLength},
          {"fft_type", Attr::kFftType},
          {"frontend_attributes", Attr::kFrontendAttributes},
          {"index", Attr::kIndex},
          {"index_vector_dim", Attr::kIndexVectorDim},
          {"indices_are_sorted", Attr::kIndicesAreSorted},
          {"infeed_config", Attr::kInfeedConfig},
          {"input_batching_dims", Attr::kInputBatchingDims},
          {"inserted_window_dims", Attr::kInsertedWindowDims},
          {"iota_dimension", Attr::kIotaDimension},
          {"is_composite", Attr::kIsComposite},
          {"is_cross_program_prefetch", Attr::kIsCrossProgramPrefetch},
          {"is_host_transfer", Attr::kIsHostTransfer},
          {"is_stable", Attr::kIsStable},
          {"k", Attr::kK},
          {"kind", Attr::kKind},
          {"largest", Attr::kLargest},
          {"left_side", Attr::kLeftSide},
          {"lhs_batch_dims", Attr::kLhsBatchDims},
          {"lhs_contracting_dims", Attr::kLhsContractingDims},
          {"lhs_ragged_dims", Attr::kLhsRaggedDims},
          {"lower", Attr::kLower},
          {"mantissa_bits", Attr::kMantissaBits},
          {"metadata", Attr::kMetadata},
          {"offset_dims", Attr::kOffsetDims},
          {"operand_batching_dims", Attr::kOperandBatchingDims},
          {"operand_layout_constraints", Attr::kOperandLayoutConstraints},
          {"operand_precision", Attr::kOperandPrecision},
          {"outfeed_config", Attr::kOutfeedConfig},
          {"outfeed_shape", Attr::kOutfeedShape},
          {"output_to_operand_aliasing", Attr::kOutputToOperandAliasing},
          {"padding", Attr::kPadding},
          {"padding_type", Attr::kPaddingType},
          {"parameter_replication", Attr::kParameterReplication},
          {"replica_groups", Attr::kReplicaGroups},
          {"result_accuracy", Attr::kResultAccuracy},
          {"rhs_batch_dims", Attr::kRhsBatchDims},
          {"rhs_contracting_dims", Attr::kRhsContractingDims},
          {"rhs_group_dims", Attr::kRhsGroupDims},
          {"schedule", Attr::kSchedule},
          {"scatter", Attr::kScatter},
          {"scatter_dims_to_operand_dims", Attr::kScatterDimsToOperandDims},
          {"scatter_indices_batching_dims", Attr::kScatterIndicesBatchingDims},
          {"select", Attr::kSelect},
          {"sharding", Attr::kSharding},
          {"slice", Attr::kSlice},
          {"slice_sizes", Attr::kSliceSizes},
          {"source_target_pairs", Attr::kSourceTargetPairs},
          {"sparsity", Attr::kSparsity},
          {"start_index_map", Attr::kStartIndexMap},
          {"start_indices_batching_dims", Attr::kStartIndicesBatchingDims},
          {"statistics", Attr::kStatistics},
          {"to_apply", Attr::kToApply},
          {"transpose_a", Attr::kTransposeA},
          {"true_computation", Attr::kTrueComputation},
          {"type", Attr::kType},
          {"unique_indices", Attr::kUniqueIndices},
          {"unit_diagonal", Attr::kUnitDiagonal},
          {"update_window_dims", Attr::kUpdateWindowDims},
          {"use_global_device_ids", Attr::kUseGlobalDeviceIds},
          {"window", Attr::kWindow},
      });
  auto it = kMap->find(key);
  return it == kMap->end() ? Attr::kUnknown : it->second;
}

// A reference by name to an instruction or computation, resolved after the
// whole text is read.
struct NameRef {
  absl::string_view name;
  size_t pos = 0;
};

struct PendingInstruction {
  PendingInstruction() : owned(new xla::HloInstructionProto()), proto(*owned) {}
  PendingInstruction(const PendingInstruction&) = delete;
  PendingInstruction& operator=(const PendingInstruction&) = delete;

  // Allocated once and handed to the module without copying or swapping.
  std::unique_ptr<xla::HloInstructionProto> owned;
  xla::HloInstructionProto& proto;
  size_t pos = 0;  // Start of the instruction name.
  std::vector<NameRef> operands;
  std::vector<NameRef> control_predecessors;
  std::vector<NameRef> called;  // In XLA's called_computations order.
  bool default_comparison_type = false;
  // Resolved indices.
  std::vector<int> operand_index;
  std::vector<int> control_index;
  std::vector<int> called_index;
};

struct PendingComputation {
  absl::string_view name;
  size_t pos = 0;
  bool is_entry = false;
  std::string execution_thread = "main";
  std::deque<PendingInstruction>
      instructions;  // Stable addresses, no moves on growth.
  absl::flat_hash_map<absl::string_view, int> by_name;
  int root = -1;
  size_t root_pos = 0;
};

// Deterministic value for element `i` of an elided constant (see header).
int64_t ElidedPattern(int64_t i) { return (i * 7 + 3) % 17 - 8; }

void StoreValue(xla::PrimitiveType type, double v, float single, int64_t i,
                uint64_t u, xla::LiteralProto* literal);
std::string* BytesField(xla::PrimitiveType type, xla::LiteralProto* literal);

// Appends `count` elements of the elided-constant pattern (see the header).
// The pattern has period 34 (17 for values, 2 for pred), so one period is
// encoded once and repeated.
void FillElided(xla::PrimitiveType type, int64_t count,
                xla::LiteralProto* literal) {
  using namespace text_internal;  // NOLINT
  constexpr int kPeriod = 34;
  xla::LiteralProto period;
  for (int64_t i = 0; i < kPeriod; ++i) {
    const int64_t k = ElidedPattern(i);
    const double real = static_cast<double>(k) / 16.0;
    if (type == xla::PRED) {
      period.add_preds(i % 2 == 1);
    } else if (type == xla::C64) {
      period.add_c64s(static_cast<float>(real));
      period.add_c64s(0);
    } else if (type == xla::C128) {
      period.add_c128s(real);
      period.add_c128s(0);
    } else if (IsFloatType(type)) {
      StoreValue(type, real, static_cast<float>(real), 0, 0, &period);
    } else if (IsSignedIntType(type)) {
      StoreValue(type, 0, 0, k, static_cast<uint64_t>(k), &period);
    } else {
      StoreValue(type, 0, 0, k + 8, static_cast<uint64_t>(k + 8), &period);
    }
  }
  auto repeat = [&](const auto& source, auto* target, int group) {
    target->Reserve(static_cast<int>(count * group));
    for (int64_t i = 0; i < count * group; ++i) {
      target->Add(source.Get(static_cast<int>(i % (kPeriod * group))));
    }
  };
  switch (type) {
    case xla::PRED:
      repeat(period.preds(), literal->mutable_preds(), 1);
      return;
    case xla::S32:
      repeat(period.s32s(), literal->mutable_s32s(), 1);
      return;
    case xla::S64:
      repeat(period.s64s(), literal->mutable_s64s(), 1);
      return;
    case xla::U32:
      repeat(period.u32s(), literal->mutable_u32s(), 1);
      return;
    case xla::U64:
      repeat(period.u64s(), literal->mutable_u64s(), 1);
      return;
    case xla::F32:
      repeat(period.f32s(), literal->mutable_f32s(), 1);
      return;
    case xla::F64:
      repeat(period.f64s(), literal->mutable_f64s(), 1);
      return;
    case xla::C64:
      repeat(period.c64s(), literal->mutable_c64s(), 2);
      return;
    case xla::C128:
      repeat(period.c128s(), literal->mutable_c128s(), 2);
      return;
    default:
      break;
  }
  const std::string* source = BytesField(type, &period);
  std::string* target = BytesField(type, literal);
  if (source == nullptr || target == nullptr) return;
  const size_t width = source->size() / kPeriod;
  const size_t total = static_cast<size_t>(count) * width;
  target->reserve(target->size() + total);
  while (target->size() + source->size() <= total) target->append(*source);
  target->append(*source, 0, total - target->size());
}

class Parser {
 public:
  explicit Parser(absl::string_view text) : lexer_(text) {}

  absl::Status ParseModule(xla::HloModuleProto* module);
  absl::Status ParseSingleShape(xla::ShapeProto* shape);

 private:
  // --- Errors -------------------------------------------------------------
  absl::Status ErrorAt(size_t pos, absl::string_view message) const {
    int line, column;
    lexer_.LineColumn(pos, &line, &column);
    return absl::InvalidArgumentError(
        absl::StrCat("line ", line, ", column ", column, ": ", message));
  }
  // "expected X, got Y" at the next token.
  absl::Status Expected(absl::string_view what) {
    lexer_.SkipSpace();
    return ExpectedAt(lexer_.pos(), what);
  }
  absl::Status ExpectedAt(size_t pos, absl::string_view what) const {
    return ErrorAt(
        pos, absl::StrCat("expected ", what, ", got ", lexer_.DescribeAt(pos)));
  }
  absl::Status Expect(char c) {
    if (lexer_.TryConsume(c)) return absl::OkStatus();
    return Expected(absl::StrCat("'", absl::string_view(&c, 1), "'"));
  }
  absl::Status ExpectStr(absl::string_view s) {
    if (lexer_.TryConsume(s)) return absl::OkStatus();
    return Expected(absl::StrCat("'", s, "'"));
  }

  // --- Small values -------------------------------------------------------
  absl::Status ParseInt(int64_t* value) {
    if (lexer_.ConsumeInt64(value)) return absl::OkStatus();
    return Expected("integer");
  }
  absl::Status ParseBool(bool* value) {
    lexer_.SkipSpace();
    const size_t pos = lexer_.pos();
    absl::string_view word = lexer_.ConsumeWord();
    if (word == "true") {
      *value = true;
    } else if (word == "false") {
      *value = false;
    } else {
      lexer_.set_pos(pos);
      return Expected("'true' or 'false'");
    }
    return absl::OkStatus();
  }
  absl::Status ParseString(std::string* value) {
    lexer_.SkipSpace();
    const size_t pos = lexer_.pos();
    absl::string_view raw;
    if (!lexer_.ConsumeQuoted(&raw)) {
      if (lexer_.pos() != pos) return ErrorAt(pos, "unterminated string");
      return Expected("string");
    }
    value->clear();
    if (raw.find('\\') == absl::string_view::npos) {
      value->assign(raw.data(), raw.size());
      return absl::OkStatus();
    }
    std::string error;
    if (!absl::CUnescape(raw, value, &error)) {
      return ErrorAt(pos, absl::StrCat("bad escape in string: ", error));
    }
    return absl::OkStatus();
  }
  absl::Status ParseDouble(double* value);
  // '{' [int (',' int)*] '}'
  template <typename Field>
  absl::Status ParseIntList(Field* out) {
    HLO_RETURN_IF_ERROR(Expect('{'));
    if (lexer_.TryConsume('}')) return absl::OkStatus();
    while (true) {
      int64_t v;
      HLO_RETURN_IF_ERROR(ParseInt(&v));
      out->Add(v);
      if (lexer_.TryConsume('}')) return absl::OkStatus();
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  // Ints separated by `sep` with no spaces ("3x3", "1_2").
  absl::Status ParseSeparatedInts(char sep, std::vector<int64_t>* out);
  // Uppercases `word`, optionally prefixes it, and looks it up in `type`.
  template <typename Enum>
  absl::Status ParseEnum(const google::protobuf::EnumDescriptor* type,
                         absl::string_view prefix, Enum* value) {
    lexer_.SkipSpace();
    const size_t pos = lexer_.pos();
    absl::string_view word = lexer_.ConsumeWord();
    if (word.empty()) return Expected(absl::StrCat(type->name(), " value"));
    std::string upper = absl::AsciiStrToUpper(word);
    const google::protobuf::EnumValueDescriptor* v =
        type->FindValueByName(upper);
    if (v == nullptr && !prefix.empty()) {
      v = type->FindValueByName(absl::StrCat(prefix, upper));
    }
    if (v == nullptr) {
      return ErrorAt(pos, absl::StrCat("expected ", type->name(),
                                       " value, got '", word, "'"));
    }
    *value = static_cast<Enum>(v->number());
    return absl::OkStatus();
  }
  absl::Status SkipValue();

  // --- Shapes -------------------------------------------------------------
  absl::Status ParseShape(xla::ShapeProto* shape);
  absl::Status ParseLayout(int rank, xla::LayoutProto* layout);
  absl::Status ParseShapeIndex(
      google::protobuf::RepeatedField<int64_t>* index) {
    return ParseIntList(index);
  }

  // --- Module-level -------------------------------------------------------
  absl::Status ParseModuleAttribute(xla::HloModuleProto* module);
  absl::Status ParseProgramShape(xla::ProgramShapeProto* program_shape);
  absl::Status ParseComputation();
  absl::Status ParseInstruction(PendingComputation* computation);
  absl::Status ParseOperand(PendingComputation* computation,
                            PendingInstruction* instruction);
  absl::Status ParseAttribute(PendingInstruction* instruction);
  absl::Status Resolve(xla::HloModuleProto* module);

  // --- Attribute values ---------------------------------------------------
  absl::Status ParseNameList(std::vector<NameRef>* names);
  absl::Status ParseNameRef(NameRef* ref);
  absl::Status ParseWindow(xla::Window* window);
  absl::Status ParseDimLabels(xla::ConvolutionDimensionNumbers* dnums);
  absl::Status ParsePadding(xla::PaddingConfig* padding);
  absl::Status ParseSlices(xla::HloInstructionProto* proto);
  absl::Status ParseReplicaGroups(
      google::protobuf::RepeatedPtrField<xla::ReplicaGroup>* groups);
  absl::Status ParseIotaList(std::vector<int64_t>* reshape,
                             std::vector<int64_t>* perm);
  absl::Status ParseSharding(xla::OpSharding* sharding);
  absl::Status ParseMetadata(xla::OpMetadata* metadata);
  absl::Status ParseFrontendAttributes(xla::FrontendAttributes* attributes);
  absl::Status ParseStatistics(xla::StatisticsViz* statistics);
  absl::Status ParseSparsity(xla::HloInstructionProto* proto);
  absl::Status ParseDomain(xla::HloInstructionProto* proto);
  absl::Status ParseResultAccuracy(xla::ResultAccuracy* accuracy);
  absl::Status ParseBackendConfig(std::string* config);

  // --- Literals -----------------------------------------------------------
  absl::Status ParseLiteral(const xla::ShapeProto& shape,
                            xla::LiteralProto* literal);
  absl::Status ParseArrayElements(const xla::ShapeProto& shape, int dim,
                                  xla::LiteralProto* literal);
  absl::Status ParseElement(xla::PrimitiveType type,
                            xla::LiteralProto* literal);
  absl::Status ParseFloatValue(xla::PrimitiveType type, double* value,
                               float* single);

  HloLexer lexer_;
  std::deque<PendingComputation> computations_;
  bool is_scheduled_ = false;
  bool has_entry_layout_ = false;
  size_t entry_layout_pos_ = 0;
  xla::ProgramShapeProto entry_layout_;
  xla::ShapeProto scratch_shape_;
};

absl::Status Parser::ParseSeparatedInts(char sep, std::vector<int64_t>* out) {
  out->clear();
  while (true) {
    int64_t v;
    HLO_RETURN_IF_ERROR(ParseInt(&v));
    out->push_back(v);
    if (lexer_.PeekRaw() != sep) return absl::OkStatus();
    lexer_.set_pos(lexer_.pos() + 1);
  }
}

absl::Status Parser::SkipValue() {
  // An unknown attribute value: balanced groups and words, up to ',' or the
  // end of the line at depth 0.
  lexer_.SkipSpace();
  const size_t start = lexer_.pos();
  while (true) {
    if (lexer_.SkipSpaceOnLine()) break;
    const char c = lexer_.PeekRaw();
    if (c == '\0' || c == ',' || c == '}' || c == ')') break;
    if (c == '{' || c == '(' || c == '[' || c == '"') {
      const size_t at = lexer_.pos();
      if (!lexer_.SkipBalanced())
        return ErrorAt(at, "unbalanced attribute value");
    } else {
      lexer_.set_pos(lexer_.pos() + 1);
    }
  }
  if (lexer_.pos() == start) return Expected("attribute value");
  return absl::OkStatus();
}

absl::Status Parser::ParseDouble(double* value) {
  float ignored;
  return ParseFloatValue(xla::F64, value, &ignored);
}

// --- Shapes -----------------------------------------------------------------

absl::Status Parser::ParseShape(xla::ShapeProto* shape) {
  using namespace text_internal;  // NOLINT
  const char c = lexer_.Peek();
  if (c == '(') {
    lexer_.set_pos(lexer_.pos() + 1);
    shape->set_element_type(xla::TUPLE);
    if (lexer_.TryConsume(')')) return absl::OkStatus();
    while (true) {
      HLO_RETURN_IF_ERROR(ParseShape(shape->add_tuple_shapes()));
      if (lexer_.TryConsume(')')) return absl::OkStatus();
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  const size_t pos = lexer_.pos();
  absl::string_view word = lexer_.ConsumeWord();
  xla::PrimitiveType type;
  if (word.empty() || !PrimitiveTypeFromName(word, &type)) {
    lexer_.set_pos(pos);
    return ExpectedAt(pos, "shape");
  }
  shape->set_element_type(type);
  if (lexer_.PeekRaw() != '[') return Expected("'['");
  lexer_.set_pos(lexer_.pos() + 1);
  if (!IsArrayType(type)) return Expect(']');
  if (!lexer_.TryConsume(']')) {
    while (true) {
      bool dynamic = lexer_.TryConsume("<=");
      int64_t size;
      if (lexer_.TryConsume('?')) {
        size = std::numeric_limits<int64_t>::min();
        dynamic = true;
      } else {
        const size_t at = lexer_.pos();
        HLO_RETURN_IF_ERROR(ParseInt(&size));
        if (size < 0) return ErrorAt(at, "negative dimension size");
      }
      shape->add_dimensions(size);
      shape->add_is_dynamic_dimension(dynamic);
      if (lexer_.TryConsume(']')) break;
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  // A layout must follow ']' directly ("f32[2]{0}"); a '{' after a space
  // belongs to what follows the shape (e.g. an old-style literal).
  if (lexer_.PeekRaw() == '{') {
    return ParseLayout(shape->dimensions_size(), shape->mutable_layout());
  }
  SetDefaultLayout(shape->dimensions_size(), shape->mutable_layout());
  return absl::OkStatus();
}

absl::Status Parser::ParseLayout(int rank, xla::LayoutProto* layout) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  layout->set_format(xla::DENSE);
  const size_t m2m_pos = lexer_.pos();
  const char first = lexer_.Peek();
  if (first != ':' && first != '}') {
    while (true) {
      int64_t dim;
      HLO_RETURN_IF_ERROR(ParseInt(&dim));
      layout->add_minor_to_major(dim);
      if (lexer_.Peek() != ',') break;
      lexer_.set_pos(lexer_.pos() + 1);
    }
  }
  if (layout->minor_to_major_size() != rank &&
      !(layout->minor_to_major_size() == 0 && rank == 0)) {
    return ErrorAt(m2m_pos,
                   absl::StrCat("layout has ", layout->minor_to_major_size(),
                                " dimensions but the shape has rank ", rank));
  }
  if (lexer_.TryConsume(':')) {
    while (lexer_.Peek() != '}') {
      const size_t at = lexer_.pos();
      const char c = lexer_.PeekRaw();
      const char next = lexer_.PeekRawAt(1);
      int64_t value;
      if (c == 'D' && next == '(') {
        lexer_.set_pos(at + 2);
        std::vector<std::pair<bool, bool>> flags;
        while (!lexer_.TryConsume(')')) {
          const char kind = lexer_.Peek();
          xla::DimLevelType level;
          switch (kind) {
            case 'D':
              level = xla::DIM_DENSE;
              break;
            case 'C':
              level = xla::DIM_COMPRESSED;
              break;
            case 'S':
              level = xla::DIM_SINGLETON;
              break;
            case 'H':
              level = xla::DIM_LOOSE_COMPRESSED;
              break;
            default:
              return Expected("dimension level type (D, C, S or H)");
          }
          lexer_.set_pos(lexer_.pos() + 1);
          bool unique = true, ordered = true;
          while (lexer_.PeekRaw() == '+' || lexer_.PeekRaw() == '~') {
            (lexer_.PeekRaw() == '+' ? unique : ordered) = false;
            lexer_.set_pos(lexer_.pos() + 1);
          }
          layout->add_dim_level_types(level);
          flags.emplace_back(unique, ordered);
          lexer_.TryConsume(',');
        }
        bool any_flag = false;
        for (const auto& f : flags) any_flag |= !f.first || !f.second;
        if (any_flag) {
          for (const auto& f : flags) {
            layout->add_dim_unique(f.first);
            layout->add_dim_ordered(f.second);
          }
        }
      } else if (c == 'T' && next == '(') {
        lexer_.set_pos(at + 1);
        while (lexer_.PeekRaw() == '(') {
          lexer_.set_pos(lexer_.pos() + 1);
          xla::TileProto* tile = layout->add_tiles();
          while (true) {
            if (lexer_.TryConsume('*')) {
              tile->add_dimensions(std::numeric_limits<int64_t>::min());
            } else {
              HLO_RETURN_IF_ERROR(ParseInt(&value));
              tile->add_dimensions(value);
            }
            if (lexer_.TryConsume(')')) break;
            HLO_RETURN_IF_ERROR(Expect(','));
          }
        }
      } else if (c == 'S' && next == 'C') {
        lexer_.set_pos(at + 2);
        HLO_RETURN_IF_ERROR(Expect('('));
        xla::SplitConfigProto* split = layout->add_split_configs();
        HLO_RETURN_IF_ERROR(ParseInt(&value));
        split->set_dimension(value);
        HLO_RETURN_IF_ERROR(Expect(':'));
        while (true) {
          HLO_RETURN_IF_ERROR(ParseInt(&value));
          split->add_split_indices(value);
          if (lexer_.TryConsume(')')) break;
          HLO_RETURN_IF_ERROR(Expect(','));
        }
      } else if ((c == 'L' || c == 'E' || c == 'S' || c == 'M') &&
                 next == '(') {
        lexer_.set_pos(at + 2);
        HLO_RETURN_IF_ERROR(ParseInt(&value));
        HLO_RETURN_IF_ERROR(Expect(')'));
        if (c == 'L') layout->set_tail_padding_alignment_in_elements(value);
        if (c == 'E') layout->set_element_size_in_bits(value);
        if (c == 'S') layout->set_memory_space(value);
        if (c == 'M') layout->set_dynamic_shape_metadata_prefix_bytes(value);
      } else if ((c == '#' || c == '*') && next == '(') {
        lexer_.set_pos(at + 2);
        const size_t type_pos = lexer_.pos();
        xla::PrimitiveType type;
        if (!text_internal::PrimitiveTypeFromName(lexer_.ConsumeWord(),
                                                  &type)) {
          return ExpectedAt(type_pos, "primitive type");
        }
        HLO_RETURN_IF_ERROR(Expect(')'));
        if (c == '#') {
          layout->set_index_primitive_type(type);
        } else {
          layout->set_pointer_primitive_type(type);
        }
      } else if (c == 'P' && next == '(') {
        lexer_.set_pos(at + 2);
        HLO_RETURN_IF_ERROR(ParseShape(layout->mutable_physical_shape()));
        HLO_RETURN_IF_ERROR(Expect(')'));
      } else {
        return Expected("layout attribute (D, T, L, E, S, SC, M, #, *, P)");
      }
    }
  }
  return Expect('}');
}

absl::Status Parser::ParseSingleShape(xla::ShapeProto* shape) {
  HLO_RETURN_IF_ERROR(ParseShape(shape));
  if (!lexer_.AtEnd()) return Expected("end of input");
  return absl::OkStatus();
}

absl::Status Parser::ParseProgramShape(xla::ProgramShapeProto* program_shape) {
  HLO_RETURN_IF_ERROR(Expect('('));
  if (!lexer_.TryConsume(')')) {
    while (true) {
      HLO_RETURN_IF_ERROR(ParseShape(program_shape->add_parameters()));
      if (lexer_.TryConsume(')')) break;
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  HLO_RETURN_IF_ERROR(ExpectStr("->"));
  return ParseShape(program_shape->mutable_result());
}

// --- Module -----------------------------------------------------------------

absl::Status Parser::ParseModule(xla::HloModuleProto* module) {
  if (!lexer_.TryConsumeKeyword("HloModule")) return Expected("'HloModule'");
  absl::string_view name = lexer_.ConsumeName();
  if (name.empty()) return Expected("module name");
  module->set_name(std::string(name));
  while (lexer_.TryConsume(',')) {
    HLO_RETURN_IF_ERROR(ParseModuleAttribute(module));
  }
  while (!lexer_.AtEnd()) {
    HLO_RETURN_IF_ERROR(ParseComputation());
  }
  if (computations_.empty()) return Expected("computation");
  return Resolve(module);
}

absl::Status Parser::ParseModuleAttribute(xla::HloModuleProto* module) {
  lexer_.SkipSpace();
  absl::string_view key = lexer_.ConsumeWord();
  if (key.empty()) return Expected("module attribute name");
  HLO_RETURN_IF_ERROR(Expect('='));
  if (key == "is_scheduled") return ParseBool(&is_scheduled_);
  if (key == "entry_computation_layout") {
    HLO_RETURN_IF_ERROR(Expect('{'));
    lexer_.SkipSpace();
    entry_layout_pos_ = lexer_.pos();
    has_entry_layout_ = true;
    entry_layout_.Clear();
    HLO_RETURN_IF_ERROR(ParseProgramShape(&entry_layout_));
    return Expect('}');
  }
  if (key == "input_output_alias") {
    HLO_RETURN_IF_ERROR(Expect('{'));
    if (lexer_.TryConsume('}')) return absl::OkStatus();
    while (true) {
      auto* entry = module->mutable_input_output_alias()->add_entries();
      HLO_RETURN_IF_ERROR(ParseShapeIndex(entry->mutable_output_shape_index()));
      HLO_RETURN_IF_ERROR(Expect(':'));
      HLO_RETURN_IF_ERROR(Expect('('));
      int64_t param;
      HLO_RETURN_IF_ERROR(ParseInt(&param));
      entry->set_parameter_number(param);
      HLO_RETURN_IF_ERROR(Expect(','));
      HLO_RETURN_IF_ERROR(
          ParseShapeIndex(entry->mutable_parameter_shape_index()));
      entry->set_kind(xla::MAY_ALIAS);
      if (lexer_.TryConsume(',')) {
        lexer_.SkipSpace();
        const size_t at = lexer_.pos();
        absl::string_view kind = lexer_.ConsumeWord();
        if (kind == "must-alias") {
          entry->set_kind(xla::MUST_ALIAS);
        } else if (kind != "may-alias") {
          return ExpectedAt(at, "'may-alias' or 'must-alias'");
        }
      }
      HLO_RETURN_IF_ERROR(Expect(')'));
      if (lexer_.TryConsume('}')) return absl::OkStatus();
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  if (key == "buffer_donor") {
    HLO_RETURN_IF_ERROR(Expect('{'));
    if (lexer_.TryConsume('}')) return absl::OkStatus();
    while (true) {
      auto* entry = module->mutable_buffer_donor()->add_entries();
      HLO_RETURN_IF_ERROR(Expect('('));
      int64_t param;
      HLO_RETURN_IF_ERROR(ParseInt(&param));
      entry->set_parameter_number(param);
      HLO_RETURN_IF_ERROR(Expect(','));
      HLO_RETURN_IF_ERROR(
          ParseShapeIndex(entry->mutable_parameter_shape_index()));
      HLO_RETURN_IF_ERROR(Expect(')'));
      if (lexer_.TryConsume('}')) return absl::OkStatus();
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  if (key == "frontend_attributes") {
    return ParseFrontendAttributes(module->mutable_frontend_attributes());
  }
  if (key == "spmd_output_sharding") {
    return ParseSharding(module->mutable_spmd_output_sharding());
  }
  if (key == "spmd_parameters_shardings") {
    HLO_RETURN_IF_ERROR(Expect('{'));
    if (lexer_.TryConsume('}')) return absl::OkStatus();
    while (true) {
      HLO_RETURN_IF_ERROR(
          ParseSharding(module->add_spmd_parameters_shardings()));
      if (lexer_.TryConsume('}')) return absl::OkStatus();
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  // replica_count, num_partitions, alias_passthrough_params,
  // allow_spmd_sharding_propagation_to_*, ...: not part of HloModuleProto.
  return SkipValue();
}

absl::Status Parser::ParseComputation() {
  lexer_.SkipSpace();
  PendingComputation computation;
  computation.is_entry = lexer_.TryConsumeKeyword("ENTRY");
  lexer_.SkipSpace();
  computation.pos = lexer_.pos();
  computation.name = lexer_.ConsumeName();
  if (computation.name.empty()) {
    return Expected(computation.is_entry ? "computation name"
                                         : "computation name or 'ENTRY'");
  }
  if (lexer_.Peek() == '(') {
    // The signature repeats what the parameters say; skip it.
    const size_t at = lexer_.pos();
    if (!lexer_.SkipBalanced()) return ErrorAt(at, "unbalanced parameter list");
    HLO_RETURN_IF_ERROR(ExpectStr("->"));
    xla::ShapeProto ignored;
    HLO_RETURN_IF_ERROR(ParseShape(&ignored));
  }
  HLO_RETURN_IF_ERROR(Expect('{'));
  while (!lexer_.TryConsume('}')) {
    if (lexer_.AtEnd()) return Expected("instruction or '}'");
    HLO_RETURN_IF_ERROR(ParseInstruction(&computation));
  }
  if (computation.instructions.empty()) {
    return ErrorAt(computation.pos, "computation has no instructions");
  }
  if (lexer_.TryConsume(',')) {
    lexer_.SkipSpace();
    const size_t at = lexer_.pos();
    if (lexer_.ConsumeWord() != "execution_thread") {
      return ExpectedAt(at, "'execution_thread'");
    }
    HLO_RETURN_IF_ERROR(Expect('='));
    HLO_RETURN_IF_ERROR(ParseString(&computation.execution_thread));
  }
  if (computation.root < 0) {
    computation.root = static_cast<int>(computation.instructions.size()) - 1;
  }
  computations_.push_back(std::move(computation));
  return absl::OkStatus();
}

absl::Status Parser::ParseInstruction(PendingComputation* computation) {
  lexer_.SkipSpace();
  const size_t start = lexer_.pos();
  const bool is_root = lexer_.TryConsumeKeyword("ROOT");
  lexer_.SkipSpace();
  const size_t name_pos = lexer_.pos();
  absl::string_view name = lexer_.ConsumeName();
  if (name.empty()) return Expected("instruction name");
  const int index = static_cast<int>(computation->instructions.size());
  if (!computation->by_name.emplace(name, index).second) {
    return ErrorAt(name_pos,
                   absl::StrCat("duplicate instruction name '", name, "'"));
  }
  if (is_root) {
    if (computation->root >= 0) {
      return ErrorAt(start, "computation has more than one ROOT");
    }
    computation->root = index;
  }
  computation->instructions.emplace_back();
  PendingInstruction& instruction = computation->instructions.back();
  instruction.pos = name_pos;
  xla::HloInstructionProto& proto = instruction.proto;
  proto.set_name(std::string(name));
  HLO_RETURN_IF_ERROR(Expect('='));
  HLO_RETURN_IF_ERROR(ParseShape(proto.mutable_shape()));
  lexer_.SkipSpace();
  const size_t opcode_pos = lexer_.pos();
  absl::string_view opcode = lexer_.ConsumeWord();
  if (opcode.empty()) return Expected("opcode");
  if (!IsKnownOpcode(opcode)) {
    return ErrorAt(opcode_pos, absl::StrCat("unknown opcode '", opcode, "'"));
  }
  proto.set_opcode(std::string(opcode));
  HLO_RETURN_IF_ERROR(Expect('('));
  if (opcode == "constant") {
    HLO_RETURN_IF_ERROR(ParseLiteral(proto.shape(), proto.mutable_literal()));
    HLO_RETURN_IF_ERROR(Expect(')'));
  } else if (opcode == "parameter") {
    int64_t number;
    const size_t at = lexer_.pos();
    HLO_RETURN_IF_ERROR(ParseInt(&number));
    if (number < 0) return ErrorAt(at, "negative parameter number");
    proto.set_parameter_number(number);
    HLO_RETURN_IF_ERROR(Expect(')'));
  } else if (!lexer_.TryConsume(')')) {
    while (true) {
      HLO_RETURN_IF_ERROR(ParseOperand(computation, &instruction));
      if (lexer_.TryConsume(')')) break;
      if (!lexer_.TryConsume(',')) return Expected("',' or ')'");
    }
  }
  // Defaults XLA serializes even when the text leaves them out.
  if (opcode == "convolution") {
    proto.set_feature_group_count(1);
    proto.set_batch_group_count(1);
  }
  if (opcode == "convolution" || opcode == "dot" || opcode == "ragged-dot") {
    for (int i = 0; i < 2; ++i) {
      proto.mutable_precision_config()->add_operand_precision(
          xla::PrecisionConfig::DEFAULT);
    }
  }
  if (opcode == "custom-call") {
    proto.set_custom_call_api_version(xla::API_VERSION_ORIGINAL);
  }
  if (opcode == "compare") instruction.default_comparison_type = true;
  while (lexer_.TryConsume(',')) {
    HLO_RETURN_IF_ERROR(ParseAttribute(&instruction));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseOperand(PendingComputation* computation,
                                  PendingInstruction* instruction) {
  lexer_.SkipSpace();
  const size_t start = lexer_.pos();
  bool has_shape = false;
  if (lexer_.PeekRaw() == '(') {
    scratch_shape_.Clear();
    HLO_RETURN_IF_ERROR(ParseShape(&scratch_shape_));
    has_shape = true;
  } else {
    absl::string_view word = lexer_.ConsumeWord();
    xla::PrimitiveType type;
    if (!word.empty() && lexer_.PeekRaw() == '[' &&
        text_internal::PrimitiveTypeFromName(word, &type)) {
      lexer_.set_pos(start);
      scratch_shape_.Clear();
      HLO_RETURN_IF_ERROR(ParseShape(&scratch_shape_));
      has_shape = true;
    } else {
      lexer_.set_pos(start);
    }
  }
  lexer_.SkipSpace();
  NameRef ref;
  ref.pos = lexer_.pos();
  ref.name = lexer_.ConsumeName();
  if (ref.name.empty()) return Expected("operand name");
  if (has_shape) {
    // Check the declared shape when the operand is already known.
    auto it = computation->by_name.find(ref.name);
    if (it != computation->by_name.end() &&
        &computation->instructions[it->second] != instruction) {
      const xla::ShapeProto& actual =
          computation->instructions[it->second].proto.shape();
      std::function<bool(const xla::ShapeProto&, const xla::ShapeProto&)> same =
          [&](const xla::ShapeProto& a, const xla::ShapeProto& b) {
            if (a.element_type() != b.element_type() ||
                a.dimensions_size() != b.dimensions_size() ||
                a.tuple_shapes_size() != b.tuple_shapes_size()) {
              return false;
            }
            for (int i = 0; i < a.dimensions_size(); ++i) {
              if (a.dimensions(i) != b.dimensions(i)) return false;
            }
            for (int i = 0; i < a.tuple_shapes_size(); ++i) {
              if (!same(a.tuple_shapes(i), b.tuple_shapes(i))) return false;
            }
            return true;
          };
      if (!same(scratch_shape_, actual)) {
        return ErrorAt(start, absl::StrCat("operand '", ref.name,
                                           "' is declared with a shape that "
                                           "differs from its definition"));
      }
    }
  }
  instruction->operands.push_back(ref);
  return absl::OkStatus();
}

absl::Status Parser::ParseNameRef(NameRef* ref) {
  lexer_.SkipSpace();
  ref->pos = lexer_.pos();
  ref->name = lexer_.ConsumeName();
  if (ref->name.empty()) return Expected("name");
  return absl::OkStatus();
}

absl::Status Parser::ParseNameList(std::vector<NameRef>* names) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  if (lexer_.TryConsume('}')) return absl::OkStatus();
  while (true) {
    NameRef ref;
    HLO_RETURN_IF_ERROR(ParseNameRef(&ref));
    names->push_back(ref);
    if (lexer_.TryConsume('}')) return absl::OkStatus();
    HLO_RETURN_IF_ERROR(Expect(','));
  }
}

absl::Status Parser::ParseAttribute(PendingInstruction* instruction) {
  xla::HloInstructionProto& proto = instruction->proto;
  lexer_.SkipSpace();
  const size_t key_pos = lexer_.pos();
  absl::string_view key = lexer_.ConsumeWord();
  if (key.empty()) return Expected("attribute name");
  HLO_RETURN_IF_ERROR(Expect('='));
  const std::string& opcode = proto.opcode();
  int64_t value;
  bool flag;
  // Called computations go to fixed slots so XLA's order holds whatever the
  // attribute order: while = {body, condition}, conditional = {true, false},
  // select-and-scatter = {select, scatter}.
  auto set_called = [&](size_t slot) -> absl::Status {
    NameRef ref;
    HLO_RETURN_IF_ERROR(ParseNameRef(&ref));
    if (instruction->called.size() <= slot)
      instruction->called.resize(slot + 1);
    instruction->called[slot] = ref;
    return absl::OkStatus();
  };
  const bool is_gather = opcode == "gather";
  xla::DotDimensionNumbers* dot_dnums =
      opcode == "ragged-dot" ? proto.mutable_ragged_dot_dimension_numbers()
                                   ->mutable_dot_dimension_numbers()
                             : nullptr;
  auto dot = [&]() -> xla::DotDimensionNumbers* {
    return dot_dnums != nullptr ? dot_dnums
                                : proto.mutable_dot_dimension_numbers();
  };
  switch (LookupAttr(key)) {
    case Attr::kDimensions:
      return ParseIntList(proto.mutable_dimensions());
    case Attr::kIotaDimension:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      proto.add_dimensions(value);
      return absl::OkStatus();
    case Attr::kIndex:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      proto.set_tuple_index(value);
      return absl::OkStatus();
    case Attr::kSlice:
      return ParseSlices(&proto);
    case Attr::kDynamicSliceSizes:
      return ParseIntList(proto.mutable_dynamic_slice_sizes());
    case Attr::kWindow:
      return ParseWindow(proto.mutable_window());
    case Attr::kDimLabels:
      return ParseDimLabels(proto.mutable_convolution_dimension_numbers());
    case Attr::kFeatureGroupCount:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      proto.set_feature_group_count(value);
      return absl::OkStatus();
    case Attr::kBatchGroupCount:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      proto.set_batch_group_count(value);
      return absl::OkStatus();
    case Attr::kLhsBatchDims:
      return ParseIntList(dot()->mutable_lhs_batch_dimensions());
    case Attr::kLhsContractingDims:
      return ParseIntList(dot()->mutable_lhs_contracting_dimensions());
    case Attr::kRhsBatchDims:
      return ParseIntList(dot()->mutable_rhs_batch_dimensions());
    case Attr::kRhsContractingDims:
      return ParseIntList(dot()->mutable_rhs_contracting_dimensions());
    case Attr::kLhsRaggedDims:
      return ParseIntList(proto.mutable_ragged_dot_dimension_numbers()
                              ->mutable_lhs_ragged_dimensions());
    case Attr::kRhsGroupDims:
      return ParseIntList(proto.mutable_ragged_dot_dimension_numbers()
                              ->mutable_rhs_group_dimensions());
    case Attr::kOperandPrecision: {
      auto* precisions =
          proto.mutable_precision_config()->mutable_operand_precision();
      precisions->Clear();
      HLO_RETURN_IF_ERROR(Expect('{'));
      if (lexer_.TryConsume('}')) return absl::OkStatus();
      while (true) {
        xla::PrecisionConfig::Precision p{};
        HLO_RETURN_IF_ERROR(
            ParseEnum(xla::PrecisionConfig::Precision_descriptor(), "", &p));
        precisions->Add(p);
        if (lexer_.TryConsume('}')) return absl::OkStatus();
        HLO_RETURN_IF_ERROR(Expect(','));
      }
    }
    case Attr::kAlgorithm:
      if (opcode == "rng-bit-generator") {
        xla::RandomAlgorithm algorithm{};
        HLO_RETURN_IF_ERROR(
            ParseEnum(xla::RandomAlgorithm_descriptor(), "RNG_", &algorithm));
        proto.set_rng_algorithm(algorithm);
      } else {
        xla::PrecisionConfig::Algorithm algorithm{};
        HLO_RETURN_IF_ERROR(ParseEnum(
            xla::PrecisionConfig::Algorithm_descriptor(), "ALG_", &algorithm));
        proto.mutable_precision_config()->set_algorithm(algorithm);
      }
      return absl::OkStatus();
    case Attr::kOffsetDims:
      return ParseIntList(
          proto.mutable_gather_dimension_numbers()->mutable_offset_dims());
    case Attr::kCollapsedSliceDims:
      return ParseIntList(proto.mutable_gather_dimension_numbers()
                              ->mutable_collapsed_slice_dims());
    case Attr::kStartIndexMap:
      return ParseIntList(
          proto.mutable_gather_dimension_numbers()->mutable_start_index_map());
    case Attr::kOperandBatchingDims:
      return ParseIntList(proto.mutable_gather_dimension_numbers()
                              ->mutable_operand_batching_dims());
    case Attr::kStartIndicesBatchingDims:
      return ParseIntList(proto.mutable_gather_dimension_numbers()
                              ->mutable_start_indices_batching_dims());
    case Attr::kSliceSizes:
      return ParseIntList(proto.mutable_gather_slice_sizes());
    case Attr::kIndexVectorDim:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      if (is_gather) {
        proto.mutable_gather_dimension_numbers()->set_index_vector_dim(value);
      } else {
        proto.mutable_scatter_dimension_numbers()->set_index_vector_dim(value);
      }
      return absl::OkStatus();
    case Attr::kUpdateWindowDims:
      return ParseIntList(proto.mutable_scatter_dimension_numbers()
                              ->mutable_update_window_dims());
    case Attr::kInsertedWindowDims:
      return ParseIntList(proto.mutable_scatter_dimension_numbers()
                              ->mutable_inserted_window_dims());
    case Attr::kScatterDimsToOperandDims:
      return ParseIntList(proto.mutable_scatter_dimension_numbers()
                              ->mutable_scatter_dims_to_operand_dims());
    case Attr::kInputBatchingDims:
      return ParseIntList(proto.mutable_scatter_dimension_numbers()
                              ->mutable_input_batching_dims());
    case Attr::kScatterIndicesBatchingDims:
      return ParseIntList(proto.mutable_scatter_dimension_numbers()
                              ->mutable_scatter_indices_batching_dims());
    case Attr::kIndicesAreSorted:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.set_indices_are_sorted(flag);
      return absl::OkStatus();
    case Attr::kUniqueIndices:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.set_unique_indices(flag);
      return absl::OkStatus();
    case Attr::kPadding:
      return ParsePadding(proto.mutable_padding_config());
    case Attr::kReplicaGroups:
      return ParseReplicaGroups(proto.mutable_replica_groups());
    case Attr::kSourceTargetPairs: {
      HLO_RETURN_IF_ERROR(Expect('{'));
      if (lexer_.TryConsume('}')) return absl::OkStatus();
      while (true) {
        auto* pair = proto.add_source_target_pairs();
        HLO_RETURN_IF_ERROR(Expect('{'));
        HLO_RETURN_IF_ERROR(ParseInt(&value));
        pair->set_source(value);
        HLO_RETURN_IF_ERROR(Expect(','));
        HLO_RETURN_IF_ERROR(ParseInt(&value));
        pair->set_target(value);
        HLO_RETURN_IF_ERROR(Expect('}'));
        if (lexer_.TryConsume('}')) return absl::OkStatus();
        HLO_RETURN_IF_ERROR(Expect(','));
      }
    }
    case Attr::kChannelId:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      proto.set_channel_id(value);
      return absl::OkStatus();
    case Attr::kDirection: {
      lexer_.SkipSpace();
      const size_t at = lexer_.pos();
      std::string direction = absl::AsciiStrToUpper(lexer_.ConsumeWord());
      if (direction != "EQ" && direction != "NE" && direction != "GE" &&
          direction != "GT" && direction != "LE" && direction != "LT") {
        return ExpectedAt(at, "comparison direction (EQ, NE, GE, GT, LE, LT)");
      }
      proto.set_comparison_direction(direction);
      return absl::OkStatus();
    }
    case Attr::kType: {
      lexer_.SkipSpace();
      const size_t at = lexer_.pos();
      std::string type = absl::AsciiStrToUpper(lexer_.ConsumeWord());
      if (type != "FLOAT" && type != "TOTALORDER" && type != "SIGNED" &&
          type != "UNSIGNED") {
        return ExpectedAt(
            at, "comparison type (FLOAT, TOTALORDER, SIGNED, UNSIGNED)");
      }
      proto.set_comparison_type(type);
      instruction->default_comparison_type = false;
      return absl::OkStatus();
    }
    case Attr::kToApply:
    case Attr::kCalls:
      if (opcode == "custom-call" && lexer_.Peek() == '{') {
        return ParseNameList(&instruction->called);
      }
      return set_called(0);
    case Attr::kBody:
    case Attr::kSelect:
    case Attr::kTrueComputation:
      return set_called(0);
    case Attr::kCondition:
    case Attr::kScatter:
    case Attr::kFalseComputation:
      return set_called(1);
    case Attr::kBranchComputations:
    case Attr::kCalledComputations:
      instruction->called.clear();
      return ParseNameList(&instruction->called);
    case Attr::kControlPredecessors:
      return ParseNameList(&instruction->control_predecessors);
    case Attr::kDistribution: {
      xla::RandomDistribution distribution{};
      HLO_RETURN_IF_ERROR(ParseEnum(xla::RandomDistribution_descriptor(),
                                    "RNG_", &distribution));
      proto.set_distribution(distribution);
      return absl::OkStatus();
    }
    case Attr::kIsStable:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.set_is_stable(flag);
      return absl::OkStatus();
    case Attr::kFftType: {
      xla::FftType type{};
      HLO_RETURN_IF_ERROR(ParseEnum(xla::FftType_descriptor(), "", &type));
      proto.set_fft_type(type);
      return absl::OkStatus();
    }
    case Attr::kFftLength:
      return ParseIntList(proto.mutable_fft_length());
    case Attr::kExponentBits:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      proto.set_exponent_bits(static_cast<int32_t>(value));
      return absl::OkStatus();
    case Attr::kMantissaBits:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      proto.set_mantissa_bits(static_cast<int32_t>(value));
      return absl::OkStatus();
    case Attr::kCustomCallTarget:
      return ParseString(proto.mutable_custom_call_target());
    case Attr::kBackendConfig:
      return ParseBackendConfig(proto.mutable_backend_config());
    case Attr::kMetadata:
      HLO_RETURN_IF_ERROR(ParseMetadata(proto.mutable_metadata()));
      if (proto.metadata().ByteSizeLong() == 0) proto.clear_metadata();
      return absl::OkStatus();
    case Attr::kFrontendAttributes:
      HLO_RETURN_IF_ERROR(
          ParseFrontendAttributes(proto.mutable_frontend_attributes()));
      if (proto.frontend_attributes().map().empty()) {
        proto.clear_frontend_attributes();
      }
      return absl::OkStatus();
    case Attr::kSharding:
      return ParseSharding(proto.mutable_sharding());
    case Attr::kEpsilon: {
      double epsilon;
      HLO_RETURN_IF_ERROR(ParseDouble(&epsilon));
      proto.set_epsilon(static_cast<float>(epsilon));
      return absl::OkStatus();
    }
    case Attr::kFeatureIndex:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      proto.set_feature_index(value);
      return absl::OkStatus();
    case Attr::kKind: {
      lexer_.SkipSpace();
      absl::string_view kind = lexer_.ConsumeWord();
      if (kind.empty()) return Expected("fusion kind");
      proto.set_fusion_kind(std::string(kind));
      return absl::OkStatus();
    }
    case Attr::kIsHostTransfer:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.set_is_host_transfer(flag);
      return absl::OkStatus();
    case Attr::kInfeedConfig:
      return ParseString(proto.mutable_infeed_config());
    case Attr::kOutfeedConfig:
      return ParseString(proto.mutable_outfeed_config());
    case Attr::kOutfeedShape:
      return ParseShape(proto.mutable_outfeed_shape());
    case Attr::kCustomCallHasSideEffect:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.set_custom_call_has_side_effect(flag);
      return absl::OkStatus();
    case Attr::kApiVersion: {
      xla::CustomCallApiVersion version{};
      HLO_RETURN_IF_ERROR(
          ParseEnum(xla::CustomCallApiVersion_descriptor(), "", &version));
      proto.set_custom_call_api_version(version);
      return absl::OkStatus();
    }
    case Attr::kSchedule: {
      xla::CustomCallSchedule schedule{};
      HLO_RETURN_IF_ERROR(ParseEnum(xla::CustomCallSchedule_descriptor(),
                                    "SCHEDULE_", &schedule));
      proto.set_custom_call_schedule(schedule);
      return absl::OkStatus();
    }
    case Attr::kOperandLayoutConstraints:
      proto.set_constrain_layout(true);
      HLO_RETURN_IF_ERROR(Expect('{'));
      if (lexer_.TryConsume('}')) return absl::OkStatus();
      while (true) {
        HLO_RETURN_IF_ERROR(ParseShape(proto.add_operand_shapes_with_layout()));
        if (lexer_.TryConsume('}')) return absl::OkStatus();
        HLO_RETURN_IF_ERROR(Expect(','));
      }
    case Attr::kOutputToOperandAliasing:
      HLO_RETURN_IF_ERROR(Expect('{'));
      if (lexer_.TryConsume('}')) return absl::OkStatus();
      while (true) {
        auto* alias = proto.add_output_operand_aliasing();
        HLO_RETURN_IF_ERROR(
            ParseShapeIndex(alias->mutable_output_shape_index()));
        HLO_RETURN_IF_ERROR(Expect(':'));
        HLO_RETURN_IF_ERROR(Expect('('));
        HLO_RETURN_IF_ERROR(ParseInt(&value));
        alias->set_operand_index(value);
        HLO_RETURN_IF_ERROR(Expect(','));
        HLO_RETURN_IF_ERROR(
            ParseShapeIndex(alias->mutable_operand_shape_index()));
        HLO_RETURN_IF_ERROR(Expect(')'));
        if (lexer_.TryConsume('}')) return absl::OkStatus();
        HLO_RETURN_IF_ERROR(Expect(','));
      }
    case Attr::kLeftSide:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.mutable_triangular_solve_options()->set_left_side(flag);
      return absl::OkStatus();
    case Attr::kLower:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      if (opcode == "cholesky") {
        proto.mutable_cholesky_options()->set_lower(flag);
      } else {
        proto.mutable_triangular_solve_options()->set_lower(flag);
      }
      return absl::OkStatus();
    case Attr::kUnitDiagonal:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.mutable_triangular_solve_options()->set_unit_diagonal(flag);
      return absl::OkStatus();
    case Attr::kTransposeA: {
      xla::TriangularSolveOptions::Transpose transpose{};
      HLO_RETURN_IF_ERROR(ParseEnum(
          xla::TriangularSolveOptions::Transpose_descriptor(), "", &transpose));
      proto.mutable_triangular_solve_options()->set_transpose_a(transpose);
      return absl::OkStatus();
    }
    case Attr::kDelta:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      proto.set_delta(value);
      return absl::OkStatus();
    case Attr::kUseGlobalDeviceIds:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.set_use_global_device_ids(flag);
      return absl::OkStatus();
    case Attr::kConstrainLayout:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.set_constrain_layout(flag);
      return absl::OkStatus();
    case Attr::kParameterReplication: {
      HLO_RETURN_IF_ERROR(Expect('{'));
      auto* replication = proto.mutable_parameter_replication();
      if (lexer_.TryConsume('}')) return absl::OkStatus();
      while (true) {
        HLO_RETURN_IF_ERROR(ParseBool(&flag));
        replication->add_replicated_at_leaf_buffers(flag);
        if (lexer_.TryConsume('}')) return absl::OkStatus();
        HLO_RETURN_IF_ERROR(Expect(','));
      }
    }
    case Attr::kK:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      proto.set_k(value);
      return absl::OkStatus();
    case Attr::kLargest:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.set_largest(flag);
      return absl::OkStatus();
    case Attr::kAsyncExecutionThread:
      return ParseString(proto.mutable_async_execution_thread());
    case Attr::kCrossProgramPrefetchIndex:
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      proto.set_cross_program_prefetch_index(static_cast<int32_t>(value));
      return absl::OkStatus();
    case Attr::kIsCrossProgramPrefetch:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.set_is_cross_program_prefetch(flag);
      return absl::OkStatus();
    case Attr::kStatistics:
      return ParseStatistics(proto.mutable_statistics_viz());
    case Attr::kSparsity:
      return ParseSparsity(&proto);
    case Attr::kIsComposite:
      HLO_RETURN_IF_ERROR(ParseBool(&flag));
      proto.set_is_composite(flag);
      return absl::OkStatus();
    case Attr::kDomain:
      return ParseDomain(&proto);
    case Attr::kResultAccuracy:
      return ParseResultAccuracy(proto.mutable_result_accuracy());
    case Attr::kPaddingType: {
      xla::PaddingType type{};
      HLO_RETURN_IF_ERROR(
          ParseEnum(xla::PaddingType_descriptor(), "PADDING_", &type));
      proto.set_padding_type(type);
      return absl::OkStatus();
    }
    case Attr::kUnknown:
      (void)key_pos;
      return SkipValue();
  }
  return SkipValue();
}

// --- Attribute values
// ---------------------------------------------------------

absl::Status Parser::ParseSlices(xla::HloInstructionProto* proto) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  if (lexer_.TryConsume('}')) return absl::OkStatus();
  while (true) {
    auto* slice = proto->add_slice_dimensions();
    int64_t value;
    HLO_RETURN_IF_ERROR(Expect('['));
    HLO_RETURN_IF_ERROR(ParseInt(&value));
    slice->set_start(value);
    HLO_RETURN_IF_ERROR(Expect(':'));
    HLO_RETURN_IF_ERROR(ParseInt(&value));
    slice->set_limit(value);
    slice->set_stride(1);
    if (lexer_.TryConsume(':')) {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      slice->set_stride(value);
    }
    HLO_RETURN_IF_ERROR(Expect(']'));
    if (lexer_.TryConsume('}')) return absl::OkStatus();
    HLO_RETURN_IF_ERROR(Expect(','));
  }
}

absl::Status Parser::ParseWindow(xla::Window* window) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  std::vector<int64_t> size, stride, lhs_dilate, rhs_dilate, reversal;
  std::vector<int64_t> pad_low, pad_high;
  bool has_size = false;
  const size_t start = lexer_.pos();
  while (!lexer_.TryConsume('}')) {
    lexer_.SkipSpace();
    const size_t at = lexer_.pos();
    absl::string_view key = lexer_.ConsumeWord();
    HLO_RETURN_IF_ERROR(Expect('='));
    lexer_.SkipSpace();
    if (key == "size") {
      HLO_RETURN_IF_ERROR(ParseSeparatedInts('x', &size));
      has_size = true;
    } else if (key == "stride") {
      HLO_RETURN_IF_ERROR(ParseSeparatedInts('x', &stride));
    } else if (key == "lhs_dilate") {
      HLO_RETURN_IF_ERROR(ParseSeparatedInts('x', &lhs_dilate));
    } else if (key == "rhs_dilate") {
      HLO_RETURN_IF_ERROR(ParseSeparatedInts('x', &rhs_dilate));
    } else if (key == "rhs_reversal") {
      HLO_RETURN_IF_ERROR(ParseSeparatedInts('x', &reversal));
    } else if (key == "pad") {
      pad_low.clear();
      pad_high.clear();
      while (true) {
        int64_t low, high;
        HLO_RETURN_IF_ERROR(ParseInt(&low));
        if (lexer_.PeekRaw() != '_') return Expected("'_'");
        lexer_.set_pos(lexer_.pos() + 1);
        HLO_RETURN_IF_ERROR(ParseInt(&high));
        pad_low.push_back(low);
        pad_high.push_back(high);
        if (lexer_.PeekRaw() != 'x') break;
        lexer_.set_pos(lexer_.pos() + 1);
      }
    } else {
      return ExpectedAt(at,
                        "window attribute (size, stride, pad, lhs_dilate, "
                        "rhs_dilate, rhs_reversal)");
    }
  }
  if (!has_size && (stride.size() + pad_low.size() + lhs_dilate.size() +
                    rhs_dilate.size() + reversal.size()) > 0) {
    return ErrorAt(start, "window has no size");
  }
  const size_t rank = size.size();
  auto check = [&](const std::vector<int64_t>& v) {
    return v.empty() || v.size() == rank;
  };
  if (!check(stride) || !check(lhs_dilate) || !check(rhs_dilate) ||
      !check(reversal) || !check(pad_low)) {
    return ErrorAt(start, "window attributes have different ranks");
  }
  for (size_t i = 0; i < rank; ++i) {
    auto* dim = window->add_dimensions();
    dim->set_size(size[i]);
    dim->set_stride(stride.empty() ? 1 : stride[i]);
    dim->set_padding_low(pad_low.empty() ? 0 : pad_low[i]);
    dim->set_padding_high(pad_high.empty() ? 0 : pad_high[i]);
    dim->set_base_dilation(lhs_dilate.empty() ? 1 : lhs_dilate[i]);
    dim->set_window_dilation(rhs_dilate.empty() ? 1 : rhs_dilate[i]);
    dim->set_window_reversal(!reversal.empty() && reversal[i] != 0);
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseDimLabels(xla::ConvolutionDimensionNumbers* dnums) {
  lexer_.SkipSpace();
  const size_t start = lexer_.pos();
  absl::string_view text = lexer_.text().substr(start);
  const size_t underscore = text.find('_');
  const size_t arrow = text.find("->");
  if (underscore == absl::string_view::npos ||
      arrow == absl::string_view::npos || arrow < underscore) {
    return ExpectedAt(start, "dim_labels like 'b01f_01io->b01f'");
  }
  size_t out_end = arrow + 2;
  while (out_end < text.size() &&
         (absl::ascii_isalnum(text[out_end]) || text[out_end] == '?')) {
    ++out_end;
  }
  absl::string_view input = text.substr(0, underscore);
  absl::string_view kernel =
      text.substr(underscore + 1, arrow - underscore - 1);
  absl::string_view output = text.substr(arrow + 2, out_end - arrow - 2);
  auto bad = [&](absl::string_view what) {
    return ErrorAt(start, absl::StrCat("bad dim_labels: ", what));
  };
  if (input.size() < 2 || input.size() != kernel.size() ||
      input.size() != output.size()) {
    return bad("input, kernel and output must have the same rank >= 2");
  }
  const int spatial = static_cast<int>(input.size()) - 2;
  auto parse_part =
      [&](absl::string_view labels, char a, char b, int64_t* pa, int64_t* pb,
          google::protobuf::RepeatedField<int64_t>* dims) -> bool {
    dims->Resize(spatial, -1);
    int found = 0;
    for (size_t i = 0; i < labels.size(); ++i) {
      const char c = labels[i];
      if (c == a) {
        *pa = static_cast<int64_t>(i);
        found |= 1;
      } else if (c == b) {
        *pb = static_cast<int64_t>(i);
        found |= 2;
      } else if (c >= '0' && c <= '9' && c - '0' < spatial &&
                 dims->Get(c - '0') == -1) {
        dims->Set(c - '0', static_cast<int64_t>(i));
      } else if (c != '?') {
        return false;
      }
    }
    if (found != 3) return false;
    for (int64_t d : *dims) {
      if (d < 0) return false;
    }
    return true;
  };
  int64_t batch = 0, feature = 0, in_feature = 0, out_feature = 0;
  int64_t out_batch = 0, out_out_feature = 0;
  if (!parse_part(input, 'b', 'f', &batch, &feature,
                  dnums->mutable_input_spatial_dimensions())) {
    return bad("input labels need b, f and spatial dimensions 0..n-1");
  }
  if (!parse_part(kernel, 'i', 'o', &in_feature, &out_feature,
                  dnums->mutable_kernel_spatial_dimensions())) {
    return bad("kernel labels need i, o and spatial dimensions 0..n-1");
  }
  if (!parse_part(output, 'b', 'f', &out_batch, &out_out_feature,
                  dnums->mutable_output_spatial_dimensions())) {
    return bad("output labels need b, f and spatial dimensions 0..n-1");
  }
  dnums->set_input_batch_dimension(batch);
  dnums->set_input_feature_dimension(feature);
  dnums->set_kernel_input_feature_dimension(in_feature);
  dnums->set_kernel_output_feature_dimension(out_feature);
  dnums->set_output_batch_dimension(out_batch);
  dnums->set_output_feature_dimension(out_out_feature);
  lexer_.set_pos(start + out_end);
  return absl::OkStatus();
}

absl::Status Parser::ParsePadding(xla::PaddingConfig* padding) {
  lexer_.SkipSpaceOnLine();
  const char c = lexer_.PeekRaw();
  if (!(c == '-' || (c >= '0' && c <= '9'))) {
    return absl::OkStatus();  // Rank 0: "padding=" with nothing after it.
  }
  while (true) {
    std::vector<int64_t> parts;
    HLO_RETURN_IF_ERROR(ParseSeparatedInts('_', &parts));
    if (parts.size() != 2 && parts.size() != 3) {
      return Expected("padding 'low_high' or 'low_high_interior'");
    }
    auto* dim = padding->add_dimensions();
    dim->set_edge_padding_low(parts[0]);
    dim->set_edge_padding_high(parts[1]);
    dim->set_interior_padding(parts.size() == 3 ? parts[2] : 0);
    if (lexer_.PeekRaw() != 'x') return absl::OkStatus();
    lexer_.set_pos(lexer_.pos() + 1);
  }
}

absl::Status Parser::ParseIotaList(std::vector<int64_t>* reshape,
                                   std::vector<int64_t>* perm) {
  // '<=' '[' dims ']' ['T' '(' perm ')']
  HLO_RETURN_IF_ERROR(ExpectStr("<="));
  HLO_RETURN_IF_ERROR(Expect('['));
  const size_t at = lexer_.pos();
  reshape->clear();
  perm->clear();
  while (true) {
    int64_t v;
    HLO_RETURN_IF_ERROR(ParseInt(&v));
    if (v <= 0) return ErrorAt(at, "iota dimensions must be positive");
    reshape->push_back(v);
    if (lexer_.TryConsume(']')) break;
    HLO_RETURN_IF_ERROR(Expect(','));
  }
  if (lexer_.PeekRaw() == 'T' && lexer_.PeekRawAt(1) == '(') {
    lexer_.set_pos(lexer_.pos() + 2);
    const size_t perm_pos = lexer_.pos();
    while (true) {
      int64_t v;
      HLO_RETURN_IF_ERROR(ParseInt(&v));
      perm->push_back(v);
      if (lexer_.TryConsume(')')) break;
      HLO_RETURN_IF_ERROR(Expect(','));
    }
    std::vector<int64_t> sorted = *perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (sorted[i] != static_cast<int64_t>(i) ||
          sorted.size() != reshape->size()) {
        return ErrorAt(perm_pos,
                       "iota transpose is not a permutation of the "
                       "reshape dimensions");
      }
    }
  } else {
    for (size_t i = 0; i < reshape->size(); ++i) perm->push_back(i);
  }
  return absl::OkStatus();
}

// Device ids of an iota list: iota(prod(reshape)) reshaped, then transposed.
std::vector<int64_t> ExpandIota(const std::vector<int64_t>& reshape,
                                const std::vector<int64_t>& perm) {
  const size_t rank = reshape.size();
  int64_t count = 1;
  for (int64_t d : reshape) count *= d;
  std::vector<int64_t> strides(rank, 1);
  for (int i = static_cast<int>(rank) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * reshape[i + 1];
  }
  std::vector<int64_t> result(count);
  std::vector<int64_t> index(rank, 0);  // Index in the transposed array.
  for (int64_t k = 0; k < count; ++k) {
    int64_t source = 0;
    for (size_t i = 0; i < rank; ++i) source += index[i] * strides[perm[i]];
    result[k] = source;
    for (int i = static_cast<int>(rank) - 1; i >= 0; --i) {
      if (++index[i] < reshape[perm[i]]) break;
      index[i] = 0;
    }
  }
  return result;
}

absl::Status Parser::ParseReplicaGroups(
    google::protobuf::RepeatedPtrField<xla::ReplicaGroup>* groups) {
  if (lexer_.Peek() == '[') {
    const size_t at = lexer_.pos();
    lexer_.set_pos(at + 1);
    int64_t num_groups, group_size;
    HLO_RETURN_IF_ERROR(ParseInt(&num_groups));
    HLO_RETURN_IF_ERROR(Expect(','));
    HLO_RETURN_IF_ERROR(ParseInt(&group_size));
    HLO_RETURN_IF_ERROR(Expect(']'));
    std::vector<int64_t> reshape, perm;
    HLO_RETURN_IF_ERROR(ParseIotaList(&reshape, &perm));
    std::vector<int64_t> ids = ExpandIota(reshape, perm);
    if (num_groups < 0 || group_size < 0 ||
        num_groups * group_size != static_cast<int64_t>(ids.size())) {
      return ErrorAt(
          at, absl::StrCat("iota replica groups [", num_groups, ",", group_size,
                           "] do not cover ", ids.size(), " devices"));
    }
    for (int64_t g = 0; g < num_groups; ++g) {
      auto* group = groups->Add();
      for (int64_t i = 0; i < group_size; ++i) {
        group->add_replica_ids(ids[g * group_size + i]);
      }
    }
    return absl::OkStatus();
  }
  HLO_RETURN_IF_ERROR(Expect('{'));
  if (lexer_.TryConsume('}')) return absl::OkStatus();
  while (true) {
    HLO_RETURN_IF_ERROR(ParseIntList(groups->Add()->mutable_replica_ids()));
    if (lexer_.TryConsume('}')) return absl::OkStatus();
    HLO_RETURN_IF_ERROR(Expect(','));
  }
}

absl::Status Parser::ParseSharding(xla::OpSharding* sharding) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  const char first = lexer_.Peek();
  if (first == '{' || first == '}') {
    sharding->set_type(xla::OpSharding::TUPLE);
    if (lexer_.TryConsume('}')) return absl::OkStatus();
    while (true) {
      HLO_RETURN_IF_ERROR(ParseSharding(sharding->add_tuple_shardings()));
      if (lexer_.TryConsume('}')) return absl::OkStatus();
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  bool maximal = false;
  while (!lexer_.TryConsume('}')) {
    lexer_.SkipSpace();
    const size_t at = lexer_.pos();
    absl::string_view word = lexer_.ConsumeWord();
    int64_t value;
    if (word == "replicated") {
      sharding->set_type(xla::OpSharding::REPLICATED);
    } else if (word == "maximal") {
      sharding->set_type(xla::OpSharding::MAXIMAL);
      maximal = true;
    } else if (word == "manual") {
      sharding->set_type(xla::OpSharding::MANUAL);
    } else if (word == "unknown") {
      sharding->set_type(xla::OpSharding::UNKNOWN);
    } else if (word == "unreduced") {
      sharding->set_type(xla::OpSharding::UNREDUCED);
    } else if (word == "device") {
      HLO_RETURN_IF_ERROR(Expect('='));
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      if (!maximal) return ErrorAt(at, "'device=' needs 'maximal'");
      sharding->add_tile_assignment_dimensions(1);
      sharding->add_tile_assignment_devices(value);
    } else if (word == "devices") {
      HLO_RETURN_IF_ERROR(Expect('='));
      sharding->set_type(xla::OpSharding::OTHER);
      HLO_RETURN_IF_ERROR(Expect('['));
      while (true) {
        HLO_RETURN_IF_ERROR(ParseInt(&value));
        sharding->add_tile_assignment_dimensions(value);
        if (lexer_.TryConsume(']')) break;
        HLO_RETURN_IF_ERROR(Expect(','));
      }
      if (lexer_.Peek() == '<') {
        std::vector<int64_t> reshape, perm;
        HLO_RETURN_IF_ERROR(ParseIotaList(&reshape, &perm));
        for (int64_t d : reshape) sharding->add_iota_reshape_dims(d);
        for (int64_t p : perm) {
          sharding->add_iota_transpose_perm(static_cast<int32_t>(p));
        }
      } else {
        while (true) {
          HLO_RETURN_IF_ERROR(ParseInt(&value));
          sharding->add_tile_assignment_devices(value);
          if (lexer_.Peek() != ',') break;
          lexer_.set_pos(lexer_.pos() + 1);
        }
      }
    } else if (word == "last_tile_dim_replicate") {
      sharding->set_replicate_on_last_tile_dim(true);
    } else if (word == "last_tile_dims") {
      HLO_RETURN_IF_ERROR(Expect('='));
      HLO_RETURN_IF_ERROR(Expect('{'));
      while (!lexer_.TryConsume('}')) {
        lexer_.SkipSpace();
        const size_t type_pos = lexer_.pos();
        absl::string_view type = lexer_.ConsumeWord();
        if (type == "replicated") {
          sharding->add_last_tile_dims(xla::OpSharding::REPLICATED);
        } else if (type == "manual") {
          sharding->add_last_tile_dims(xla::OpSharding::MANUAL);
        } else if (type == "unreduced") {
          sharding->add_last_tile_dims(xla::OpSharding::UNREDUCED);
        } else if (type == "maximal") {
          sharding->add_last_tile_dims(xla::OpSharding::MAXIMAL);
        } else {
          return ExpectedAt(type_pos, "sharding type");
        }
        lexer_.TryConsume(',');
      }
    } else if (word == "metadata") {
      HLO_RETURN_IF_ERROR(Expect('='));
      // Either one metadata "{...}" or a list "{{...}, {...}}".
      const size_t brace = lexer_.pos();
      HLO_RETURN_IF_ERROR(Expect('{'));
      if (lexer_.Peek() == '{' || lexer_.Peek() == '}') {
        while (!lexer_.TryConsume('}')) {
          HLO_RETURN_IF_ERROR(ParseMetadata(sharding->add_metadata()));
          lexer_.TryConsume(',');
        }
      } else {
        lexer_.set_pos(brace);
        HLO_RETURN_IF_ERROR(ParseMetadata(sharding->add_metadata()));
      }
    } else if (word == "shard_as" || word == "shard_like") {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      sharding->set_is_shard_group(true);
      sharding->set_shard_group_id(value);
      sharding->set_shard_group_type(
          word == "shard_as" ? xla::OpSharding::AS : xla::OpSharding::LIKE);
    } else {
      return ExpectedAt(at, "sharding attribute");
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseMetadata(xla::OpMetadata* metadata) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  while (!lexer_.TryConsume('}')) {
    lexer_.SkipSpace();
    absl::string_view key = lexer_.ConsumeWord();
    if (key.empty()) return Expected("metadata attribute or '}'");
    HLO_RETURN_IF_ERROR(Expect('='));
    int64_t value;
    if (key == "op_type") {
      HLO_RETURN_IF_ERROR(ParseString(metadata->mutable_op_type()));
    } else if (key == "op_name") {
      HLO_RETURN_IF_ERROR(ParseString(metadata->mutable_op_name()));
    } else if (key == "source_file") {
      HLO_RETURN_IF_ERROR(ParseString(metadata->mutable_source_file()));
    } else if (key == "deduplicated_name") {
      HLO_RETURN_IF_ERROR(ParseString(metadata->mutable_deduplicated_name()));
    } else if (key == "scheduling_name") {
      HLO_RETURN_IF_ERROR(ParseString(metadata->mutable_scheduling_name()));
    } else if (key == "source_line") {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      metadata->set_source_line(static_cast<int32_t>(value));
    } else if (key == "source_end_line") {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      metadata->set_source_end_line(static_cast<int32_t>(value));
    } else if (key == "source_column") {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      metadata->set_source_column(static_cast<int32_t>(value));
    } else if (key == "source_end_column") {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      metadata->set_source_end_column(static_cast<int32_t>(value));
    } else if (key == "stack_frame_id") {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      metadata->set_stack_frame_id(static_cast<int32_t>(value));
    } else if (key == "size_of_generated_code_in_bytes") {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      metadata->set_size_of_generated_code_in_bytes(value);
    } else if (key == "size_of_memory_working_set_in_bytes") {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      metadata->set_size_of_memory_working_set_in_bytes(value);
    } else if (key == "creation_pass_id") {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      metadata->set_creation_pass_id(value);
    } else if (key == "logical_creation_pass_id") {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      metadata->set_logical_creation_pass_id(value);
    } else if (key == "profile_type") {
      HLO_RETURN_IF_ERROR(Expect('{'));
      while (!lexer_.TryConsume('}')) {
        xla::ProfileType type{};
        HLO_RETURN_IF_ERROR(
            ParseEnum(xla::ProfileType_descriptor(), "", &type));
        metadata->add_profile_type(type);
        lexer_.TryConsume(',');
      }
    } else {
      HLO_RETURN_IF_ERROR(SkipValue());
    }
    lexer_.TryConsume(',');
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseFrontendAttributes(
    xla::FrontendAttributes* attributes) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  while (!lexer_.TryConsume('}')) {
    std::string key;
    if (lexer_.Peek() == '"') {
      HLO_RETURN_IF_ERROR(ParseString(&key));
    } else {
      absl::string_view word = lexer_.ConsumeWord();
      if (word.empty()) return Expected("attribute name or '}'");
      key = std::string(word);
    }
    HLO_RETURN_IF_ERROR(Expect('='));
    std::string value;
    if (lexer_.Peek() == '"') {
      HLO_RETURN_IF_ERROR(ParseString(&value));
    } else if (lexer_.Peek() == '{') {
      const size_t at = lexer_.pos();
      if (!lexer_.SkipBalanced()) return ErrorAt(at, "unbalanced value");
      value = std::string(lexer_.text().substr(at, lexer_.pos() - at));
    } else {
      absl::string_view word = lexer_.ConsumeWord();
      if (word.empty()) return Expected("attribute value");
      value = std::string(word);
    }
    (*attributes->mutable_map())[key] = std::move(value);
    if (!lexer_.TryConsume(',') && lexer_.Peek() != '}') {
      return Expected("',' or '}'");
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseStatistics(xla::StatisticsViz* statistics) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  while (!lexer_.TryConsume('}')) {
    lexer_.SkipSpace();
    absl::string_view key = lexer_.ConsumeWord();
    if (key.empty()) return Expected("statistic name or '}'");
    HLO_RETURN_IF_ERROR(Expect('='));
    if (key == "visualizing_index") {
      int64_t index;
      HLO_RETURN_IF_ERROR(ParseInt(&index));
      statistics->set_stat_index_to_visualize(index);
    } else {
      double value;
      HLO_RETURN_IF_ERROR(ParseDouble(&value));
      auto* stat = statistics->add_statistics();
      stat->set_stat_name(std::string(key));
      stat->set_stat_val(value);
    }
    lexer_.TryConsume(',');
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseSparsity(xla::HloInstructionProto* proto) {
  // L.1@2:4_R.0@2:4
  while (true) {
    lexer_.SkipSpace();
    const char side = lexer_.PeekRaw();
    if (side != 'L' && side != 'R') return Expected("'L' or 'R'");
    lexer_.set_pos(lexer_.pos() + 1);
    HLO_RETURN_IF_ERROR(Expect('.'));
    int64_t dim, n, m;
    HLO_RETURN_IF_ERROR(ParseInt(&dim));
    HLO_RETURN_IF_ERROR(Expect('@'));
    HLO_RETURN_IF_ERROR(ParseInt(&n));
    HLO_RETURN_IF_ERROR(Expect(':'));
    HLO_RETURN_IF_ERROR(ParseInt(&m));
    auto* sparsity = proto->add_dot_sparsity();
    sparsity->set_type(xla::SPARSITY_STRUCTURED_N_M);
    sparsity->set_index(side == 'L' ? 0 : 1);
    sparsity->set_dimension(static_cast<int32_t>(dim));
    sparsity->set_n(static_cast<int32_t>(n));
    sparsity->set_m(static_cast<int32_t>(m));
    if (lexer_.PeekRaw() != '_') return absl::OkStatus();
    lexer_.set_pos(lexer_.pos() + 1);
  }
}

absl::Status Parser::ParseDomain(xla::HloInstructionProto* proto) {
  // {kind="sharding", entry={...}, exit={...}}
  HLO_RETURN_IF_ERROR(Expect('{'));
  while (!lexer_.TryConsume('}')) {
    lexer_.SkipSpace();
    const size_t at = lexer_.pos();
    absl::string_view key = lexer_.ConsumeWord();
    HLO_RETURN_IF_ERROR(Expect('='));
    if (key == "kind") {
      std::string kind;
      HLO_RETURN_IF_ERROR(ParseString(&kind));
    } else if (key == "entry") {
      HLO_RETURN_IF_ERROR(
          ParseSharding(proto->mutable_domain_entry_sharding()));
    } else if (key == "exit") {
      HLO_RETURN_IF_ERROR(ParseSharding(proto->mutable_domain_exit_sharding()));
    } else {
      return ExpectedAt(at, "'kind', 'entry' or 'exit'");
    }
    lexer_.TryConsume(',');
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseResultAccuracy(xla::ResultAccuracy* accuracy) {
  // {mode=highest} or {tolerance={atol=0,rtol=0,ulps=1}}
  HLO_RETURN_IF_ERROR(Expect('{'));
  while (!lexer_.TryConsume('}')) {
    lexer_.SkipSpace();
    const size_t at = lexer_.pos();
    absl::string_view key = lexer_.ConsumeWord();
    HLO_RETURN_IF_ERROR(Expect('='));
    if (key == "mode") {
      xla::ResultAccuracy::Mode mode{};
      HLO_RETURN_IF_ERROR(
          ParseEnum(xla::ResultAccuracy::Mode_descriptor(), "", &mode));
      accuracy->set_mode(mode);
    } else if (key == "tolerance") {
      auto* tolerance = accuracy->mutable_tolerance();
      HLO_RETURN_IF_ERROR(Expect('{'));
      while (!lexer_.TryConsume('}')) {
        lexer_.SkipSpace();
        const size_t tat = lexer_.pos();
        absl::string_view tkey = lexer_.ConsumeWord();
        HLO_RETURN_IF_ERROR(Expect('='));
        double v;
        HLO_RETURN_IF_ERROR(ParseDouble(&v));
        if (tkey == "atol") {
          tolerance->set_atol(v);
        } else if (tkey == "rtol") {
          tolerance->set_rtol(v);
        } else if (tkey == "ulps") {
          tolerance->set_ulps(static_cast<int64_t>(v));
        } else {
          return ExpectedAt(tat, "'atol', 'rtol' or 'ulps'");
        }
        lexer_.TryConsume(',');
      }
    } else {
      return ExpectedAt(at, "'mode' or 'tolerance'");
    }
    lexer_.TryConsume(',');
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseBackendConfig(std::string* config) {
  if (lexer_.Peek() == '{') {
    // Raw JSON as newer XLA prints it.
    const size_t at = lexer_.pos();
    if (!lexer_.SkipBalanced()) return ErrorAt(at, "unbalanced backend_config");
    config->assign(lexer_.text().data() + at, lexer_.pos() - at);
    return absl::OkStatus();
  }
  return ParseString(config);
}

// --- Literals ---------------------------------------------------------------

absl::Status Parser::ParseFloatValue(xla::PrimitiveType type, double* value,
                                     float* single) {
  lexer_.SkipSpace();
  const size_t at = lexer_.pos();
  absl::string_view text = lexer_.ConsumeNumber();
  if (text.empty()) return Expected("number");
  const bool negative = text[0] == '-';
  absl::string_view body =
      text.substr(text[0] == '-' || text[0] == '+' ? 1 : 0);
  if (body == "inf") {
    *value = negative ? -HUGE_VAL : HUGE_VAL;
    *single = static_cast<float>(*value);
    return absl::OkStatus();
  }
  if (absl::StartsWith(body, "nan")) {
    uint64_t payload = 0;
    bool has_payload = false;
    if (body.size() > 3) {
      absl::string_view hex = body.substr(4, body.size() - 5);
      if (absl::StartsWith(hex, "0x") || absl::StartsWith(hex, "0X")) {
        hex.remove_prefix(2);
      }
      auto result =
          std::from_chars(hex.data(), hex.data() + hex.size(), payload, 16);
      if (result.ec != std::errc() || result.ptr != hex.data() + hex.size() ||
          payload == 0) {
        return ErrorAt(at, "bad NaN payload");
      }
      has_payload = true;
    }
    uint64_t bits64 = 0x7ff8000000000000ull;
    uint32_t bits32 = 0x7fc00000u;
    if (has_payload) {
      bits64 = 0x7ff0000000000000ull | (payload & 0xfffffffffffffull);
      bits32 = 0x7f800000u | static_cast<uint32_t>(payload & 0x7fffff);
    }
    if (negative) {
      bits64 |= 1ull << 63;
      bits32 |= 1u << 31;
    }
    std::memcpy(value, &bits64, 8);
    std::memcpy(single, &bits32, 4);
    return absl::OkStatus();
  }
  const bool wide = type == xla::F64 || type == xla::C128;
  absl::string_view unsigned_text = body;
  const bool hex = absl::StartsWith(unsigned_text, "0x") ||
                   absl::StartsWith(unsigned_text, "0X");
  std::chars_format format = std::chars_format::general;
  if (hex) {
    unsigned_text.remove_prefix(2);
    format = std::chars_format::hex;
  }
  const char* first = unsigned_text.data();
  const char* last = first + unsigned_text.size();
  std::from_chars_result result;
  if (wide) {
    result = std::from_chars(first, last, *value, format);
    if (negative) *value = -*value;
    *single = static_cast<float>(*value);
  } else {
    // f32 and narrower types read as float directly (no double rounding for
    // f32; f16/bf16/f8 values printed by XLA are exact floats).
    result = std::from_chars(first, last, *single, format);
    if (negative) *single = -*single;
    *value = *single;
  }
  if (result.ec == std::errc::result_out_of_range) {
    // Overflow reads as infinity, underflow as zero (like strtod).
    const bool tiny =
        unsigned_text.find_first_of("eEpP") != absl::string_view::npos &&
        unsigned_text.find('-') != absl::string_view::npos;
    const double magnitude = tiny ? 0.0 : HUGE_VAL;
    *value = negative ? -magnitude : magnitude;
    *single = static_cast<float>(*value);
  } else if (result.ec != std::errc() || result.ptr != last) {
    return ErrorAt(at, absl::StrCat("expected number, got '", text, "'"));
  }
  return absl::OkStatus();
}

// Byte-per-element storage of `type` in a LiteralProto, or nullptr.
std::string* BytesField(xla::PrimitiveType type, xla::LiteralProto* literal) {
  switch (type) {
    case xla::S1:
      return literal->mutable_s1s();
    case xla::S2:
      return literal->mutable_s2s();
    case xla::S4:
      return literal->mutable_s4s();
    case xla::S8:
      return literal->mutable_s8s();
    case xla::U1:
      return literal->mutable_u1s();
    case xla::U2:
      return literal->mutable_u2s();
    case xla::U4:
      return literal->mutable_u4s();
    case xla::U8:
      return literal->mutable_u8s();
    case xla::S16:
      return literal->mutable_s16s();
    case xla::U16:
      return literal->mutable_u16s();
    case xla::F16:
      return literal->mutable_f16s();
    case xla::BF16:
      return literal->mutable_bf16s();
    case xla::F8E5M2:
      return literal->mutable_f8e5m2s();
    case xla::F8E4M3:
      return literal->mutable_f8e4m3s();
    case xla::F8E4M3FN:
      return literal->mutable_f8e4m3fns();
    case xla::F8E4M3B11FNUZ:
      return literal->mutable_f8e4m3b11fnuzs();
    case xla::F8E3M4:
      return literal->mutable_f8e3m4s();
    case xla::F8E5M2FNUZ:
      return literal->mutable_f8e5m2fnuzs();
    case xla::F8E4M3FNUZ:
      return literal->mutable_f8e4m3fnuzs();
    case xla::F4E2M1FN:
      return literal->mutable_f4e2m1fns();
    case xla::F8E8M0FNU:
      return literal->mutable_f8e8m0fnus();
    default:
      return nullptr;
  }
}

void AppendLittleEndian16(uint16_t v, std::string* out) {
  out->push_back(static_cast<char>(v & 0xff));
  out->push_back(static_cast<char>(v >> 8));
}

// Stores the real value `v` (or integer `i` for integer types) of `type`.
void StoreValue(xla::PrimitiveType type, double v, float single, int64_t i,
                uint64_t u, xla::LiteralProto* literal) {
  using namespace text_internal;  // NOLINT
  switch (type) {
    case xla::PRED:
      literal->add_preds(i != 0);
      return;
    case xla::S32:
      literal->add_s32s(static_cast<int32_t>(i));
      return;
    case xla::S64:
      literal->add_s64s(i);
      return;
    case xla::U32:
      literal->add_u32s(static_cast<uint32_t>(u));
      return;
    case xla::U64:
      literal->add_u64s(u);
      return;
    case xla::F32:
      literal->add_f32s(single);
      return;
    case xla::F64:
      literal->add_f64s(v);
      return;
    case xla::F16:
      AppendLittleEndian16(FloatToHalf(single), literal->mutable_f16s());
      return;
    case xla::BF16:
      AppendLittleEndian16(FloatToBf16(single), literal->mutable_bf16s());
      return;
    case xla::S16:
      AppendLittleEndian16(static_cast<uint16_t>(i), literal->mutable_s16s());
      return;
    case xla::U16:
      AppendLittleEndian16(static_cast<uint16_t>(u), literal->mutable_u16s());
      return;
    default:
      break;
  }
  std::string* bytes = BytesField(type, literal);
  if (bytes == nullptr) return;
  if (IsMiniFloatType(type)) {
    bytes->push_back(static_cast<char>(EncodeMiniFloat(type, v)));
  } else if (IsSignedIntType(type)) {
    bytes->push_back(static_cast<char>(static_cast<int8_t>(i)));
  } else {
    bytes->push_back(static_cast<char>(static_cast<uint8_t>(u)));
  }
}

absl::Status Parser::ParseElement(xla::PrimitiveType type,
                                  xla::LiteralProto* literal) {
  using namespace text_internal;  // NOLINT
  lexer_.SkipSpace();
  const size_t at = lexer_.pos();
  if (type == xla::PRED) {
    absl::string_view word = lexer_.ConsumeWord();
    if (word == "true" || word == "1") {
      literal->add_preds(true);
    } else if (word == "false" || word == "0") {
      literal->add_preds(false);
    } else {
      lexer_.set_pos(at);
      return Expected("'true' or 'false'");
    }
    return absl::OkStatus();
  }
  if (IsComplexType(type)) {
    HLO_RETURN_IF_ERROR(Expect('('));
    double re, im;
    float re32, im32;
    HLO_RETURN_IF_ERROR(ParseFloatValue(type, &re, &re32));
    HLO_RETURN_IF_ERROR(Expect(','));
    HLO_RETURN_IF_ERROR(ParseFloatValue(type, &im, &im32));
    HLO_RETURN_IF_ERROR(Expect(')'));
    if (type == xla::C64) {
      literal->add_c64s(re32);
      literal->add_c64s(im32);
    } else {
      literal->add_c128s(re);
      literal->add_c128s(im);
    }
    return absl::OkStatus();
  }
  if (IsFloatType(type)) {
    double v;
    float single;
    HLO_RETURN_IF_ERROR(ParseFloatValue(type, &v, &single));
    StoreValue(type, v, single, 0, 0, literal);
    return absl::OkStatus();
  }
  // Integers.
  absl::string_view text = lexer_.ConsumeNumber();
  if (text.empty()) return Expected("integer");
  const int bits = IntBitWidth(type);
  int64_t i = 0;
  uint64_t u = 0;
  absl::string_view digits = text;
  if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
  if (IsSignedIntType(type)) {
    auto result =
        std::from_chars(digits.data(), digits.data() + digits.size(), i);
    if (result.ec != std::errc() ||
        result.ptr != digits.data() + digits.size()) {
      return ErrorAt(at, absl::StrCat("expected integer, got '", text, "'"));
    }
    const int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max()
                                   : (int64_t{1} << (bits - 1)) - 1;
    const int64_t min =
        bits == 64 ? std::numeric_limits<int64_t>::min() : -max - 1;
    if (i < min || i > max) {
      return ErrorAt(at, absl::StrCat("value ", text, " out of range for ",
                                      PrimitiveTypeName(type)));
    }
    u = static_cast<uint64_t>(i);
  } else {
    auto result =
        std::from_chars(digits.data(), digits.data() + digits.size(), u);
    if (result.ec != std::errc() ||
        result.ptr != digits.data() + digits.size()) {
      return ErrorAt(
          at, absl::StrCat("expected unsigned integer, got '", text, "'"));
    }
    if (bits < 64 && u > (uint64_t{1} << bits) - 1) {
      return ErrorAt(at, absl::StrCat("value ", text, " out of range for ",
                                      PrimitiveTypeName(type)));
    }
    i = static_cast<int64_t>(u);
  }
  StoreValue(type, 0, 0, i, u, literal);
  return absl::OkStatus();
}

absl::Status Parser::ParseArrayElements(const xla::ShapeProto& shape, int dim,
                                        xla::LiteralProto* literal) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  const int64_t n = shape.dimensions(dim);
  const bool innermost = dim + 1 == shape.dimensions_size();
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) HLO_RETURN_IF_ERROR(Expect(','));
    if (innermost) {
      HLO_RETURN_IF_ERROR(ParseElement(shape.element_type(), literal));
    } else {
      HLO_RETURN_IF_ERROR(ParseArrayElements(shape, dim + 1, literal));
    }
  }
  return Expect('}');
}

template <typename T>
void PermuteRepeated(const std::vector<int64_t>& to_physical, int group,
                     google::protobuf::RepeatedField<T>* field) {
  google::protobuf::RepeatedField<T> copy(*field);
  for (size_t l = 0; l < to_physical.size(); ++l) {
    for (int g = 0; g < group; ++g) {
      field->Set(to_physical[l] * group + g, copy.Get(l * group + g));
    }
  }
}

void PermuteBytes(const std::vector<int64_t>& to_physical, int width,
                  std::string* bytes) {
  std::string copy = *bytes;
  for (size_t l = 0; l < to_physical.size(); ++l) {
    std::memcpy(&(*bytes)[to_physical[l] * width], &copy[l * width], width);
  }
}

// Reorders literal data from row-major to the shape's layout order.
void PermuteToLayout(const xla::ShapeProto& shape, xla::LiteralProto* literal) {
  const std::vector<int64_t> to_physical =
      text_internal::LogicalToPhysicalIndices(shape);
  if (to_physical.empty()) return;
  const xla::PrimitiveType type = shape.element_type();
  switch (type) {
    case xla::PRED:
      PermuteRepeated(to_physical, 1, literal->mutable_preds());
      return;
    case xla::S32:
      PermuteRepeated(to_physical, 1, literal->mutable_s32s());
      return;
    case xla::S64:
      PermuteRepeated(to_physical, 1, literal->mutable_s64s());
      return;
    case xla::U32:
      PermuteRepeated(to_physical, 1, literal->mutable_u32s());
      return;
    case xla::U64:
      PermuteRepeated(to_physical, 1, literal->mutable_u64s());
      return;
    case xla::F32:
      PermuteRepeated(to_physical, 1, literal->mutable_f32s());
      return;
    case xla::F64:
      PermuteRepeated(to_physical, 1, literal->mutable_f64s());
      return;
    case xla::C64:
      PermuteRepeated(to_physical, 2, literal->mutable_c64s());
      return;
    case xla::C128:
      PermuteRepeated(to_physical, 2, literal->mutable_c128s());
      return;
    default:
      break;
  }
  std::string* bytes = BytesField(type, literal);
  if (bytes == nullptr) return;
  const int width = (type == xla::S16 || type == xla::U16 || type == xla::F16 ||
                     type == xla::BF16)
                        ? 2
                        : 1;
  PermuteBytes(to_physical, width, bytes);
}

void ReserveElements(xla::PrimitiveType type, int64_t count,
                     xla::LiteralProto* literal) {
  if (count > (int64_t{1} << 28)) return;  // Let it grow; avoid huge reserves.
  const int n = static_cast<int>(count);
  switch (type) {
    case xla::PRED:
      literal->mutable_preds()->Reserve(n);
      return;
    case xla::S32:
      literal->mutable_s32s()->Reserve(n);
      return;
    case xla::S64:
      literal->mutable_s64s()->Reserve(n);
      return;
    case xla::U32:
      literal->mutable_u32s()->Reserve(n);
      return;
    case xla::U64:
      literal->mutable_u64s()->Reserve(n);
      return;
    case xla::F32:
      literal->mutable_f32s()->Reserve(n);
      return;
    case xla::F64:
      literal->mutable_f64s()->Reserve(n);
      return;
    case xla::C64:
      literal->mutable_c64s()->Reserve(2 * n);
      return;
    case xla::C128:
      literal->mutable_c128s()->Reserve(2 * n);
      return;
    default: {
      std::string* bytes = BytesField(type, literal);
      if (bytes != nullptr) bytes->reserve(2 * count);
    }
  }
}

absl::Status Parser::ParseLiteral(const xla::ShapeProto& shape,
                                  xla::LiteralProto* literal) {
  using namespace text_internal;  // NOLINT
  *literal->mutable_shape() = shape;
  const xla::PrimitiveType type = shape.element_type();
  if (type == xla::TUPLE) {
    HLO_RETURN_IF_ERROR(Expect('('));
    for (int i = 0; i < shape.tuple_shapes_size(); ++i) {
      if (i > 0) HLO_RETURN_IF_ERROR(Expect(','));
      HLO_RETURN_IF_ERROR(
          ParseLiteral(shape.tuple_shapes(i), literal->add_tuple_literals()));
    }
    return Expect(')');
  }
  if (!IsArrayType(type)) {
    return Expected(
        absl::StrCat("no literal for type ", PrimitiveTypeName(type)));
  }
  // Old XLA repeated the shape inside the literal: "f32[2] {1, 2}".
  lexer_.SkipSpace();
  const size_t at = lexer_.pos();
  {
    absl::string_view word = lexer_.ConsumeWord();
    xla::PrimitiveType ignored;
    if (!word.empty() && lexer_.PeekRaw() == '[' &&
        PrimitiveTypeFromName(word, &ignored)) {
      lexer_.set_pos(at);
      xla::ShapeProto declared;
      HLO_RETURN_IF_ERROR(ParseShape(&declared));
    } else {
      lexer_.set_pos(at);
    }
  }
  const int64_t count = ElementCount(shape);
  // Elided: "{...}".
  if (lexer_.Peek() == '{') {
    const size_t brace = lexer_.pos();
    lexer_.set_pos(brace + 1);
    if (lexer_.TryConsume("...")) {
      HLO_RETURN_IF_ERROR(Expect('}'));
      FillElided(type, count, literal);
      return absl::OkStatus();
    }
    lexer_.set_pos(brace);
  }
  ReserveElements(type, count, literal);
  if (shape.dimensions_size() == 0) {
    HLO_RETURN_IF_ERROR(ParseElement(type, literal));
  } else {
    HLO_RETURN_IF_ERROR(ParseArrayElements(shape, 0, literal));
  }
  PermuteToLayout(shape, literal);
  return absl::OkStatus();
}

// --- Resolution -------------------------------------------------------------

absl::Status Parser::Resolve(xla::HloModuleProto* module) {
  using namespace text_internal;  // NOLINT
  const int num_computations = static_cast<int>(computations_.size());
  absl::flat_hash_map<absl::string_view, int> computation_index;
  int entry = -1;
  for (int c = 0; c < num_computations; ++c) {
    const PendingComputation& computation = computations_[c];
    if (!computation_index.emplace(computation.name, c).second) {
      return ErrorAt(
          computation.pos,
          absl::StrCat("duplicate computation name '", computation.name, "'"));
    }
    if (computation.is_entry) {
      if (entry >= 0) {
        return ErrorAt(computation.pos, "more than one ENTRY computation");
      }
      entry = c;
    }
  }
  if (entry < 0) entry = num_computations - 1;

  // Resolve names.
  std::vector<bool> is_fusion(num_computations, false);
  for (PendingComputation& computation : computations_) {
    for (PendingInstruction& instruction : computation.instructions) {
      instruction.operand_index.reserve(instruction.operands.size());
      for (const NameRef& ref : instruction.operands) {
        auto it = computation.by_name.find(ref.name);
        if (it == computation.by_name.end()) {
          return ErrorAt(ref.pos,
                         absl::StrCat("unknown operand '", ref.name, "'"));
        }
        instruction.operand_index.push_back(it->second);
      }
      for (const NameRef& ref : instruction.control_predecessors) {
        auto it = computation.by_name.find(ref.name);
        if (it == computation.by_name.end()) {
          return ErrorAt(ref.pos, absl::StrCat("unknown control predecessor '",
                                               ref.name, "'"));
        }
        instruction.control_index.push_back(it->second);
      }
      for (const NameRef& ref : instruction.called) {
        if (ref.name.empty()) {
          return ErrorAt(instruction.pos,
                         absl::StrCat("instruction '", instruction.proto.name(),
                                      "' is missing a called computation "
                                      "(e.g. condition or body)"));
        }
        auto it = computation_index.find(ref.name);
        if (it == computation_index.end()) {
          return ErrorAt(ref.pos,
                         absl::StrCat("unknown computation '", ref.name, "'"));
        }
        instruction.called_index.push_back(it->second);
        if (instruction.proto.opcode() == "fusion")
          is_fusion[it->second] = true;
      }
    }
  }

  // Computations in post order (callees first), starting from text order.
  std::vector<int> order;
  order.reserve(num_computations);
  {
    std::vector<int> state(num_computations, 0);  // 0 new, 1 open, 2 done.
    struct Frame {
      int computation;
      size_t instruction;
      size_t call;
    };
    for (int root = 0; root < num_computations; ++root) {
      if (state[root] != 0) continue;
      std::vector<Frame> stack = {{root, 0, 0}};
      state[root] = 1;
      while (!stack.empty()) {
        Frame& frame = stack.back();
        PendingComputation& computation = computations_[frame.computation];
        if (frame.instruction >= computation.instructions.size()) {
          state[frame.computation] = 2;
          order.push_back(frame.computation);
          stack.pop_back();
          continue;
        }
        PendingInstruction& instruction =
            computation.instructions[frame.instruction];
        if (frame.call >= instruction.called_index.size()) {
          ++frame.instruction;
          frame.call = 0;
          continue;
        }
        const int callee = instruction.called_index[frame.call];
        const size_t ref_pos = instruction.called[frame.call].pos;
        ++frame.call;
        if (state[callee] == 1) {
          return ErrorAt(
              ref_pos, absl::StrCat("computation '", computations_[callee].name,
                                    "' calls itself (cycle)"));
        }
        if (state[callee] == 0) {
          state[callee] = 1;
          stack.push_back({callee, 0, 0});
        }
      }
    }
  }

  // Instructions of each computation in dependency order, then ids.
  std::vector<std::vector<int>> instruction_order(num_computations);
  std::vector<int64_t> computation_id(num_computations);
  std::vector<std::vector<int64_t>> instruction_id(num_computations);
  int64_t next_id = 1;
  for (int c : order) {
    PendingComputation& computation = computations_[c];
    const int n = static_cast<int>(computation.instructions.size());
    std::vector<int>& topo = instruction_order[c];
    topo.reserve(n);
    std::vector<uint8_t> state(n, 0);
    std::vector<std::pair<int, size_t>> stack;
    for (int start = 0; start < n; ++start) {
      if (state[start] != 0) continue;
      stack.push_back({start, 0});
      state[start] = 1;
      while (!stack.empty()) {
        auto& [index, next] = stack.back();
        const PendingInstruction& instruction = computation.instructions[index];
        const size_t num_operands = instruction.operand_index.size();
        const size_t total = num_operands + instruction.control_index.size();
        if (next >= total) {
          state[index] = 2;
          topo.push_back(index);
          stack.pop_back();
          continue;
        }
        const int dep = next < num_operands
                            ? instruction.operand_index[next]
                            : instruction.control_index[next - num_operands];
        const size_t dep_pos =
            next < num_operands
                ? instruction.operands[next].pos
                : instruction.control_predecessors[next - num_operands].pos;
        ++next;
        if (state[dep] == 1) {
          return ErrorAt(
              dep_pos,
              absl::StrCat("cycle through instruction '",
                           computation.instructions[dep].proto.name(), "'"));
        }
        if (state[dep] == 0) {
          state[dep] = 1;
          stack.push_back({dep, 0});
        }
      }
    }
    computation_id[c] = next_id++;
    instruction_id[c].resize(n);
    for (int index : topo) instruction_id[c][index] = next_id++;
  }

  // Default comparison types need the operand's element type; compute them
  // before the protos move into the module.
  for (PendingComputation& computation : computations_) {
    for (PendingInstruction& instruction : computation.instructions) {
      if (!instruction.default_comparison_type ||
          instruction.operand_index.empty()) {
        continue;
      }
      const xla::PrimitiveType t =
          computation.instructions[instruction.operand_index[0]]
              .proto.shape()
              .element_type();
      instruction.proto.set_comparison_type(IsFloatType(t) || IsComplexType(t)
                                                ? "FLOAT"
                                            : IsSignedIntType(t) ? "SIGNED"
                                                                 : "UNSIGNED");
    }
  }

  // Fill the module.
  for (int c : order) {
    PendingComputation& computation = computations_[c];
    xla::HloComputationProto* out = module->add_computations();
    out->set_name(std::string(computation.name));
    out->set_id(computation_id[c]);
    out->set_root_id(instruction_id[c][computation.root]);
    out->set_is_fusion_computation(is_fusion[c]);
    out->set_execution_thread(computation.execution_thread);
    // Parameters by number.
    std::vector<const PendingInstruction*> parameters;
    for (const PendingInstruction& instruction : computation.instructions) {
      if (instruction.proto.opcode() != "parameter") continue;
      const int64_t number = instruction.proto.parameter_number();
      if (number >= static_cast<int64_t>(computation.instructions.size())) {
        return ErrorAt(instruction.pos, "parameter number out of range");
      }
      if (parameters.size() <= static_cast<size_t>(number)) {
        parameters.resize(number + 1, nullptr);
      }
      if (parameters[number] != nullptr) {
        return ErrorAt(instruction.pos,
                       absl::StrCat("duplicate parameter number ", number));
      }
      parameters[number] = &instruction;
    }
    xla::ProgramShapeProto* program_shape = out->mutable_program_shape();
    for (size_t p = 0; p < parameters.size(); ++p) {
      if (parameters[p] == nullptr) {
        return ErrorAt(computation.pos,
                       absl::StrCat("computation '", computation.name,
                                    "' has no parameter number ", p));
      }
      *program_shape->add_parameters() = parameters[p]->proto.shape();
      program_shape->add_parameter_names(parameters[p]->proto.name());
    }
    *program_shape->mutable_result() =
        computation.instructions[computation.root].proto.shape();

    out->mutable_instructions()->Reserve(
        static_cast<int>(computation.instructions.size()));
    for (int index : instruction_order[c]) {
      PendingInstruction& instruction = computation.instructions[index];
      xla::HloInstructionProto& proto = instruction.proto;
      proto.set_id(instruction_id[c][index]);
      proto.mutable_operand_ids()->Reserve(
          static_cast<int>(instruction.operand_index.size()));
      for (int op : instruction.operand_index) {
        proto.add_operand_ids(instruction_id[c][op]);
      }
      for (int pred : instruction.control_index) {
        proto.add_control_predecessor_ids(instruction_id[c][pred]);
      }
      for (int callee : instruction.called_index) {
        proto.add_called_computation_ids(computation_id[callee]);
      }
      out->mutable_instructions()->AddAllocated(instruction.owned.release());
    }
  }

  const PendingComputation& entry_computation = computations_[entry];
  module->set_entry_computation_name(std::string(entry_computation.name));
  module->set_entry_computation_id(computation_id[entry]);
  const xla::HloComputationProto* entry_proto = nullptr;
  for (const auto& c : module->computations()) {
    if (c.id() == computation_id[entry]) entry_proto = &c;
  }
  xla::ProgramShapeProto* host = module->mutable_host_program_shape();
  if (has_entry_layout_) {
    if (entry_layout_.parameters_size() !=
        entry_proto->program_shape().parameters_size()) {
      return ErrorAt(
          entry_layout_pos_,
          absl::StrCat("entry_computation_layout has ",
                       entry_layout_.parameters_size(),
                       " parameters but the entry computation has ",
                       entry_proto->program_shape().parameters_size()));
    }
    *host = entry_layout_;
  } else {
    *host->mutable_parameters() = entry_proto->program_shape().parameters();
    *host->mutable_result() = entry_proto->program_shape().result();
  }

  if (is_scheduled_) {
    auto* sequences = module->mutable_schedule()->mutable_sequences();
    for (int c : order) {
      if (is_fusion[c]) continue;
      auto& sequence = (*sequences)[computation_id[c]];
      for (size_t i = 0; i < computations_[c].instructions.size(); ++i) {
        sequence.add_instruction_ids(instruction_id[c][i]);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<xla::HloModuleProto> ParseHloModule(absl::string_view text) {
  Parser parser(text);
  xla::HloModuleProto module;
  HLO_RETURN_IF_ERROR(parser.ParseModule(&module));
  return module;
}

absl::StatusOr<xla::ShapeProto> ParseShape(absl::string_view text) {
  Parser parser(text);
  xla::ShapeProto shape;
  HLO_RETURN_IF_ERROR(parser.ParseSingleShape(&shape));
  return shape;
}

}  // namespace tpu::hlo
