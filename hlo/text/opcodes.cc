#include "hlo/text/opcodes.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace tpu::hlo::text_internal {
namespace {

// Every opcode XLA has printed (current and historical names), and whether
// XLA's parser infers its result shape when the text leaves it out (its
// CanInferShape).
struct OpcodeInfo {
  absl::string_view name;
  bool infers_shape;
};

constexpr OpcodeInfo kOpcodes[] = {
    {"abs", true},
    {"acos", true},
    {"acosh", true},
    {"add", true},
    {"add-dependency", true},
    {"after-all", true},
    {"all-gather", false},
    {"all-gather-done", false},
    {"all-gather-start", false},
    {"all-reduce", false},
    {"all-reduce-done", false},
    {"all-reduce-start", false},
    {"all-to-all", false},
    {"and", true},
    {"asin", true},
    {"asinh", true},
    {"async-done", false},
    {"async-start", false},
    {"async-update", false},
    {"atan2", true},
    {"atanh", true},
    {"batch-norm-grad", true},
    {"batch-norm-inference", true},
    {"batch-norm-training", true},
    {"bitcast", false},
    {"bitcast-convert", false},
    {"broadcast", true},
    {"call", true},
    {"cbrt", true},
    {"ceil", true},
    {"cholesky", true},
    {"clamp", true},
    {"collective-broadcast", false},
    {"collective-permute", false},
    {"collective-permute-done", false},
    {"collective-permute-start", false},
    {"compare", true},
    {"complex", true},
    {"concatenate", true},
    {"conditional", true},
    {"constant", false},
    {"convert", false},
    {"convolution", true},
    {"copy", true},
    {"copy-done", false},
    {"copy-start", false},
    {"cosh", true},
    {"cosine", true},
    {"count-leading-zeros", true},
    {"cross-replica-sum", false},
    {"custom-call", false},
    {"divide", true},
    {"domain", true},
    {"dot", true},
    {"dynamic-reshape", false},
    {"dynamic-slice", false},
    {"dynamic-update-slice", false},
    {"erf", true},
    {"exponential", true},
    {"exponential-minus-one", true},
    {"fft", true},
    {"floor", true},
    {"fusion", false},
    {"gather", true},
    {"get-dimension-size", true},
    {"get-tuple-element", true},
    {"imag", true},
    {"infeed", false},
    {"iota", false},
    {"is-finite", true},
    {"log", true},
    {"log-plus-one", true},
    {"logistic", true},
    {"map", true},
    {"maximum", true},
    {"minimum", true},
    {"multiply", true},
    {"negate", true},
    {"not", true},
    {"opt-barrier", true},
    {"or", true},
    {"outfeed", false},
    {"pad", true},
    {"parameter", false},
    {"partition-id", true},
    {"popcnt", true},
    {"power", true},
    {"ragged-all-to-all", false},
    {"ragged-dot", true},
    {"real", true},
    {"recv", false},
    {"recv-done", false},
    {"reduce", true},
    {"reduce-precision", false},
    {"reduce-scatter", false},
    {"reduce-window", true},
    {"remainder", true},
    {"replica-id", true},
    {"reshape", false},
    {"reverse", true},
    {"rng", false},
    {"rng-bit-generator", false},
    {"rng-get-and-update-state", false},
    {"round-nearest-afz", true},
    {"round-nearest-even", true},
    {"rsqrt", true},
    {"scaled-dot", true},
    {"scan", true},
    {"scatter", true},
    {"select", true},
    {"select-and-scatter", true},
    {"send", false},
    {"send-done", false},
    {"set-dimension-size", true},
    {"shift-left", true},
    {"shift-right-arithmetic", true},
    {"shift-right-logical", true},
    {"sign", true},
    {"sine", true},
    {"sinh", true},
    {"slice", false},
    {"sort", true},
    {"sqrt", true},
    {"stochastic-convert", false},
    {"subtract", true},
    {"tan", true},
    {"tanh", true},
    {"topk", true},
    {"trace", false},
    {"transpose", true},
    {"triangular-solve", true},
    {"tuple", true},
    {"tuple-select", false},
    {"while", true},
    {"xor", true},
};

constexpr absl::string_view kAsyncSuffixes[][2] = {
    {"-start", "async-start"},
    {"-update", "async-update"},
    {"-done", "async-done"},
};

// Opcode -> infers_shape.
const absl::flat_hash_map<absl::string_view, bool>& OpcodeTable() {
  static const auto* const kTable = [] {
    auto* table = new absl::flat_hash_map<absl::string_view, bool>();
    for (const OpcodeInfo& info : kOpcodes) {
      (*table)[info.name] = info.infers_shape;
    }
    return table;
  }();
  return *kTable;
}

}  // namespace

bool IsKnownOpcode(absl::string_view opcode) {
  return OpcodeTable().contains(opcode);
}

bool CanInferShape(absl::string_view opcode) {
  auto it = OpcodeTable().find(opcode);
  return it != OpcodeTable().end() && it->second;
}

bool AsyncShorthandWrappedOpcode(absl::string_view word,
                                 absl::string_view* wrapped) {
  if (IsKnownOpcode(word)) return false;
  for (const auto& suffix : kAsyncSuffixes) {
    if (!absl::EndsWith(word, suffix[0])) continue;
    absl::string_view op = word.substr(0, word.size() - suffix[0].size());
    if (!IsKnownOpcode(op)) return false;
    *wrapped = op;
    return true;
  }
  return false;
}

absl::string_view AsyncOpcodeOfShorthand(absl::string_view word) {
  for (const auto& suffix : kAsyncSuffixes) {
    if (absl::EndsWith(word, suffix[0])) return suffix[1];
  }
  return "";
}

}  // namespace tpu::hlo::text_internal
