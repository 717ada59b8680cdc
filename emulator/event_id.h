#ifndef SOFTWARE_TPU_EMULATOR_EVENT_ID_H_
#define SOFTWARE_TPU_EMULATOR_EVENT_ID_H_

// Event ids as they travel on the wire: `client_id << 44 | operation_id`.
// The ids of Allocate, AllocateTuple, Compile and Load operations are also the
// handles of what those operations create.
//
// Thread safety: value type.

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace tpu {

struct EventId {
  static constexpr int kOperationBits = 44;
  static constexpr uint64_t kOperationMask =
      (uint64_t{1} << kOperationBits) - 1;
  // Client ids fit in the 20 bits left above the operation id.
  static constexpr uint32_t kMaxClientId = (uint32_t{1} << 20) - 1;

  uint32_t client_id = 0;
  uint64_t operation_id = 0;

  static EventId FromInt(int64_t wire) {
    const uint64_t bits = static_cast<uint64_t>(wire);
    return EventId{static_cast<uint32_t>(bits >> kOperationBits),
                   bits & kOperationMask};
  }
  int64_t AsInt() const {
    return static_cast<int64_t>((uint64_t{client_id} << kOperationBits) |
                                (operation_id & kOperationMask));
  }

  // "operation 5 (client 3)": the form every status message uses.
  std::string ToString() const {
    return absl::StrCat("operation ", operation_id, " (client ", client_id,
                        ")");
  }

  bool operator==(const EventId& o) const {
    return client_id == o.client_id && operation_id == o.operation_id;
  }
  bool operator!=(const EventId& o) const { return !(*this == o); }
};

}  // namespace tpu

#endif  // SOFTWARE_TPU_EMULATOR_EVENT_ID_H_
