#ifndef SOFTWARE_TPU_PROTO_EVENT_ID_H_
#define SOFTWARE_TPU_PROTO_EVENT_ID_H_

// The identity of an operation on the wire: the client id the worker assigned
// at Open plus a per-client operation counter, packed into one integer as
// `client_id << 44 | operation_id`. An Allocate, AllocateTuple, Compile or
// Load operation's id is also the handle of what it creates.
//
// This is a wire fact shared by both ends (the drivers encode it, the worker
// decodes it), so it lives beside the protos and is defined exactly once.
//
// Thread safety: a value type.

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tpu {

struct EventId {
  static constexpr int kOperationBits = 44;
  static constexpr uint64_t kOperationMask =
      (uint64_t{1} << kOperationBits) - 1;
  // Client ids must fit in the 20 bits left above the operation id.
  static constexpr uint32_t kMaxClientId = (uint32_t{1} << 20) - 1;

  uint32_t client_id = 0;
  uint64_t operation_id = 0;

  // The proto fields are int64; the bit pattern is what matters, so both
  // signed and unsigned views convert without loss.
  static EventId FromInt(uint64_t wire) {
    return EventId{static_cast<uint32_t>(wire >> kOperationBits),
                   wire & kOperationMask};
  }
  uint64_t AsInt() const {
    return (uint64_t{client_id} << kOperationBits) |
           (operation_id & kOperationMask);
  }

  // "operation 17 (client 3)": the form every status message uses, on both
  // ends of the wire.
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

#endif  // SOFTWARE_TPU_PROTO_EVENT_ID_H_
