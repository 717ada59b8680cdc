#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_EXECUTION_ORDER_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_EXECUTION_ORDER_H_

// The order in which the interpreter runs a computation's instructions.
//
// It is the computation's own topological order (operands and control
// predecessors first), except that a recv-done runs after every send on its
// channel in the same computation: the interpreter runs one instruction at a
// time, so the value must have been sent before it is received. When that
// edge would close a cycle (the send needs what the recv-done returns, which
// only another device could break), the edge is left out and the recv-done
// fails at run time with a message naming the channel.
//
// Thread safety: a plain function.

#include <vector>

#include "hlo/hlo_module.h"

namespace tpu::emulator::interpreter {

std::vector<const HloInstruction*> ExecutionOrder(
    const HloComputation& computation);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_EXECUTION_ORDER_H_
