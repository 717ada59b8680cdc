#ifndef SOFTWARE_TPU_EMULATOR_HBM_H_
#define SOFTWARE_TPU_EMULATOR_HBM_H_

// Per-core HBM capacity accounting. Capacity is bookkeeping, not committed
// memory: a buffer's bytes are only materialized when something writes them,
// so a worker announcing 8 x 16 GiB starts on a much smaller machine.
//
// Thread safety: HbmAccount is safe for concurrent use. HbmReservation is
// thread-compatible (move-only; releases on destruction).

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace tpu::emulator {

class HbmReservation;

class HbmAccount : public std::enable_shared_from_this<HbmAccount> {
 public:
  // REQUIRES: capacity >= 0. `core_id` only names the core in messages.
  static std::shared_ptr<HbmAccount> Create(int core_id, int64_t capacity);

  HbmAccount(const HbmAccount&) = delete;
  HbmAccount& operator=(const HbmAccount&) = delete;

  // Reserves `bytes`. INVALID_ARGUMENT if bytes < 0; RESOURCE_EXHAUSTED,
  // stating the requested bytes, the bytes in use and the capacity, if the
  // reservation does not fit. The reservation keeps this account alive.
  absl::StatusOr<HbmReservation> Reserve(int64_t bytes);

  int core_id() const { return core_id_; }
  int64_t capacity() const;
  int64_t in_use() const;
  int64_t available() const;

  // A fault rule's hbm=BYTES: from now on the core reports and enforces
  // `bytes` (buffers already held stay; in use may then exceed capacity
  // until they go). RestoreCapacity returns to the capacity it was created
  // with. REQUIRES: bytes >= 0.
  void LimitCapacity(int64_t bytes);
  void RestoreCapacity();

 private:
  friend class HbmReservation;
  HbmAccount(int core_id, int64_t capacity)
      : core_id_(core_id), created_capacity_(capacity), capacity_(capacity) {}
  void Release(int64_t bytes);

  // Constant after construction.
  const int core_id_;
  const int64_t created_capacity_;

  mutable absl::Mutex mu_;
  int64_t capacity_ ABSL_GUARDED_BY(mu_);
  int64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
};

// Bytes held on an HbmAccount until Reset() or destruction.
class HbmReservation {
 public:
  HbmReservation() = default;
  ~HbmReservation() { Reset(); }
  HbmReservation(HbmReservation&& other) noexcept;
  HbmReservation& operator=(HbmReservation&& other) noexcept;
  HbmReservation(const HbmReservation&) = delete;
  HbmReservation& operator=(const HbmReservation&) = delete;

  int64_t bytes() const { return bytes_; }
  // Returns the bytes to the account; idempotent.
  void Reset();

 private:
  friend class HbmAccount;
  HbmReservation(std::shared_ptr<HbmAccount> account, int64_t bytes)
      : account_(std::move(account)), bytes_(bytes) {}

  std::shared_ptr<HbmAccount> account_;
  int64_t bytes_ = 0;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_HBM_H_
