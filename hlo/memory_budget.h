#ifndef SOFTWARE_TPU_HLO_MEMORY_BUDGET_H_
#define SOFTWARE_TPU_HLO_MEMORY_BUDGET_H_

// How much host memory a process lets its buffers commit.
//
// A worker serves many clients from one process; a single request that asks
// for more memory than the machine has (a 4 TiB constant, a broadcast to a
// huge shape) must fail that request, not end the process. So every
// AlignedBuffer (the storage of literals, HBM contents, transfer payloads and
// interpreter intermediates) is charged to the process budget before its
// memory is taken, and released when the buffer is freed. Charging is
// lock-free; a charge that would pass the limit is refused whole.
//
// The budget counts live buffers. Not counted: the few hundred MiB of freed
// large blocks that AlignedBuffer keeps for reuse, protobuf messages, and
// small containers.
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <cstdint>
#include <new>
#include <string>

#include "absl/status/status.h"

namespace tpu {

class MemoryBudget {
 public:
  // `limit_bytes` > 0. `name` says in messages what the budget is and how to
  // change it, e.g. "the worker's host memory budget (--host_memory_budget)".
  MemoryBudget(int64_t limit_bytes, std::string name);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Commits `bytes` (>= 0), or RESOURCE_EXHAUSTED saying what was needed,
  // what is committed and the limit, leaving the budget unchanged.
  absl::Status Charge(int64_t bytes);
  // Returns bytes from an earlier successful Charge.
  void Release(int64_t bytes);

  int64_t limit() const { return limit_; }
  int64_t committed() const { return committed_.load(); }
  // Highest committed value seen.
  int64_t peak() const { return peak_.load(); }
  const std::string& name() const { return name_; }

  // The budget AlignedBuffer charges, or null (the default: no limit).
  // A buffer releases to the budget it was charged to, so replacing the
  // process budget while buffers are alive is safe. Not owned; must outlive
  // every buffer charged to it.
  static MemoryBudget* Process();
  static void SetProcess(MemoryBudget* budget);

 private:
  const int64_t limit_;
  const std::string name_;
  std::atomic<int64_t> committed_{0};
  std::atomic<int64_t> peak_{0};
};

// What AlignedBuffer::Allocate throws when the budget or the system refuses
// memory; it is a std::bad_alloc, so code that already survives those
// survives this. The interpreter's and the worker's operation boundaries turn
// it into RESOURCE_EXHAUSTED with message().
class HostMemoryExhausted : public std::bad_alloc {
 public:
  explicit HostMemoryExhausted(std::string message)
      : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

// The status an allocation failure `error` (any std::bad_alloc) becomes:
// RESOURCE_EXHAUSTED with the budget's message, or a generic one.
absl::Status AllocationFailureStatus(const std::bad_alloc& error);

// "4.00 TiB (4398046511104 bytes)", "512 bytes".
std::string FormatByteCount(int64_t bytes);

}  // namespace tpu

#endif  // SOFTWARE_TPU_HLO_MEMORY_BUDGET_H_
