#include "emulator/faults/fault_plan.h"

#include "absl/strings/str_cat.h"

namespace tpu::emulator::faults {
namespace {

// splitmix64: a tiny generator whose sequence is fixed by its definition, so
// a seed gives the same draws with every standard library.
uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::string Match::Describe() const {
  return absl::StrCat("fault rule ", rule_number, " (", rule_text, ")");
}

absl::StatusOr<int> FaultPlan::Add(absl::string_view text) {
  absl::StatusOr<Rule> rule = ParseRule(text);
  if (!rule.ok()) return rule.status();
  absl::MutexLock lock(&mu_);
  Entry entry;
  entry.rule = *std::move(rule);
  entry.number = next_number_++;
  entries_.push_back(std::move(entry));
  rule_count_.store(static_cast<int>(entries_.size()));
  return entries_.back().number;
}

void FaultPlan::Add(Rule rule) {
  absl::MutexLock lock(&mu_);
  Entry entry;
  entry.rule = std::move(rule);
  entry.number = next_number_++;
  entries_.push_back(std::move(entry));
  rule_count_.store(static_cast<int>(entries_.size()));
}

std::vector<RuleInfo> FaultPlan::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<RuleInfo> rules;
  for (const Entry& entry : entries_) {
    rules.push_back({entry.number, entry.rule.text, entry.matched});
  }
  return rules;
}

void FaultPlan::Clear() {
  std::vector<std::function<void()>> callbacks;
  {
    absl::MutexLock lock(&mu_);
    entries_.clear();
    rule_count_.store(0);
    next_number_ = 1;
    callbacks = on_clear_;
  }
  for (auto& callback : callbacks) callback();
}

void FaultPlan::OnClear(std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  on_clear_.push_back(std::move(callback));
}

bool FaultPlan::empty() const { return rule_count_.load() == 0; }

bool FaultPlan::Selects(const Rule& rule, const Operation& op) {
  if (rule.kind != OpKind::kAny && rule.kind != op.kind) return false;
  if (rule.core.has_value() && *rule.core != op.core) return false;
  if (rule.client.has_value() && *rule.client != op.client) return false;
  if (rule.program.has_value() && *rule.program != op.program) return false;
  if (rule.instruction.has_value() &&
      (op.kind != OpKind::kCollective || *rule.instruction != op.instruction)) {
    return false;
  }
  // Actions that only make sense for some kinds pass the others by under
  // kind any.
  switch (rule.action.kind) {
    case ActionKind::kSlow:
      return op.kind == OpKind::kExecute;
    case ActionKind::kSkip:
      return op.kind == OpKind::kCollective;
    case ActionKind::kHbm:
      return op.core >= 0;
    default:
      return true;
  }
}

double FaultPlan::Draw(Entry& entry, int core) {
  auto [it, inserted] = entry.generators.try_emplace(core, 0);
  if (inserted) {
    it->second = entry.rule.seed ^
                 (static_cast<uint64_t>(core + 1) * 0xd1b54a32d192ed03ULL);
  }
  return static_cast<double>(SplitMix64(&it->second) >> 11) * 0x1.0p-53;
}

std::optional<Match> FaultPlan::Check(const Operation& op) {
  if (empty()) return std::nullopt;
  absl::MutexLock lock(&mu_);
  std::optional<Match> match;
  for (Entry& entry : entries_) {
    const Rule& rule = entry.rule;
    if (!Selects(rule, op)) continue;
    const int64_t count = ++entry.counts[op.core];
    bool hit = true;
    if (rule.nth.has_value()) hit = count == *rule.nth;
    if (rule.first.has_value()) hit = count <= *rule.first;
    if (hit && rule.probability.has_value()) {
      hit = Draw(entry, op.core) < *rule.probability;
    }
    if (!hit || match.has_value()) continue;
    ++entry.matched;
    match = Match{entry.number, rule.text, rule.action};
  }
  return match;
}

}  // namespace tpu::emulator::faults
