#include "emulator/fiber/context_switch.h"

#include <cstdint>

extern "C" {
void tpu_fiber_switch(void** from, void* to);
void tpu_fiber_start();
}

namespace tpu::emulator::fiber {

void SwitchContext(void** from, void* to) { tpu_fiber_switch(from, to); }

void* MakeContext(void* stack_base, size_t size, void (*entry)(void*),
                  void* arg) {
  // The frame tpu_fiber_switch pops, from the saved stack pointer up: the
  // x87 control word and MXCSR (16 bytes), r12..r15, rbx, rbp, and the
  // address it returns to. tpu_fiber_start then calls entry with the stack
  // 16-byte aligned, as the ABI wants at a call.
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack_base) + size) &
                  ~static_cast<uintptr_t>(15);
  top -= 16;  // a null "return address" slot above the start frame
  auto* frame = reinterpret_cast<uint64_t*>(top - 72);
  frame[0] = 0x037F;                           // x87 control word: the default
  frame[1] = 0x1F80;                           // MXCSR: the default
  frame[2] = reinterpret_cast<uint64_t>(arg);  // r12
  frame[3] = reinterpret_cast<uint64_t>(entry);  // r13
  frame[4] = 0;                                  // r14
  frame[5] = 0;                                  // r15
  frame[6] = 0;                                  // rbx
  frame[7] = 0;                                  // rbp
  frame[8] = reinterpret_cast<uint64_t>(&tpu_fiber_start);
  reinterpret_cast<uint64_t*>(top)[0] = 0;
  reinterpret_cast<uint64_t*>(top)[1] = 0;
  return frame;
}

}  // namespace tpu::emulator::fiber
