#include "emulator/worker/hbm.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tpu::emulator {

std::shared_ptr<HbmAccount> HbmAccount::Create(int core_id, int64_t capacity) {
  return std::shared_ptr<HbmAccount>(new HbmAccount(core_id, capacity));
}

absl::StatusOr<HbmReservation> HbmAccount::Reserve(int64_t bytes) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Cannot allocate a negative number of bytes (", bytes,
                     ") on core ", core_id_, "."));
  }
  absl::MutexLock lock(&mu_);
  // Written as a subtraction so that huge requests cannot overflow.
  if (bytes > std::max<int64_t>(0, capacity_ - in_use_)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "Out of HBM on core ", core_id_, ": requested ", bytes, " bytes, ",
        in_use_, " bytes in use of ", capacity_, " bytes capacity (",
        std::max<int64_t>(0, capacity_ - in_use_),
        " bytes available). Deallocate buffers or allocate less."));
  }
  in_use_ += bytes;
  return HbmReservation(shared_from_this(), bytes);
}

int64_t HbmAccount::capacity() const {
  absl::MutexLock lock(&mu_);
  return capacity_;
}

int64_t HbmAccount::available() const {
  absl::MutexLock lock(&mu_);
  return std::max<int64_t>(0, capacity_ - in_use_);
}

void HbmAccount::LimitCapacity(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  capacity_ = bytes;
}

void HbmAccount::RestoreCapacity() {
  absl::MutexLock lock(&mu_);
  capacity_ = created_capacity_;
}

int64_t HbmAccount::in_use() const {
  absl::MutexLock lock(&mu_);
  return in_use_;
}

void HbmAccount::Release(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  in_use_ -= bytes;
}

HbmReservation::HbmReservation(HbmReservation&& other) noexcept
    : account_(std::move(other.account_)), bytes_(other.bytes_) {
  other.bytes_ = 0;
}

HbmReservation& HbmReservation::operator=(HbmReservation&& other) noexcept {
  if (this != &other) {
    Reset();
    account_ = std::move(other.account_);
    bytes_ = other.bytes_;
    other.bytes_ = 0;
  }
  return *this;
}

void HbmReservation::Reset() {
  if (account_ != nullptr) {
    account_->Release(bytes_);
    account_.reset();
  }
  bytes_ = 0;
}

}  // namespace tpu::emulator
