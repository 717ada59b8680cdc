// Kernel family: send, recv, send-done and recv-done.
//
// Two kinds of transfer, told apart by the instruction:
//  - Between devices, when send and recv carry the frontend attribute
//    _xla_send_recv_source_target_pairs="{{s,t},...}" (XLA's pipeline
//    parallelism): as in XLA's GPU runtime, ids are partition ids when the
//    instruction has a channel_id > 0 and replica ids otherwise; device s
//    sends to t, a device that is no source sends nothing, and a device that
//    is no target receives zeros. The k-th value s sends to t is the k-th t
//    receives from s (TransferRequest), so a send on channel 1 pairs with a
//    recv on channel 2, as XLA's own tests write them. A send never waits;
//    recv-done waits for the data. _xla_send_recv_validation="invalid"
//    skips the transfer, and "{{lo,hi},...}" (one bound per pair) lets the
//    pair's transfer happen only on runs lo..hi of the instruction.
//  - Within one program on one core otherwise (channels of the execution,
//    KernelContext::Send/Receive).
// Host transfers (is_host_transfer=true) reach the host program through the
// runtime, which the tpu_driver API has no way to reach: UNIMPLEMENTED.
//
// recv-done finds what to do through data flow, not through the text: the
// recv's u32 context (element 1 of its result, opaque to programs) says
// "receive from device d" (kFromDevice | d), "nothing to receive" (kNothing)
// or 0 for a transfer within the program. So a recv whose context travels
// through a while loop's state and is completed by a recv-done in another
// computation (XLA's pipelined send/recv) pairs as written.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "emulator/interpreter/collectives.h"
#include "emulator/interpreter/kernel_util.h"

namespace tpu::emulator::interpreter {
namespace {

constexpr char kPairsAttribute[] = "_xla_send_recv_source_target_pairs";
constexpr char kValidationAttribute[] = "_xla_send_recv_validation";

// The recv context's values.
constexpr uint32_t kFromDevice = 0x80000000u;
constexpr uint32_t kNothing = 0x40000000u;

Literal TokenValue() { return Literal::Zeros(Shape::Token()); }

// The (data, u32 context, token) tuple send and recv return.
Shape TransferShape(const Shape& data) {
  return Shape::Tuple({data, Shape::Scalar(xla::U32), Shape::Token()});
}

Literal TransferValue(Literal data, uint32_t context) {
  std::vector<Literal> parts;
  parts.push_back(std::move(data));
  parts.push_back(Literal::FromVector<uint32_t>(
      xla::U32, {}, absl::MakeConstSpan(&context, 1)));
  parts.push_back(TokenValue());
  return Literal::Tuple(std::move(parts));
}

absl::Status ExpectToken(const HloInstruction& instruction, int64_t operand) {
  const Shape& shape = instruction.operand(operand)->shape();
  if (!shape.IsToken()) {
    return Malformed(absl::StrCat("operand ", operand, " of ",
                                  instruction.opcode(),
                                  " must be a token, got ", shape.ToString()));
  }
  return absl::OkStatus();
}

absl::Status RejectHostTransfer(const HloInstruction& instruction) {
  if (!instruction.proto().is_host_transfer()) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      instruction.opcode(), " on channel ", instruction.proto().channel_id(),
      " is a host transfer (is_host_transfer=true), which the emulator does "
      "not support: only send and recv between devices of one launch, or "
      "between instructions of one program on one core, run"));
}

// "{{0,1},{1,2}}" -> {{0,1},{1,2}}; each group must have two ids.
absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> ParsePairs(
    absl::string_view text, absl::string_view attribute) {
  std::vector<std::vector<int64_t>> groups;
  int depth = 0;
  std::string number;
  auto bad = [&]() {
    return Malformed(
        absl::StrCat(attribute, "=\"", text,
                     "\" is not a list of pairs like {{0,1},{1,2}}"));
  };
  for (char c : text) {
    if (absl::ascii_isspace(c)) continue;
    if (c == '{') {
      if (++depth > 2) return bad();
      if (depth == 2) groups.emplace_back();
    } else if (c == '}' || c == ',') {
      if (!number.empty()) {
        int64_t value = 0;
        if (depth != 2 || !absl::SimpleAtoi(number, &value)) return bad();
        groups.back().push_back(value);
        number.clear();
      }
      if (c == '}' && --depth < 0) return bad();
    } else if (absl::ascii_isdigit(c) || c == '-') {
      number.push_back(c);
    } else {
      return bad();
    }
  }
  if (depth != 0) return bad();
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const std::vector<int64_t>& group : groups) {
    if (group.size() != 2) return bad();
    pairs.emplace_back(group[0], group[1]);
  }
  return pairs;
}

// What a send or recv between devices does, read once at compile time.
struct DeviceTransfer {
  std::string computation;
  std::string instruction;
  // Ids are partition ids (channel_id > 0) or replica ids.
  bool across_partitions = false;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  // _xla_send_recv_validation: "invalid", or one inclusive run bound per
  // pair (empty: always valid).
  bool invalid = false;
  std::vector<std::pair<int64_t, int64_t>> bounds;
  Shape data;

  // The pair (index into `pairs`) whose source (or target) is `id`, or -1.
  int PairFrom(int64_t id) const {
    for (size_t p = 0; p < pairs.size(); ++p) {
      if (pairs[p].first == id) return static_cast<int>(p);
    }
    return -1;
  }
  int PairTo(int64_t id) const {
    for (size_t p = 0; p < pairs.size(); ++p) {
      if (pairs[p].second == id) return static_cast<int>(p);
    }
    return -1;
  }
  // Whether pair `p` transfers on run `run` of the instruction.
  bool Valid(int p, int64_t run) const {
    if (invalid) return false;
    if (bounds.empty()) return true;
    return bounds[p].first <= run && run <= bounds[p].second;
  }
};

// The transfer between devices `instruction` describes, or nullopt-like
// (pairs empty and has_pairs false) for a transfer within the program.
absl::StatusOr<std::unique_ptr<DeviceTransfer>> ReadDeviceTransfer(
    const HloInstruction& instruction, const Shape& data, int num_replicas) {
  const auto& attributes = instruction.proto().frontend_attributes().map();
  auto it = attributes.find(kPairsAttribute);
  if (it == attributes.end()) return std::unique_ptr<DeviceTransfer>();
  auto transfer = std::make_unique<DeviceTransfer>();
  transfer->computation = instruction.parent()->name();
  transfer->instruction = instruction.name();
  transfer->across_partitions = instruction.proto().channel_id() > 0;
  transfer->data = data;
  absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> pairs =
      ParsePairs(it->second, kPairsAttribute);
  if (!pairs.ok()) return pairs.status();
  transfer->pairs = *std::move(pairs);
  absl::flat_hash_set<int64_t> sources, targets;
  for (const auto& [source, target] : transfer->pairs) {
    for (int64_t id : {source, target}) {
      if (id < 0 || (!transfer->across_partitions && id >= num_replicas)) {
        return Malformed(absl::StrCat(
            kPairsAttribute, " names replica ", id,
            " but the program is compiled for ", num_replicas,
            " replicas (without a channel_id, send and recv pair replicas)"));
      }
    }
    if (!sources.insert(source).second || !targets.insert(target).second) {
      return Malformed(absl::StrCat(
          kPairsAttribute, "=\"", it->second,
          "\" names a device twice as source or twice as target: each sends "
          "to one peer and receives from one peer"));
    }
  }
  auto validation = attributes.find(kValidationAttribute);
  if (validation != attributes.end()) {
    if (validation->second == "invalid") {
      transfer->invalid = true;
    } else {
      absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> bounds =
          ParsePairs(validation->second, kValidationAttribute);
      if (!bounds.ok()) return bounds.status();
      if (bounds->size() != transfer->pairs.size()) {
        return Malformed(absl::StrCat(
            kValidationAttribute, "=\"", validation->second, "\" has ",
            bounds->size(), " bounds for ", transfer->pairs.size(),
            " source-target pairs: give one {first,last} run per pair"));
      }
      transfer->bounds = *std::move(bounds);
    }
  }
  return transfer;
}

// This device's id in the transfer's id space, and the device of an id.
struct Place {
  int64_t id = 0;
  int device = 0;
};

absl::StatusOr<Place> WhereAmI(const DeviceTransfer& transfer,
                               const ExecutionContext& execution) {
  const DeviceAssignment& a = AssignmentOrSingle(execution.assignment);
  Place place;
  place.id = transfer.across_partitions ? execution.partition_id
                                        : execution.replica_id;
  place.device = a.device(execution.replica_id, execution.partition_id);
  return place;
}

absl::StatusOr<int> DeviceOf(const DeviceTransfer& transfer,
                             const ExecutionContext& execution, int64_t id) {
  const DeviceAssignment& a = AssignmentOrSingle(execution.assignment);
  const int count =
      transfer.across_partitions ? a.num_partitions : a.num_replicas;
  if (id < 0 || id >= count) {
    return Malformed(
        absl::StrCat(transfer.instruction, ": ", kPairsAttribute, " names ",
                     transfer.across_partitions ? "partition " : "replica ", id,
                     " but this launch has ", count,
                     transfer.across_partitions ? " partitions" : " replicas"));
  }
  return transfer.across_partitions ? a.device(execution.replica_id, id)
                                    : a.device(id, execution.partition_id);
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileSend(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  if (absl::Status s = ExpectToken(instruction, 1); !s.ok()) return s;
  if (absl::Status s = RejectHostTransfer(instruction); !s.ok()) return s;
  const Shape& data = instruction.operand(0)->shape();
  if (absl::Status s = ExpectResultShape(instruction, TransferShape(data));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::unique_ptr<DeviceTransfer>> read =
      ReadDeviceTransfer(instruction, data, compiler.options().num_replicas);
  if (!read.ok()) return read.status();
  if (*read == nullptr) {
    const int64_t channel = instruction.proto().channel_id();
    return MakeKernel(
        [channel](
            KernelContext& context,
            absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
          context.Send(channel, *operands[0].value);
          return TransferValue(*operands[0].value, 0);
        });
  }
  std::shared_ptr<const DeviceTransfer> transfer = *std::move(read);
  return MakeKernel([transfer](KernelContext& context,
                               absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    const ExecutionContext& execution = context.execution();
    const int64_t run = context.CountRun(transfer.get());
    absl::StatusOr<Place> me = WhereAmI(*transfer, execution);
    if (!me.ok()) return me.status();
    const int p = transfer->PairFrom(me->id);
    if (p >= 0 && transfer->Valid(p, run)) {
      absl::StatusOr<int> target =
          DeviceOf(*transfer, execution, transfer->pairs[p].second);
      if (!target.ok()) return target.status();
      if (execution.collectives == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(
            "send ", transfer->instruction, " sends to device ", *target,
            " but this execution has no way to reach other devices; run the "
            "program on a worker"));
      }
      TransferRequest request;
      request.computation = transfer->computation;
      request.instruction = transfer->instruction;
      request.kind = "send";
      request.source = me->device;
      request.target = *target;
      request.signature = transfer->data.ToString();
      if (absl::Status s =
              execution.collectives->Send(request, *operands[0].value);
          !s.ok()) {
        return s;
      }
    }
    return TransferValue(*operands[0].value, 0);
  });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileRecv(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  if (absl::Status s = ExpectToken(instruction, 0); !s.ok()) return s;
  if (absl::Status s = RejectHostTransfer(instruction); !s.ok()) return s;
  const Shape& shape = instruction.shape();
  if (!shape.IsTuple() || shape.tuple_size() != 3 ||
      shape != TransferShape(shape.tuple_shapes()[0])) {
    return Malformed(absl::StrCat(
        "recv must return (data, u32[], token[]), got ", shape.ToString()));
  }
  const Shape& data = shape.tuple_shapes()[0];
  absl::StatusOr<std::unique_ptr<DeviceTransfer>> read =
      ReadDeviceTransfer(instruction, data, compiler.options().num_replicas);
  if (!read.ok()) return read.status();
  // The data arrives at recv-done; until then the buffer holds zeros.
  if (*read == nullptr) {
    return MakeConstantKernel(TransferValue(Literal::Zeros(data), 0));
  }
  std::shared_ptr<const DeviceTransfer> transfer = *std::move(read);
  return MakeKernel(
      [transfer](KernelContext& context,
                 absl::Span<const Operand>) -> absl::StatusOr<Literal> {
        const ExecutionContext& execution = context.execution();
        const int64_t run = context.CountRun(transfer.get());
        absl::StatusOr<Place> me = WhereAmI(*transfer, execution);
        if (!me.ok()) return me.status();
        uint32_t what = kNothing;
        const int p = transfer->PairTo(me->id);
        if (p >= 0 && transfer->Valid(p, run)) {
          absl::StatusOr<int> source =
              DeviceOf(*transfer, execution, transfer->pairs[p].first);
          if (!source.ok()) return source.status();
          what = kFromDevice | static_cast<uint32_t>(*source);
        }
        return TransferValue(Literal::Zeros(transfer->data), what);
      });
}

// send-done and recv-done take the (data, u32 context, token) of a send or
// recv: directly, or carried through tuples and loop state.
absl::Status ExpectTransferOperand(const HloInstruction& instruction,
                                   const Shape& data) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& operand = instruction.operand(0)->shape();
  if (operand != TransferShape(data)) {
    return Malformed(absl::StrCat(
        instruction.opcode(), " takes what a ",
        instruction.opcode() == "send-done" ? "send" : "recv",
        " returns, (data, u32[], token[]), got ", operand.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileSendDone(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& operand = instruction.operand(0)->shape();
  if (!operand.IsTuple() || operand.tuple_size() != 3) {
    return Malformed(absl::StrCat(
        "send-done takes what a send returns, (data, u32[], token[]), got ",
        operand.ToString()));
  }
  if (absl::Status s =
          ExpectTransferOperand(instruction, operand.tuple_shapes()[0]);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ExpectResultShape(instruction, Shape::Token());
      !s.ok()) {
    return s;
  }
  // Sends are buffered: once sent, done.
  return MakeConstantKernel(TokenValue());
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileRecvDone(
    const HloInstruction& instruction, KernelCompiler&) {
  const Shape& shape = instruction.shape();
  if (!shape.IsTuple() || shape.tuple_size() != 2 ||
      !shape.tuple_shapes()[1].IsToken()) {
    return Malformed(absl::StrCat("recv-done must return (data, token[]), got ",
                                  shape.ToString()));
  }
  const Shape data = shape.tuple_shapes()[0];
  if (absl::Status s = ExpectTransferOperand(instruction, data); !s.ok()) {
    return s;
  }
  // A transfer within the program uses the recv's channel (XLA copies it
  // to recv-done, which is all there is when the context came through a
  // loop).
  const HloInstruction& operand = *instruction.operand(0);
  const int64_t channel = operand.opcode() == "recv"
                              ? operand.proto().channel_id()
                              : instruction.proto().channel_id();
  const std::string name = instruction.name();
  const std::string computation = instruction.parent()->name();
  return MakeKernel([channel, data, name, computation](
                        KernelContext& context,
                        absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    const uint32_t what =
        static_cast<uint32_t>(ElementAsInt64(operands[0].value->element(1), 0));
    absl::StatusOr<Literal> value;
    if (what == 0) {
      value = context.Receive(channel);
    } else if (what == kNothing) {
      value = Literal::Zeros(data);
    } else if ((what & kFromDevice) != 0) {
      const ExecutionContext& execution = context.execution();
      if (execution.collectives == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(
            "recv-done ", name,
            " receives from another device but this execution has no way "
            "to reach other devices; run the program on a worker"));
      }
      const DeviceAssignment& a = AssignmentOrSingle(execution.assignment);
      TransferRequest request;
      request.computation = computation;
      request.instruction = name;
      request.kind = "recv-done";
      request.source = static_cast<int>(what & ~kFromDevice);
      request.target = a.device(execution.replica_id, execution.partition_id);
      request.signature = data.ToString();
      value = execution.collectives->Receive(request);
      if (value.ok() && value->shape() != data) {
        return Malformed(absl::StrCat(
            "recv-done ", name, " expects ", data.ToString(), " from device ",
            request.source, ", which sent ", value->shape().ToString(),
            ": the k-th send from a device to another pairs with the k-th "
            "recv-done there"));
      }
    } else {
      return Malformed(absl::StrCat(
          "recv-done ", name, " got a context (", what,
          ") that no recv made: its operand must come from a recv"));
    }
    if (!value.ok()) return value.status();
    std::vector<Literal> parts;
    parts.push_back(*std::move(value));
    parts.push_back(TokenValue());
    return Literal::Tuple(std::move(parts));
  });
}

}  // namespace

void RegisterSendRecvKernels(KernelRegistry& registry) {
  registry.Register("send", &CompileSend);
  registry.Register("send-done", &CompileSendDone);
  registry.Register("recv", &CompileRecv);
  registry.Register("recv-done", &CompileRecvDone);
}

}  // namespace tpu::emulator::interpreter
