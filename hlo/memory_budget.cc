#include "hlo/memory_budget.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tpu {
namespace {

std::atomic<MemoryBudget*> process_budget{nullptr};

}  // namespace

MemoryBudget::MemoryBudget(int64_t limit_bytes, std::string name)
    : limit_(limit_bytes), name_(std::move(name)) {}

absl::Status MemoryBudget::Charge(int64_t bytes) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot commit a negative byte count (", bytes, ")"));
  }
  int64_t current = committed_.load(std::memory_order_relaxed);
  while (true) {
    // Written so that no sum can overflow: bytes may be near 2^62.
    if (bytes > limit_ || current > limit_ - bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "host memory exhausted: this needs ", FormatByteCount(bytes),
          " more, ", FormatByteCount(current), " are committed, and ", name_,
          " is ", FormatByteCount(limit_),
          ". Free buffers, make the request smaller, or raise the budget."));
    }
    if (committed_.compare_exchange_weak(current, current + bytes,
                                         std::memory_order_relaxed)) {
      break;
    }
  }
  const int64_t now = current + bytes;
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return absl::OkStatus();
}

void MemoryBudget::Release(int64_t bytes) {
  committed_.fetch_sub(bytes, std::memory_order_relaxed);
}

MemoryBudget* MemoryBudget::Process() { return process_budget.load(); }

void MemoryBudget::SetProcess(MemoryBudget* budget) {
  process_budget.store(budget);
}

absl::Status AllocationFailureStatus(const std::bad_alloc& error) {
  if (const auto* exhausted =
          dynamic_cast<const HostMemoryExhausted*>(&error)) {
    return absl::ResourceExhaustedError(exhausted->message());
  }
  return absl::ResourceExhaustedError(
      "host memory exhausted: the system refused an allocation. Free buffers "
      "or make the request smaller.");
}

std::string FormatByteCount(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB",
                                           "TiB", "PiB", "EiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " bytes");
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.2f %s (%d bytes)", value, kUnits[unit], bytes);
}

}  // namespace tpu
