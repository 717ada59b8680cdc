#ifndef SOFTWARE_TPU_EMULATOR_WORKER_INLINE_EXECUTION_H_
#define SOFTWARE_TPU_EMULATOR_WORKER_INLINE_EXECUTION_H_

// Which programs an execute may run on the thread that starts it, when their
// core is idle, instead of handing them to the core's thread: in-process
// clients (local://) then get a tiny program's result with no thread
// hand-off at all, as XLA's CPU client runs cheap computations inline.
//
// Only programs that are cheap and cannot block qualify, because the
// starting thread may be the client's own (an ExecuteProgram call must not
// hang or take long): one replica, no loops, no collectives, sends,
// receives, feeds or custom-calls, and few elements in all.

#include <cstdint>

#include "proto/hlo.pb.h"

namespace tpu::emulator {

// Most elements, summed over every instruction's shape, of a program that
// runs inline: a few microseconds of work at most.
inline constexpr int64_t kMaxInlineElements = 16384;

bool RunsInline(const xla::HloModuleProto& module, int num_replicas);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_WORKER_INLINE_EXECUTION_H_
