// Kernel family: ragged-all-to-all, meeting peers through the execution's
// CollectiveExecutor.
//
// ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets,
// recv_sizes) as XLA defines it (its GPU runtime and the tests in
// xla/tests/collective_ops_e2e_test.cc): the arrays are ragged along
// dimension 0, a "row" being one index of that dimension. The four metadata
// operands have the same shape s<n>[N*U] (any integer type; N the group
// size, U updates per peer). Participant i sends, for peer j (j = position in
// the replica group) and update k, idx = j*U + k, the rows
// input[input_offsets[idx], +send_sizes[idx]) into peer j's output at rows
// [output_offsets[idx], +send_sizes[idx]): output_offsets name places in
// the *receiver's* buffer. recv_sizes[idx] on i is what i receives from
// peer j in update k; it must equal what j sends to i. The result is the
// `output` operand with every received update written over it (rows nobody
// writes keep their value); updates are applied in sender order, then
// update order, so overlapping writes are deterministic.
//
// Offsets and sizes are data, so they are checked when the group meets: the
// combine runs once over every participant's operands and fails all of them
// alike with INVALID_ARGUMENT naming the instruction, the replica and the
// update, instead of one participant failing and leaving the others waiting.

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "emulator/interpreter/collective_groups.h"
#include "emulator/interpreter/collectives.h"
#include "emulator/interpreter/kernel_util.h"

namespace tpu::emulator::interpreter {
namespace {

constexpr int kInput = 0;
constexpr int kOutput = 1;
constexpr int kInputOffsets = 2;
constexpr int kSendSizes = 3;
constexpr int kOutputOffsets = 4;
constexpr int kRecvSizes = 5;
constexpr int kOperands = 6;

bool IsIntegral(xla::PrimitiveType type) {
  switch (type) {
    case xla::S8:
    case xla::S16:
    case xla::S32:
    case xla::S64:
    case xla::U8:
    case xla::U16:
    case xla::U32:
    case xla::U64:
      return true;
    default:
      return false;
  }
}

struct Spec {
  std::string computation;
  std::string instruction;
  CollectiveGroups groups;
  Shape input;
  Shape output;
  // Elements of metadata operands: N*U.
  int64_t updates = 0;
  // Bytes of one row (one index of dimension 0) of input and output.
  int64_t row_bytes = 0;
};

class RaggedAllToAllKernel : public Kernel {
 public:
  explicit RaggedAllToAllKernel(Spec spec) : spec_(std::move(spec)) {}

  absl::StatusOr<Literal> Run(
      KernelContext& context,
      absl::Span<const Operand> operands) const override {
    const ExecutionContext& execution = context.execution();
    const DeviceAssignment& assignment =
        AssignmentOrSingle(execution.assignment);
    absl::StatusOr<Participants> participants = ResolveParticipants(
        spec_.groups, assignment, execution.replica_id, execution.partition_id);
    if (!participants.ok()) return participants.status();
    const int64_t n = static_cast<int64_t>(participants->devices.size());
    // Known before meeting anyone, so every participant fails alike.
    if (spec_.updates % n != 0) {
      return Malformed(absl::StrCat(
          spec_.instruction, " has ", spec_.updates,
          " offsets and sizes but its group has ", n,
          " participants: ragged-all-to-all needs the same number of updates "
          "for every peer (a multiple of the group size)"));
    }
    std::vector<Literal> parts;
    for (const Operand& operand : operands) parts.push_back(*operand.value);
    Literal contribution = Literal::Tuple(std::move(parts));

    CollectiveRequest request;
    request.computation = spec_.computation;
    request.instruction = spec_.instruction;
    request.kind = "ragged-all-to-all";
    request.devices = participants->devices;
    request.rank = participants->rank;
    request.signature =
        absl::StrCat(spec_.input.ToString(), ", ", spec_.output.ToString(),
                     ", ", operands[kInputOffsets].value->shape().ToString());
    const std::vector<int64_t> ids = participants->ids;
    CollectiveCombine combine = [this, ids](const std::vector<Literal>& all) {
      return Combine(all, ids);
    };
    if (execution.collectives != nullptr) {
      return execution.collectives->Exchange(request, std::move(contribution),
                                             combine);
    }
    if (n != 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "ragged-all-to-all ", spec_.instruction, " needs ", n,
          " participants but this execution has no way to meet its peers; "
          "run the program on a worker"));
    }
    absl::StatusOr<std::vector<Literal>> outputs = combine({contribution});
    if (!outputs.ok()) return outputs.status();
    return std::move((*outputs)[0]);
  }

 private:
  // What `sender` (a group position) says about update `idx`: where it
  // reads, how much, and where the receiver writes.
  struct Update {
    int64_t input_offset;
    int64_t size;
    int64_t output_offset;
  };

  Update UpdateOf(const Literal& contribution, int64_t idx) const {
    return {ElementAsInt64(contribution.element(kInputOffsets), idx),
            ElementAsInt64(contribution.element(kSendSizes), idx),
            ElementAsInt64(contribution.element(kOutputOffsets), idx)};
  }

  // INVALID_ARGUMENT naming the instruction and what is out of range.
  absl::Status CheckUpdate(const Update& u, int64_t sender_id, int64_t peer,
                           int64_t k, int64_t receiver_recv_size) const {
    const int64_t input_rows = spec_.input.dimensions()[0];
    const int64_t output_rows = spec_.output.dimensions()[0];
    const std::string what = absl::StrCat(
        "ragged-all-to-all ", spec_.instruction, ": ",
        spec_.groups.mode == GroupMode::kCrossPartition ? "partition "
                                                        : "replica ",
        sender_id, "'s update ", k, " for peer ", peer, " (");
    if (u.size < 0 || u.input_offset < 0 ||
        u.input_offset > input_rows - u.size) {
      return Malformed(absl::StrCat(
          what, "input_offset ", u.input_offset, ", send_size ", u.size,
          ") reads rows outside its input's ", input_rows,
          " rows: offsets and sizes must stay within dimension 0"));
    }
    if (u.output_offset < 0 || u.output_offset > output_rows - u.size) {
      return Malformed(absl::StrCat(
          what, "output_offset ", u.output_offset, ", send_size ", u.size,
          ") writes rows outside the output's ", output_rows,
          " rows: offsets and sizes must stay within dimension 0"));
    }
    if (receiver_recv_size != u.size) {
      return Malformed(absl::StrCat(
          what, "send_size ", u.size, ") does not match the peer's recv_size ",
          receiver_recv_size,
          ": recv_sizes must be the all-to-all of send_sizes"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<Literal>> Combine(
      const std::vector<Literal>& all, const std::vector<int64_t>& ids) const {
    const int64_t n = static_cast<int64_t>(all.size());
    const int64_t per_peer = spec_.updates / n;
    // Check everything before writing anything.
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t k = 0; k < per_peer; ++k) {
          const Update u = UpdateOf(all[i], j * per_peer + k);
          const int64_t recv_size =
              ElementAsInt64(all[j].element(kRecvSizes), i * per_peer + k);
          if (absl::Status s = CheckUpdate(u, ids[i], ids[j], k, recv_size);
              !s.ok()) {
            return s;
          }
        }
      }
    }
    std::vector<Literal> outputs;
    outputs.reserve(n);
    for (int64_t j = 0; j < n; ++j) {
      const Literal& initial = all[j].element(kOutput);
      Literal out = Literal::Uninitialized(spec_.output);
      std::memcpy(out.mutable_untyped_data(), initial.untyped_data(),
                  initial.size_bytes());
      auto* dst = static_cast<char*>(out.mutable_untyped_data());
      for (int64_t i = 0; i < n; ++i) {
        const auto* src =
            static_cast<const char*>(all[i].element(kInput).untyped_data());
        for (int64_t k = 0; k < per_peer; ++k) {
          const Update u = UpdateOf(all[i], j * per_peer + k);
          std::memcpy(dst + u.output_offset * spec_.row_bytes,
                      src + u.input_offset * spec_.row_bytes,
                      u.size * spec_.row_bytes);
        }
      }
      outputs.push_back(std::move(out));
    }
    return outputs;
  }

  Spec spec_;
};

absl::StatusOr<std::unique_ptr<Kernel>> CompileRaggedAllToAll(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (absl::Status s = ExpectOperands(instruction, kOperands); !s.ok()) {
    return s;
  }
  Spec spec;
  spec.computation = instruction.parent()->name();
  spec.instruction = instruction.name();
  spec.input = instruction.operand(kInput)->shape();
  spec.output = instruction.operand(kOutput)->shape();
  if (absl::Status s =
          ExpectArray(spec.input, "the input of ragged-all-to-all");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ExpectArray(spec.output, "the output of ragged-all-to-all");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ExpectResultShape(instruction, spec.output); !s.ok()) {
    return s;
  }
  if (spec.input.element_type() != spec.output.element_type() ||
      spec.input.rank() != spec.output.rank() || spec.input.rank() < 1) {
    return Malformed(absl::StrCat(
        "ragged-all-to-all takes input and output of one element type and "
        "rank (at least 1), got ",
        spec.input.ToString(), " and ", spec.output.ToString()));
  }
  for (int64_t d = 1; d < spec.input.rank(); ++d) {
    if (spec.input.dimensions()[d] != spec.output.dimensions()[d]) {
      return Malformed(absl::StrCat(
          "ragged-all-to-all moves whole rows of dimension 0, so input and "
          "output must agree on the other dimensions: ",
          spec.input.ToString(), " vs ", spec.output.ToString()));
    }
  }
  const Shape& metadata = instruction.operand(kInputOffsets)->shape();
  for (int i = kInputOffsets; i <= kRecvSizes; ++i) {
    const Shape& shape = instruction.operand(i)->shape();
    if (shape != metadata) {
      return Malformed(absl::StrCat(
          "the offsets and sizes of ragged-all-to-all (operands 2 to 5) must "
          "have one shape: operand ",
          i, " is ", shape.ToString(), ", operand 2 is ", metadata.ToString()));
    }
  }
  if (!metadata.IsArray() || !IsIntegral(metadata.element_type())) {
    return Malformed(absl::StrCat(
        "the offsets and sizes of ragged-all-to-all must be integer arrays, "
        "got ",
        metadata.ToString()));
  }
  if (metadata.rank() != 1) {
    return absl::UnimplementedError(
        absl::StrCat("ragged-all-to-all with offsets and sizes of rank ",
                     metadata.rank(), " (", metadata.ToString(),
                     ") is not supported: only rank-1 offsets and sizes run"));
  }
  spec.updates = metadata.dimensions()[0];
  spec.row_bytes = ByteWidth(spec.output.element_type());
  for (int64_t d = 1; d < spec.output.rank(); ++d) {
    spec.row_bytes *= spec.output.dimensions()[d];
  }
  absl::StatusOr<CollectiveGroups> groups =
      ReadCollectiveGroups(instruction, compiler.options().num_replicas);
  if (!groups.ok()) return groups.status();
  spec.groups = *std::move(groups);
  return std::unique_ptr<Kernel>(new RaggedAllToAllKernel(std::move(spec)));
}

}  // namespace

void RegisterRaggedAllToAllKernels(KernelRegistry& registry) {
  registry.Register("ragged-all-to-all", &CompileRaggedAllToAll);
}

}  // namespace tpu::emulator::interpreter
