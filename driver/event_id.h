#ifndef SOFTWARE_TPU_DRIVER_EVENT_ID_H_
#define SOFTWARE_TPU_DRIVER_EVENT_ID_H_

// The identity of an operation on the wire: the client id the worker assigned
// at Open plus a per-client operation counter, packed into one integer as
// `client_id << 44 | operation_id`. An Allocate, Compile or Load operation's
// id is also the handle of what it creates.
//
// Thread safety: a value type.

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace tpu {

struct EventId {
  static constexpr int kOperationBits = 44;
  static constexpr uint64_t kOperationMask =
      (uint64_t{1} << kOperationBits) - 1;
  // Client ids must fit in the 20 bits left above the operation id.
  static constexpr uint64_t kMaxClientId = (uint64_t{1} << 20) - 1;

  uint64_t client_id = 0;
  uint64_t operation_id = 0;

  uint64_t AsInt() const { return client_id << kOperationBits | operation_id; }
  static EventId FromInt(uint64_t value) {
    return EventId{value >> kOperationBits, value & kOperationMask};
  }

  // "operation 17 (client 3)": the form every status message uses, the
  // emulator's included.
  std::string ToString() const {
    return absl::StrCat("operation ", operation_id, " (client ", client_id,
                        ")");
  }

  bool operator==(const EventId& other) const {
    return client_id == other.client_id && operation_id == other.operation_id;
  }
  bool operator!=(const EventId& other) const { return !(*this == other); }

  template <typename H>
  friend H AbslHashValue(H h, const EventId& id) {
    return H::combine(std::move(h), id.client_id, id.operation_id);
  }
};

}  // namespace tpu

#endif  // SOFTWARE_TPU_DRIVER_EVENT_ID_H_
