#include "emulator/faults/fault_plan_file.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tpu::emulator::faults {

absl::Status LocateRuleError(const absl::Status& error,
                             absl::string_view prefix) {
  absl::string_view message = error.message();
  if (absl::ConsumePrefix(&message, "column ")) {
    return absl::Status(error.code(), absl::StrCat(prefix, ":", message));
  }
  return absl::Status(error.code(), absl::StrCat(prefix, ": ", message));
}

absl::Status AddRulesFromText(absl::string_view name, absl::string_view text,
                              FaultPlan* plan) {
  std::vector<Rule> rules;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    absl::string_view content = absl::StripAsciiWhitespace(line);
    if (content.empty() || absl::StartsWith(content, "#")) continue;
    absl::StatusOr<Rule> rule = ParseRule(absl::StripSuffix(line, "\r"));
    if (!rule.ok()) {
      return LocateRuleError(rule.status(),
                             absl::StrCat(name, ":", line_number));
    }
    rules.push_back(*std::move(rule));
  }
  for (Rule& rule : rules) plan->Add(std::move(rule));
  return absl::OkStatus();
}

absl::Status AddRulesFromFile(const std::string& path, FaultPlan* plan) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the fault plan ", path,
                     "; pass a file with one fault rule per line"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return AddRulesFromText(path, text.str(), plan);
}

}  // namespace tpu::emulator::faults
