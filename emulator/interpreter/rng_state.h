#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_RNG_STATE_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_RNG_STATE_H_

// The random-number state of one compiled program, kept as XLA's CPU and GPU
// backends keep it: one 128-bit counter per executable, starting at 0x7012395
// (llvm_ir::GetOrCreateVariableForRngState), that every
// rng-get-and-update-state reads and advances by its `delta` each time it
// runs. XLA expands every `rng` into such a read (RngExpander), and so does
// the interpreter. Hence two executions of one program draw different
// numbers, and a freshly compiled program replays the same sequence.
//
// Thread safety: thread-safe. Concurrent executions of one Executable each
// get their own range of the sequence (in the order they reach the state).

#include <array>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/numeric/int128.h"
#include "absl/synchronization/mutex.h"

namespace tpu::emulator::interpreter {

class RngState {
 public:
  static constexpr uint64_t kInitialState = 0x7012395;

  RngState() = default;
  RngState(const RngState&) = delete;
  RngState& operator=(const RngState&) = delete;

  // The state before the call as its (low, high) 64-bit words, which is how
  // rng-get-and-update-state's u64[2] result lays out the 128-bit value; the
  // state then advances by `delta` (modulo 2^128).
  std::array<uint64_t, 2> GetAndAdd(uint64_t delta) {
    absl::MutexLock lock(&mu_);
    const absl::uint128 old = state_;
    state_ += delta;
    return {absl::Uint128Low64(old), absl::Uint128High64(old)};
  }

 private:
  absl::Mutex mu_;
  absl::uint128 state_ ABSL_GUARDED_BY(mu_) = kInitialState;
};

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_RNG_STATE_H_
