#ifndef SOFTWARE_TPU_EMULATOR_TEST_PROGRAMS_H_
#define SOFTWARE_TPU_EMULATOR_TEST_PROGRAMS_H_

// Hand-built HLO modules for worker and protocol tests, written the way XLA
// serializes them (ids, operand ids, program shapes, row-major layouts).
//
// Thread safety: free functions.

#include <cstdint>

#include "proto/hlo.pb.h"

namespace tpu::emulator {
namespace test_programs {

// (f32[n] x, f32[n] y) -> f32[n] x + y.
xla::HloProto AddF32(int64_t n);
// (f32[n] x, f32[n] y) -> (f32[n] x + y, f32[n] x * y).
xla::HloProto AddAndMultiplyTuple(int64_t n);
// ((f32[n], f32[n]) p) -> f32[n] p.0 + p.1.
xla::HloProto SumTupleParameter(int64_t n);
// (s32[] x) -> s32[]: while (true) { x = x + 1 }. Never ends unless
// cancelled.
xla::HloProto InfiniteLoop();
// () -> u32[]: the replica id of the executing core.
xla::HloProto ReplicaId();
// A module with one instruction of an opcode no interpreter knows.
xla::HloProto UnknownOpcode();

}  // namespace test_programs
}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_TEST_PROGRAMS_H_
