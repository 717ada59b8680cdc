// SPMDFullToShardShape and SPMDShardToFullShape that change the shape; see
// spmd_shapes.h.

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "emulator/interpreter/collectives.h"
#include "emulator/interpreter/kernel_util.h"
#include "emulator/interpreter/spmd_shapes.h"

namespace tpu::emulator::interpreter {
namespace {

// Where a tiled sharding puts the tiles of an array of rank `rank`.
struct Tiling {
  // Tiles along each array dimension.
  std::vector<int64_t> tiles;
  // Partitions holding each tile (trailing replicated dimensions of the
  // tile assignment give a tile several holders), row-major.
  std::vector<int64_t> devices;
  int64_t holders_per_tile = 1;

  // The tile a partition holds, or -1.
  int64_t TileOf(int64_t partition) const {
    auto it = std::find(devices.begin(), devices.end(), partition);
    if (it == devices.end()) return -1;
    return (it - devices.begin()) / holders_per_tile;
  }
  // Tile index per dimension of linear tile `t`.
  std::vector<int64_t> TileIndex(int64_t t) const {
    std::vector<int64_t> index(tiles.size());
    for (int64_t d = static_cast<int64_t>(tiles.size()) - 1; d >= 0; --d) {
      index[d] = t % tiles[d];
      t /= tiles[d];
    }
    return index;
  }
};

absl::StatusOr<Tiling> ReadTiling(const xla::OpSharding& sharding, int64_t rank,
                                  const std::string& what) {
  if (sharding.type() != xla::OpSharding::OTHER ||
      sharding.tile_assignment_dimensions_size() < rank) {
    return absl::UnimplementedError(absl::StrCat(
        what,
        " changes the shape but has no tiled sharding (devices=[...]) "
        "saying where each partition's tile goes: without one it needs SPMD "
        "partitioning, which the interpreter does not do"));
  }
  Tiling tiling;
  int64_t count = 1;
  for (int64_t d = 0; d < sharding.tile_assignment_dimensions_size(); ++d) {
    const int64_t n = sharding.tile_assignment_dimensions(d);
    if (n <= 0 || n > 4096) return Malformed(what + ": bad tile count");
    count *= n;
    if (count > 4096) return Malformed(what + ": too many tiles");
    if (d < rank) {
      tiling.tiles.push_back(n);
    } else {
      tiling.holders_per_tile *= n;
    }
  }
  if (sharding.tile_assignment_devices_size() > 0) {
    tiling.devices.assign(sharding.tile_assignment_devices().begin(),
                          sharding.tile_assignment_devices().end());
  } else {
    // iota(product) reshaped to iota_reshape_dims, transposed by
    // iota_transpose_perm, read row-major.
    std::vector<int64_t> dims(sharding.iota_reshape_dims().begin(),
                              sharding.iota_reshape_dims().end());
    if (dims.empty()) dims = {count};
    std::vector<int64_t> perm(sharding.iota_transpose_perm().begin(),
                              sharding.iota_transpose_perm().end());
    if (perm.empty()) {
      perm.resize(dims.size());
      std::iota(perm.begin(), perm.end(), 0);
    }
    int64_t total = 1;
    for (int64_t d : dims) total *= d;
    if (total != count || perm.size() != dims.size()) {
      return Malformed(what + ": the iota tile assignment does not fit");
    }
    std::vector<int64_t> strides(dims.size(), 1);
    for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) {
      strides[d] = strides[d + 1] * dims[d + 1];
    }
    std::vector<int64_t> out_dims;
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(dims.size())) {
        return Malformed(what + ": bad iota transpose");
      }
      out_dims.push_back(dims[p]);
    }
    std::vector<int64_t> index(out_dims.size(), 0);
    for (int64_t i = 0; i < count; ++i) {
      int64_t source = 0;
      for (size_t k = 0; k < index.size(); ++k) {
        source += index[k] * strides[perm[k]];
      }
      tiling.devices.push_back(source);
      for (int64_t k = static_cast<int64_t>(index.size()) - 1; k >= 0; --k) {
        if (++index[k] < out_dims[k]) break;
        index[k] = 0;
      }
    }
  }
  if (static_cast<int64_t>(tiling.devices.size()) != count) {
    return Malformed(what + ": the tile assignment lists the wrong count");
  }
  return tiling;
}

// Copies the block of `block` dims between `small` (whole) and `large` at
// `offset`; into `large` when `to_large`, else out of it.
void CopyBlock(const Shape& large_shape, char* large, const Shape& small_shape,
               char* small, const std::vector<int64_t>& offset, bool to_large) {
  const std::vector<int64_t>& big = large_shape.dimensions();
  const std::vector<int64_t>& block = small_shape.dimensions();
  const int64_t width = ByteWidth(small_shape.element_type());
  const int64_t rank = static_cast<int64_t>(block.size());
  if (rank == 0) {
    std::memcpy(to_large ? large : small, to_large ? small : large, width);
    return;
  }
  const std::vector<int64_t> big_strides = RowMajorStrides(big);
  const int64_t run = block[rank - 1] * width;
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < rank; ++d) rows *= block[d];
  std::vector<int64_t> index(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = 0;
    for (int64_t d = 0; d < rank; ++d) {
      at += (offset[d] + index[d]) * big_strides[d];
    }
    char* big_run = large + at * width;
    char* small_run = small + r * run;
    std::memcpy(to_large ? big_run : small_run, to_large ? small_run : big_run,
                run);
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++index[d] < block[d]) break;
      index[d] = 0;
    }
  }
}

std::vector<int64_t> OffsetOf(const Tiling& tiling, int64_t tile,
                              const Shape& shard) {
  std::vector<int64_t> offset = tiling.TileIndex(tile);
  for (size_t d = 0; d < offset.size(); ++d) {
    offset[d] *= shard.dimensions()[d];
  }
  return offset;
}

absl::Status CheckEven(const Shape& full, const Shape& shard,
                       const Tiling& tiling, const std::string& what) {
  if (full.element_type() != shard.element_type() ||
      full.rank() != shard.rank()) {
    return Malformed(absl::StrCat(what, ": ", full.ToString(), " and ",
                                  shard.ToString(), " differ in type or rank"));
  }
  for (int64_t d = 0; d < full.rank(); ++d) {
    if (shard.dimensions()[d] * tiling.tiles[d] != full.dimensions()[d]) {
      return absl::UnimplementedError(absl::StrCat(
          what, ": ", full.ToString(), " in tiles of [",
          absl::StrJoin(tiling.tiles, ","), "] is not ", shard.ToString(),
          " per partition (uneven tiles need SPMD partitioning's padding)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPartitions(const Tiling& tiling, int partitions,
                             const std::string& what) {
  const int64_t largest =
      *std::max_element(tiling.devices.begin(), tiling.devices.end());
  if (largest >= partitions) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": its sharding places tiles on ", largest + 1,
                     " partitions but this launch has ", partitions,
                     "; run it with num_partitions=", largest + 1));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CompileShardShapeChange(
    const HloInstruction& instruction) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const std::string& target = instruction.proto().custom_call_target();
  const std::string what =
      absl::StrCat("custom-call ", target, " ", instruction.name());
  const Shape operand = instruction.operand(0)->shape();
  const Shape result = instruction.shape();
  if (!operand.IsArray() || !result.IsArray()) {
    return Malformed(what + " takes and returns arrays");
  }
  if (target == "SPMDFullToShardShape") {
    absl::StatusOr<Tiling> tiling =
        ReadTiling(instruction.operand(0)->proto().sharding(), operand.rank(),
                   what + " (the sharding of its operand)");
    if (!tiling.ok()) return tiling.status();
    if (absl::Status s = CheckEven(operand, result, *tiling, what); !s.ok()) {
      return s;
    }
    return MakeKernel(
        [tiling = *tiling, result, what](
            KernelContext& context,
            absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
          const ExecutionContext& execution = context.execution();
          const int partitions = execution.assignment != nullptr
                                     ? execution.assignment->num_partitions
                                     : 1;
          if (absl::Status s = CheckPartitions(tiling, partitions, what);
              !s.ok()) {
            return s;
          }
          const int64_t tile = tiling.TileOf(execution.partition_id);
          if (tile < 0) {
            return Malformed(absl::StrCat(what, ": partition ",
                                          execution.partition_id,
                                          " holds no tile of its sharding"));
          }
          Literal shard = Literal::Uninitialized(result);
          const Literal& full = *operands[0].value;
          CopyBlock(
              full.shape(),
              const_cast<char*>(static_cast<const char*>(full.untyped_data())),
              result, static_cast<char*>(shard.mutable_untyped_data()),
              OffsetOf(tiling, tile, result), /*to_large=*/false);
          return shard;
        });
  }
  absl::StatusOr<Tiling> tiling =
      ReadTiling(instruction.proto().sharding(), result.rank(),
                 what + " (its own sharding)");
  if (!tiling.ok()) return tiling.status();
  if (absl::Status s = CheckEven(result, operand, *tiling, what); !s.ok()) {
    return s;
  }
  const std::string computation = instruction.parent()->name();
  const std::string name = instruction.name();
  return MakeKernel(
      [tiling = *tiling, operand, result, what, computation, name](
          KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const ExecutionContext& execution = context.execution();
        const DeviceAssignment& a = AssignmentOrSingle(execution.assignment);
        if (absl::Status s = CheckPartitions(tiling, a.num_partitions, what);
            !s.ok()) {
          return s;
        }
        // Partition q of this replica contributes its shard; the full array
        // takes each tile from its first holder.
        CollectiveCombine combine = [tiling, operand,
                                     result](const std::vector<Literal>& shards)
            -> absl::StatusOr<std::vector<Literal>> {
          Literal full = Literal::Zeros(result);
          for (size_t q = 0; q < shards.size(); ++q) {
            auto it = std::find(tiling.devices.begin(), tiling.devices.end(),
                                static_cast<int64_t>(q));
            if (it == tiling.devices.end() ||
                (it - tiling.devices.begin()) % tiling.holders_per_tile != 0) {
              continue;
            }
            const int64_t tile = tiling.TileOf(static_cast<int64_t>(q));
            CopyBlock(result, static_cast<char*>(full.mutable_untyped_data()),
                      operand,
                      const_cast<char*>(
                          static_cast<const char*>(shards[q].untyped_data())),
                      OffsetOf(tiling, tile, operand), /*to_large=*/true);
          }
          return std::vector<Literal>(shards.size(), full);
        };
        if (a.num_partitions == 1 || execution.collectives == nullptr) {
          if (a.num_partitions != 1) {
            return absl::FailedPreconditionError(
                what +
                " gathers every partition's shard but this execution has "
                "no way to meet its peers; run the program on a worker");
          }
          absl::StatusOr<std::vector<Literal>> out =
              combine({*operands[0].value});
          if (!out.ok()) return out.status();
          return std::move((*out)[0]);
        }
        CollectiveRequest request;
        request.computation = computation;
        request.instruction = name;
        request.kind = "SPMDShardToFullShape";
        for (int q = 0; q < a.num_partitions; ++q) {
          request.devices.push_back(a.device(execution.replica_id, q));
        }
        request.rank = execution.partition_id;
        request.signature = operand.ToString();
        return execution.collectives->Exchange(request, *operands[0].value,
                                               combine);
      });
}

}  // namespace tpu::emulator::interpreter
