#ifndef SOFTWARE_TPU_EMULATOR_FIBER_CONTEXT_SWITCH_H_
#define SOFTWARE_TPU_EMULATOR_FIBER_CONTEXT_SWITCH_H_

// The machine-level part of a fiber: a saved context is a stack pointer, and
// switching saves the callee-saved registers on one stack and restores them
// from another (context_switch.S), a few nanoseconds with no system call.

#include <cstddef>

namespace tpu::emulator::fiber {

// Saves the running context in *from and resumes `to`. Returns when some
// context switches back to *from.
void SwitchContext(void** from, void* to);

// A context that, when first switched to, calls entry(arg) on the stack
// [stack_base, stack_base + size). `entry` must never return.
void* MakeContext(void* stack_base, size_t size, void (*entry)(void*),
                  void* arg);

}  // namespace tpu::emulator::fiber

#endif  // SOFTWARE_TPU_EMULATOR_FIBER_CONTEXT_SWITCH_H_
