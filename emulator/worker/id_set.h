#ifndef SOFTWARE_TPU_EMULATOR_ID_SET_H_
#define SOFTWARE_TPU_EMULATOR_ID_SET_H_

// A set of uint64 ids stored as disjoint half-open intervals. Operation ids of
// one client are dense (the client counts up), so even millions of completed
// operations collapse into a handful of intervals while they arrive slightly
// out of order over several streams.
//
// Thread safety: thread-compatible.

#include <cstdint>
#include <iterator>

#include "absl/container/btree_map.h"

namespace tpu::emulator {

class IdSet {
 public:
  bool Contains(uint64_t id) const {
    auto it = intervals_.upper_bound(id);  // first interval starting after id
    if (it == intervals_.begin()) return false;
    --it;
    return id < it->second;
  }

  // Returns false if `id` was already present.
  bool Insert(uint64_t id) {
    if (Contains(id)) return false;
    auto next = intervals_.upper_bound(id);
    const bool joins_next = next != intervals_.end() && next->first == id + 1;
    if (next != intervals_.begin()) {
      auto prev = std::prev(next);
      if (prev->second == id) {  // extends [a, id) to [a, id + 1)
        prev->second = joins_next ? next->second : id + 1;
        if (joins_next) intervals_.erase(next);
        return true;
      }
    }
    if (joins_next) {
      const uint64_t end = next->second;
      intervals_.erase(next);
      intervals_.emplace(id, end);
    } else {
      intervals_.emplace(id, id + 1);
    }
    return true;
  }

  // Number of disjoint intervals (memory use), for tests.
  size_t interval_count() const { return intervals_.size(); }

 private:
  // start -> end (exclusive).
  absl::btree_map<uint64_t, uint64_t> intervals_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_ID_SET_H_
