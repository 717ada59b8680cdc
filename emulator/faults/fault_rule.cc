#include "emulator/faults/fault_rule.h"

#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "emulator/worker/host_memory_budget.h"

namespace tpu::emulator::faults {
namespace {

constexpr char kKinds[] =
    "alloc, dealloc, transfer_to, transfer_from, copy, compile, load, "
    "unload, execute, collective, any";
constexpr char kFilters[] =
    "core=, client=, program=, instruction=, nth=, first=, every, seed=, "
    "probability=";
constexpr char kActions[] =
    "delay=, hang, fail=, drop_stream, crash, hbm=, slow=, skip";

struct KindName {
  OpKind kind;
  absl::string_view name;
};
constexpr KindName kKindNames[] = {
    {OpKind::kAlloc, "alloc"},
    {OpKind::kDealloc, "dealloc"},
    {OpKind::kTransferTo, "transfer_to"},
    {OpKind::kTransferFrom, "transfer_from"},
    {OpKind::kCopy, "copy"},
    {OpKind::kCompile, "compile"},
    {OpKind::kLoad, "load"},
    {OpKind::kUnload, "unload"},
    {OpKind::kExecute, "execute"},
    {OpKind::kCollective, "collective"},
    {OpKind::kAny, "any"},
};

// A space-separated word and its 1-based column.
struct Word {
  absl::string_view text;
  int column = 0;
};

std::vector<Word> SplitWords(absl::string_view text) {
  std::vector<Word> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && absl::ascii_isspace(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !absl::ascii_isspace(text[i])) ++i;
    if (i > start) {
      words.push_back(
          {text.substr(start, i - start), static_cast<int>(start) + 1});
    }
  }
  return words;
}

absl::Status Error(int column, absl::string_view expected,
                   absl::string_view found) {
  return absl::InvalidArgumentError(absl::StrCat("column ", column,
                                                 ": expected ", expected,
                                                 " but found \"", found, "\""));
}

absl::Status ErrorAtEnd(int column, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("column ", column, ": expected ", expected,
                   " but found the end of the rule"));
}

std::optional<absl::StatusCode> ParseCode(absl::string_view name) {
  for (int code = 1; code <= 16; ++code) {
    const auto status_code = static_cast<absl::StatusCode>(code);
    if (absl::StatusCodeToString(status_code) == name) return status_code;
  }
  return std::nullopt;
}

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<Rule> Parse() {
    Rule rule;
    rule.text = std::string(absl::StripAsciiWhitespace(text_));
    std::vector<Word> words = SplitWords(text_);
    const int end_column = static_cast<int>(text_.size()) + 1;
    if (words.empty()) {
      return ErrorAtEnd(1, absl::StrCat("an operation kind (", kKinds, ")"));
    }
    bool known_kind = false;
    for (const KindName& kind : kKindNames) {
      if (words[0].text == kind.name) {
        rule.kind = kind.kind;
        known_kind = true;
      }
    }
    if (!known_kind) {
      return Error(words[0].column,
                   absl::StrCat("an operation kind (", kKinds, ")"),
                   words[0].text);
    }
    bool every = false;
    bool seeded = false;
    int seed_column = 0;
    for (size_t i = 1; i < words.size(); ++i) {
      const Word& word = words[i];
      absl::string_view key = word.text;
      absl::string_view value;
      bool has_value = false;
      if (const size_t eq = key.find('='); eq != absl::string_view::npos) {
        value = key.substr(eq + 1);
        key = key.substr(0, eq + 1);  // keeps the '='
        has_value = true;
      }
      const int value_column = word.column + static_cast<int>(key.size());
      if (IsAction(key)) {
        // The action ends the rule; fail='s message may hold spaces.
        if (key == "fail=") {
          value = absl::StripTrailingAsciiWhitespace(
              text_.substr(static_cast<size_t>(value_column - 1)));
          i = words.size();
        } else if (i + 1 < words.size()) {
          return Error(words[i + 1].column,
                       absl::StrCat("the end of the rule after the action \"",
                                    word.text, "\""),
                       words[i + 1].text);
        }
        if (absl::Status s =
                ParseAction(key, value, has_value, value_column, &rule.action);
            !s.ok()) {
          return s;
        }
        if (absl::Status s = CheckActionFitsKind(rule, word.column); !s.ok()) {
          return s;
        }
        if (rule.probability.has_value() || !seeded) return rule;
        return absl::InvalidArgumentError(absl::StrCat(
            "column ", seed_column,
            ": seed= only seeds probability=; add probability=P (0 to 1) or "
            "drop seed="));
      }
      absl::Status status = absl::OkStatus();
      if (key == "every") {
        every = true;
        status = Exclusive(rule, every, word.column);
      } else if (key == "core=") {
        status = SetInt(value, value_column, word.column, key, 0, &rule.core);
      } else if (key == "client=") {
        std::optional<int64_t> client;
        status = SetInt(value, value_column, word.column, key, 1, &client);
        if (status.ok()) rule.client = static_cast<uint32_t>(*client);
      } else if (key == "program=" || key == "instruction=") {
        std::optional<std::string>& field =
            key == "program=" ? rule.program : rule.instruction;
        if (field.has_value()) {
          status = Twice(word.column, key);
        } else if (value.empty()) {
          status = Error(value_column, absl::StrCat("a name after ", key),
                         word.text);
        } else {
          field = std::string(value);
        }
      } else if (key == "nth=" || key == "first=") {
        std::optional<int64_t>& field = key == "nth=" ? rule.nth : rule.first;
        status = SetInt(value, value_column, word.column, key, 1, &field);
        if (status.ok()) status = Exclusive(rule, every, word.column);
      } else if (key == "seed=") {
        if (seeded) {
          status = Twice(word.column, key);
        } else if (!absl::SimpleAtoi(value, &rule.seed)) {
          status = Error(value_column,
                         "a non-negative integer seed after seed=", value);
        }
        seeded = true;
        seed_column = word.column;
      } else if (key == "probability=") {
        double p = 0;
        if (rule.probability.has_value()) {
          status = Twice(word.column, key);
        } else if (!absl::SimpleAtod(value, &p) || !(p >= 0 && p <= 1)) {
          status = Error(value_column,
                         "a probability from 0 to 1 after probability=", value);
        } else {
          rule.probability = p;
        }
      } else {
        status = Error(word.column,
                       absl::StrCat("a filter (", kFilters, ") or an action (",
                                    kActions, ")"),
                       word.text);
      }
      if (!status.ok()) return status;
    }
    return ErrorAtEnd(end_column, absl::StrCat("an action (", kActions, ")"));
  }

 private:
  static bool IsAction(absl::string_view key) {
    return key == "delay=" || key == "hang" || key == "fail=" ||
           key == "drop_stream" || key == "crash" || key == "hbm=" ||
           key == "slow=" || key == "skip" || key == "delay" || key == "fail" ||
           key == "hbm" || key == "slow" || key == "hang=" ||
           key == "drop_stream=" || key == "crash=" || key == "skip=";
  }

  static absl::Status Twice(int column, absl::string_view key) {
    return absl::InvalidArgumentError(
        absl::StrCat("column ", column, ": ", key,
                     " is given twice; give each filter once"));
  }

  // nth, first and every are alternatives.
  static absl::Status Exclusive(const Rule& rule, bool every, int column) {
    const int count = (rule.nth.has_value() ? 1 : 0) +
                      (rule.first.has_value() ? 1 : 0) + (every ? 1 : 0);
    if (count <= 1) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "column ", column,
        ": nth=, first= and every are alternatives; give at most one"));
  }

  template <typename T>
  static absl::Status SetInt(absl::string_view value, int value_column,
                             int column, absl::string_view key, int64_t min,
                             std::optional<T>* field) {
    if (field->has_value()) return Twice(column, key);
    int64_t parsed = 0;
    if (!absl::SimpleAtoi(value, &parsed) || parsed < min ||
        parsed > INT32_MAX) {
      return Error(value_column,
                   absl::StrCat(min == 0 ? "a non-negative" : "a positive",
                                " integer after ", key),
                   value);
    }
    *field = static_cast<T>(parsed);
    return absl::OkStatus();
  }

  static absl::Status ParseAction(absl::string_view key,
                                  absl::string_view value, bool has_value,
                                  int value_column, Action* action) {
    const bool wants_value = key.back() == '=';
    if (!wants_value && has_value) {
      return absl::InvalidArgumentError(absl::StrCat(
          "column ", value_column - static_cast<int>(key.size()),
          ": the action ", absl::StripSuffix(key, "="), " takes no value"));
    }
    if (key == "delay" || key == "fail" || key == "hbm" || key == "slow") {
      return absl::InvalidArgumentError(absl::StrCat(
          "column ", value_column, ": expected '=' and a value after ", key,
          " (e.g. delay=250ms, fail=UNAVAILABLE:message, hbm=1GiB, "
          "slow=4)"));
    }
    if (key == "hang") {
      action->kind = ActionKind::kHang;
    } else if (key == "drop_stream") {
      action->kind = ActionKind::kDropStream;
    } else if (key == "crash") {
      action->kind = ActionKind::kCrash;
    } else if (key == "skip") {
      action->kind = ActionKind::kSkip;
    } else if (key == "delay=") {
      action->kind = ActionKind::kDelay;
      if (!absl::ParseDuration(value, &action->delay) ||
          action->delay < absl::ZeroDuration() ||
          action->delay == absl::InfiniteDuration()) {
        return Error(value_column, "a duration after delay= (e.g. 250ms, 2s)",
                     value);
      }
    } else if (key == "fail=") {
      action->kind = ActionKind::kFail;
      absl::string_view code_name = value;
      absl::string_view message;
      if (const size_t colon = value.find(':');
          colon != absl::string_view::npos) {
        code_name = value.substr(0, colon);
        message = value.substr(colon + 1);
      }
      std::optional<absl::StatusCode> code = ParseCode(code_name);
      if (!code.has_value()) {
        return Error(value_column,
                     "a canonical status code after fail= (e.g. "
                     "FAILED_PRECONDITION, UNAVAILABLE, INTERNAL)",
                     code_name);
      }
      action->status = absl::Status(*code, message);
    } else if (key == "hbm=") {
      action->kind = ActionKind::kHbm;
      // The same byte sizes as --host_memory_budget takes.
      absl::StatusOr<int64_t> bytes = ParseByteSize(value);
      if (!bytes.ok()) {
        return Error(value_column,
                     "a byte count after hbm= (e.g. 1048576, 64MiB, 1GiB)",
                     value);
      }
      action->bytes = *bytes;
    } else if (key == "slow=") {
      action->kind = ActionKind::kSlow;
      if (!absl::SimpleAtod(value, &action->factor) || !(action->factor >= 1) ||
          std::isinf(action->factor)) {
        return Error(value_column,
                     "a factor of at least 1 after slow= (e.g. 4, 2.5)", value);
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "column ", value_column - static_cast<int>(key.size()),
          ": the action ", absl::StripSuffix(key, "="), " takes no value"));
    }
    return absl::OkStatus();
  }

  static absl::Status CheckActionFitsKind(const Rule& rule, int column) {
    const std::string kind(OpKindName(rule.kind));
    switch (rule.action.kind) {
      case ActionKind::kSkip:
        if (rule.kind == OpKind::kCollective) break;
        return absl::InvalidArgumentError(absl::StrCat(
            "column ", column,
            ": skip applies to collective operations only (the core never "
            "arrives at the collective), but this rule's kind is ",
            kind, "; use kind collective"));
      case ActionKind::kSlow:
        if (rule.kind == OpKind::kExecute || rule.kind == OpKind::kAny) break;
        return absl::InvalidArgumentError(absl::StrCat(
            "column ", column,
            ": slow applies to programs (kind execute or any), but this "
            "rule's kind is ",
            kind, "; use delay= to slow other operations"));
      case ActionKind::kHbm:
        if (rule.kind != OpKind::kCompile) break;
        return absl::InvalidArgumentError(absl::StrCat(
            "column ", column,
            ": hbm= changes the capacity of the core an operation runs on, "
            "and compile runs on no core; use alloc, execute or any"));
      default:
        break;
    }
    if (rule.instruction.has_value() && rule.kind != OpKind::kCollective &&
        rule.kind != OpKind::kAny) {
      return absl::InvalidArgumentError(absl::StrCat(
          "instruction= selects collectives only, but this rule's kind is ",
          kind, "; use kind collective"));
    }
    return absl::OkStatus();
  }

  const absl::string_view text_;
};

}  // namespace

absl::string_view OpKindName(OpKind kind) {
  for (const KindName& name : kKindNames) {
    if (name.kind == kind) return name.name;
  }
  return "unknown";
}

absl::StatusOr<Rule> ParseRule(absl::string_view text) {
  return Parser(text).Parse();
}

}  // namespace tpu::emulator::faults
