#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_SPMD_SHAPES_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_SPMD_SHAPES_H_

// The custom-calls SPMDFullToShardShape and SPMDShardToFullShape where they
// change the shape: a program written for several partitions but not yet
// partitioned (a shard_map body between them), run with one launch per
// partition.
//
//  - SPMDFullToShardShape(full) gives each partition its tile of `full`,
//    as the tiled sharding of its operand (devices=[...] with partition ids,
//    explicit or iota) places tiles on partitions.
//  - SPMDShardToFullShape(shard) assembles the full array from every
//    partition's shard, placed by the instruction's own tiled sharding (a
//    gather among the partitions of the caller's replica); every partition
//    gets the full array.
// Uneven tiles, shardings that are not tiled, and launches with fewer
// partitions than the sharding names are errors saying so.
//
// Thread safety: the kernels are immutable.

#include <memory>

#include "absl/status/statusor.h"
#include "emulator/interpreter/kernel.h"
#include "hlo/hlo_module.h"

namespace tpu::emulator::interpreter {

absl::StatusOr<std::unique_ptr<Kernel>> CompileShardShapeChange(
    const HloInstruction& instruction);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_SPMD_SHAPES_H_
