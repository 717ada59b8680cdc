#ifndef SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_PLAN_H_
#define SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_PLAN_H_

// The fault rules a worker applies, and the deterministic matching of
// starting operations against them.
//
// Every rule counts, per core, the operations its kind and filters select,
// in the order the worker starts them on that core (operations on no core,
// compiles, count as core -1). nth=N then matches the Nth, first=K the first
// K, and anything else every one. A rule with probability=P draws, for each
// selected operation, from its own generator for that core, seeded from
// seed=S and the core: the same rules and the same program order give the
// same faults on every run. The first matching rule (in the order added)
// wins; every rule still counts what it selects.
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "emulator/faults/fault_rule.h"

namespace tpu::emulator::faults {

// An operation that is starting.
struct Operation {
  OpKind kind = OpKind::kExecute;
  int core = -1;  // -1: runs on no core (compile)
  uint32_t client = 0;
  std::string program;      // execute, load, unload, collective, compile
  std::string instruction;  // collective
};

// The rule an operation matched.
struct Match {
  int rule_number = 0;  // 1-based, as ListFaults numbers rules
  std::string rule_text;
  Action action;

  // "fault rule 2 (execute core=1 hang)", for messages.
  std::string Describe() const;
};

struct RuleInfo {
  int number = 0;
  std::string text;
  int64_t matched = 0;
};

class FaultPlan {
 public:
  FaultPlan() = default;
  FaultPlan(const FaultPlan&) = delete;
  FaultPlan& operator=(const FaultPlan&) = delete;

  // Parses and adds `text`; returns its number. INVALID_ARGUMENT as
  // ParseRule.
  absl::StatusOr<int> Add(absl::string_view text);
  void Add(Rule rule);

  // Rules in order, with how often each matched.
  std::vector<RuleInfo> List() const;

  // Removes every rule (numbering starts again at 1) and runs the
  // callbacks given to OnClear, e.g. restoring HBM capacities.
  void Clear();
  void OnClear(std::function<void()> callback);

  bool empty() const;

  // Counts `op` for every rule that selects it and returns the first match.
  std::optional<Match> Check(const Operation& op);

 private:
  struct Entry {
    Rule rule;
    int number = 0;
    int64_t matched = 0;
    // Per core: operations selected so far, and the generator state.
    std::map<int, int64_t> counts;
    std::map<int, uint64_t> generators;
  };
  static bool Selects(const Rule& rule, const Operation& op);
  // Uniform in [0, 1) from the rule's generator for `core`.
  static double Draw(Entry& entry, int core);

  // entries_.size(), read without the lock: with no rules (the common
  // case) operations pass without contending for mu_.
  std::atomic<int> rule_count_{0};
  mutable absl::Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  int next_number_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<std::function<void()>> on_clear_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tpu::emulator::faults

#endif  // SOFTWARE_TPU_EMULATOR_FAULTS_FAULT_PLAN_H_
