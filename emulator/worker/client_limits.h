#ifndef SOFTWARE_TPU_EMULATOR_WORKER_CLIENT_LIMITS_H_
#define SOFTWARE_TPU_EMULATOR_WORKER_CLIENT_LIMITS_H_

// What one client may hold at once, so that a client that floods the worker
// gets RESOURCE_EXHAUSTED on its own operations while other clients are
// served as before. Zero means no limit.

#include <cstdint>

namespace tpu::emulator {

struct ClientLimits {
  // Live buffers, compiled and loaded programs (tpu_emulator
  // --max_handles_per_client).
  int64_t max_handles = int64_t{1} << 20;
  // Operations received and not yet answered, including those waiting for
  // their dependencies (--max_pending_operations_per_client).
  int64_t max_pending_operations = int64_t{1} << 18;
  // transfer_to payload bytes received and not yet stored
  // (--max_bytes_in_flight_per_client).
  int64_t max_bytes_in_flight = int64_t{4} << 30;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_WORKER_CLIENT_LIMITS_H_
