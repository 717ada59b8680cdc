#include "emulator/worker/host_memory_budget.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tpu::emulator {
namespace {

struct Unit {
  const char* name;  // lowercase
  double bytes;
};

constexpr Unit kUnits[] = {
    {"", 1},
    {"b", 1},
    {"k", 1024.0},
    {"kib", 1024.0},
    {"kb", 1e3},
    {"m", 1024.0 * 1024},
    {"mib", 1024.0 * 1024},
    {"mb", 1e6},
    {"g", 1024.0 * 1024 * 1024},
    {"gib", 1024.0 * 1024 * 1024},
    {"gb", 1e9},
    {"t", 1024.0 * 1024 * 1024 * 1024},
    {"tib", 1024.0 * 1024 * 1024 * 1024},
    {"tb", 1e12},
};

absl::Status Invalid(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "'", text, "' is not a byte size (", why,
      "); write a positive number with an optional unit, e.g. 8GiB, 512MiB "
      "or 1073741824."));
}

}  // namespace

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  const std::string lower =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  size_t split = 0;
  while (split < lower.size() &&
         (absl::ascii_isdigit(lower[split]) || lower[split] == '.')) {
    ++split;
  }
  double number = 0;
  if (split == 0 || !absl::SimpleAtod(lower.substr(0, split), &number)) {
    return Invalid(text, "no number");
  }
  const std::string unit(absl::StripAsciiWhitespace(lower.substr(split)));
  for (const Unit& candidate : kUnits) {
    if (unit != candidate.name) continue;
    const double bytes = std::floor(number * candidate.bytes);
    if (!(bytes >= 1)) return Invalid(text, "not positive");
    if (bytes > 9.2e18) return Invalid(text, "too large");
    return static_cast<int64_t>(bytes);
  }
  return Invalid(text, absl::StrCat("unknown unit '", unit, "'"));
}

int64_t DefaultHostMemoryBudget() {
  constexpr int64_t kFloor = int64_t{1} << 30;
  int64_t total = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemTotal:") {
      total = kib * 1024;
      break;
    }
  }
  if (total <= 0) {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page_size > 0) {
      total = static_cast<int64_t>(pages) * page_size;
    }
  }
  return total / 2 > kFloor ? total / 2 : kFloor;
}

}  // namespace tpu::emulator
