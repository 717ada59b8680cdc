#ifndef SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_RULE_H_
#define SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_RULE_H_

// One fault rule: which operations it matches and what it does to them.
//
//   RULE   := KIND FILTER* ACTION
//   KIND   := alloc | dealloc | transfer_to | transfer_from | copy | compile
//           | load | unload | execute | collective | any
//   FILTER := core=N | client=N | program=NAME | instruction=NAME | nth=N
//           | first=K | every | seed=S probability=P
//   ACTION := delay=DURATION | hang | fail=CODE[:MESSAGE] | drop_stream
//           | crash | hbm=BYTES | slow=FACTOR | skip
//
// Words are separated by spaces; the action comes last. A rule without nth,
// first or every matches every operation its other filters select (as
// `every` does). Durations: 250ms, 2s, 1m (absl::ParseDuration). Bytes:
// 1024, 64KiB, 16MiB, 1GiB, 2MB, as --host_memory_budget takes them
// (emulator/worker/host_memory_budget.h). `skip` is for collectives only,
// `slow` for executes (kind execute or any), `hbm` needs a kind that runs on a
// core (not compile). Parse errors are INVALID_ARGUMENT and name the column
// (1-based) and what was expected.
//
// Thread safety: a Rule is a value; ParseRule is reentrant.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace tpu::emulator::faults {

// What kind of operation is starting. kAny only appears in rules.
enum class OpKind {
  kAlloc,
  kDealloc,
  kTransferTo,
  kTransferFrom,
  kCopy,
  kCompile,
  kLoad,
  kUnload,
  kExecute,
  kCollective,
  kAny,
};

// The grammar's word for `kind` ("transfer_to", "any", ...).
absl::string_view OpKindName(OpKind kind);

enum class ActionKind {
  kDelay,
  kHang,
  kFail,
  kDropStream,
  kCrash,
  kHbm,
  kSlow,
  kSkip,
};

struct Action {
  ActionKind kind = ActionKind::kHang;
  absl::Duration delay;  // kDelay
  absl::Status status;   // kFail: the operation's status
  int64_t bytes = 0;     // kHbm: the core's capacity from then on
  double factor = 1;     // kSlow
};

struct Rule {
  OpKind kind = OpKind::kAny;
  std::optional<int> core;
  std::optional<uint32_t> client;
  std::optional<std::string> program;
  std::optional<std::string> instruction;
  // Count filters, over the operations the filters above select, counted
  // per core from 1: nth matches only the nth, first the first K.
  std::optional<int64_t> nth;
  std::optional<int64_t> first;
  // Set with probability=: a selected operation matches with this
  // probability, drawn from a generator seeded with `seed`.
  std::optional<double> probability;
  uint64_t seed = 0;
  Action action;
  // The rule as written (trimmed), for listings and messages.
  std::string text;
};

// Parses one rule. INVALID_ARGUMENT "column C: expected ... but found
// \"WORD\"" on a rule that does not parse.
absl::StatusOr<Rule> ParseRule(absl::string_view text);

}  // namespace tpu::emulator::faults

#endif  // SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_RULE_H_
