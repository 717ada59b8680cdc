#include "emulator/collectives/wake_word.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace tpu::emulator {

void WakeWord::Wait(uint32_t seen, absl::Duration timeout) {
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  // The kernel sleeps only if the word still equals `seen`, so a WakeAll
  // between the caller's check and this call is never lost.
  const timespec relative = absl::ToTimespec(timeout);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAIT_PRIVATE,
          seen, &relative, nullptr, 0);
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

void WakeWord::WakeAll() {
  word_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAKE_PRIVATE,
          INT_MAX, nullptr, nullptr, 0);
}

}  // namespace tpu::emulator
