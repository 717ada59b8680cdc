// Buffer operations: alloc, alloc_tuple, dealloc and the three transfers.

#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "emulator/trace/recorder.h"
#include "emulator/worker/device_buffer.h"
#include "emulator/worker/fault_hooks.h"
#include "emulator/worker/op_common.h"
#include "hlo/aligned_buffer.h"
#include "hlo/shape.h"

namespace tpu::emulator {
namespace {

// One transfer_from response must stay below gRPC's 2 GiB message limit.
constexpr int64_t kMaxTransferFromBytes =
    (int64_t{1} << 31) - (int64_t{1} << 20);

// Roles of the transfers' buffers, after the operation's name, in messages.
constexpr char kTransferToRole[] = " transfer_to target";
constexpr char kTransferFromRole[] = " transfer_from source";

absl::Status ArrayOnly(const DeviceBuffer& buffer, const std::string& role) {
  if (buffer.is_tuple()) {
    return absl::InvalidArgumentError(absl::StrCat(
        role, " is a ", buffer.Describe(),
        "; transfers move array buffers: transfer each element instead."));
  }
  return absl::OkStatus();
}

// A slice on the client's track for a transfer, when tracing; else 0.
uint64_t TransferSlice(const OpContext& ctx, const char* kind,
                       const char* direction, int64_t bytes) {
  trace::Recorder* const recorder = ctx.worker->recorder;
  if (!recorder->on()) return 0;
  return recorder->Begin(trace::ClientTrack(ctx.session->client_id()),
                         trace::Name(kind, " ", bytes, " B"), "transfer",
                         trace::Args()
                             .AddOperation("operation", ctx.wire_id)
                             .Add("direction", direction)
                             .Add("bytes", bytes));
}

}  // namespace

absl::StatusOr<BuiltOp> BuildAlloc(const OpContext& ctx,
                                   const tpu_driver::AllocateRequest& request) {
  auto role = [&ctx] { return ctx.Role(" alloc"); };
  absl::StatusOr<int> core = LocalCore(ctx, request.core_id(), role);
  if (!core.ok()) return core.status();
  int64_t size = 0;
  std::optional<Shape> shape;
  switch (request.size_case()) {
    case tpu_driver::AllocateRequest::kNumBytes:
      size = request.num_bytes();
      if (size < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(role(), ": num_bytes is negative (", size, ")."));
      }
      break;
    case tpu_driver::AllocateRequest::kShape: {
      absl::StatusOr<Shape> parsed = Shape::FromProto(request.shape());
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            role(), ": invalid shape: ", parsed.status().message()));
      }
      if (!parsed->IsArray()) {
        return absl::InvalidArgumentError(absl::StrCat(
            role(), ": cannot allocate ", parsed->ToString(),
            " by shape; allocate arrays and group them with alloc_tuple."));
      }
      size = parsed->ByteSize();
      shape = *std::move(parsed);
      break;
    }
    case tpu_driver::AllocateRequest::SIZE_NOT_SET:
      return absl::InvalidArgumentError(
          absl::StrCat(role(), " has neither num_bytes nor shape."));
  }
  BuiltOp op;
  const int local = *core;
  const int core_id = static_cast<int>(request.core_id());
  auto alloc = [ctx, local, core_id, size, shape = std::move(shape)](double) {
    absl::StatusOr<HbmReservation> reservation =
        ctx.worker->hbm[local]->Reserve(size);
    if (!reservation.ok()) {
      ctx.Finish(absl::Status(reservation.status().code(),
                              absl::StrCat(ctx.Name(), " alloc: ",
                                           reservation.status().message())));
      return;
    }
    auto buffer = DeviceBuffer::CreateArray(core_id, size, shape,
                                            *std::move(reservation));
    ctx.Finish(ctx.session->Add(ctx.op, std::move(buffer)));
  };
  op.body = [ctx, core_id, alloc = std::move(alloc)]() {
    if (!FaultRulesActive(ctx)) return alloc(1);
    StartWithFaults(ctx, faults::OpKind::kAlloc, core_id, "", alloc);
  };
  return op;
}

absl::StatusOr<BuiltOp> BuildAllocTuple(
    const OpContext& ctx, const tpu_driver::AllocateTupleRequest& request) {
  const std::string role = absl::StrCat(ctx.Name(), " alloc_tuple");
  absl::StatusOr<int> core = LocalCore(ctx, request.core_id(), role);
  if (!core.ok()) return core.status();
  BuiltOp op;
  std::vector<uint64_t> children;
  for (int i = 0; i < request.children_size(); ++i) {
    absl::StatusOr<uint64_t> child = UseHandle(
        ctx, request.children(i), absl::StrCat(role, " child ", i), &op);
    if (!child.ok()) return child.status();
    children.push_back(*child);
  }
  const int core_id = static_cast<int>(request.core_id());
  auto alloc = [ctx, core_id, role, children = std::move(children)](double) {
    std::vector<std::shared_ptr<DeviceBuffer>> buffers;
    buffers.reserve(children.size());
    for (size_t i = 0; i < children.size(); ++i) {
      const std::string what = absl::StrCat(role, " child ", i);
      auto child = ctx.session->GetBuffer(children[i], what);
      if (!child.ok()) return ctx.Finish(child.status());
      if ((*child)->core_id() != core_id) {
        return ctx.Finish(absl::InvalidArgumentError(absl::StrCat(
            what, " is ", (*child)->Describe(), " but the tuple is on core ",
            core_id, ": a tuple and its elements share a core.")));
      }
      buffers.push_back(*std::move(child));
    }
    ctx.Finish(ctx.session->Add(
        ctx.op, DeviceBuffer::CreateTuple(core_id, std::move(buffers))));
  };
  op.body = [ctx, core_id, alloc = std::move(alloc)]() {
    StartWithFaults(ctx, faults::OpKind::kAlloc, core_id, "", alloc);
  };
  return op;
}

absl::StatusOr<BuiltOp> BuildDealloc(
    const OpContext& ctx, const tpu_driver::DeallocateRequest& request) {
  BuiltOp op;
  absl::StatusOr<uint64_t> handle = UseHandle(
      ctx, request.handle(), [&ctx] { return ctx.Role(" dealloc"); }, &op);
  if (!handle.ok()) return handle.status();
  op.body = [ctx, handle = *handle]() {
    auto dealloc = [ctx, handle](double) {
      auto buffer = ctx.session->TakeBuffer(
          handle, [&ctx] { return ctx.Role(" dealloc"); });
      if (!buffer.ok()) return ctx.Finish(buffer.status());
      (*buffer)->Release();
      ctx.Finish(absl::OkStatus());
    };
    if (!FaultRulesActive(ctx)) return dealloc(1);
    StartWithFaults(ctx, faults::OpKind::kDealloc, BufferCore(ctx, handle), "",
                    dealloc);
  };
  return op;
}

absl::StatusOr<BuiltOp> BuildTransferTo(
    const OpContext& ctx, const tpu_driver::TransferToDeviceRequest& request,
    std::shared_ptr<AlignedBuffer> payload) {
  auto role = [&ctx] { return ctx.Role(kTransferToRole); };
  BuiltOp op;
  absl::StatusOr<uint64_t> handle =
      UseHandle(ctx, request.target_handle(), role, &op);
  if (!handle.ok()) return handle.status();
  std::shared_ptr<AlignedBuffer> bytes = std::move(payload);
  if (bytes == nullptr) {
    // Copied now, once, into aligned memory: the request is not kept.
    const int64_t size = static_cast<int64_t>(request.data().size());
    absl::StatusOr<std::shared_ptr<AlignedBuffer>> copy =
        AlignedBuffer::TryAllocate(size);
    if (!copy.ok()) {
      return absl::Status(copy.status().code(),
                          absl::StrCat(role(), ": ", copy.status().message()));
    }
    bytes = *std::move(copy);
    if (size > 0) std::memcpy(bytes->data(), request.data().data(), size);
  }
  // The payload is handed to the buffer, not kept by the operation: a
  // buffer freed right after its transfer gives its memory back to the
  // budget at once, however long the finished operation object lives.
  auto held =
      std::make_shared<std::shared_ptr<AlignedBuffer>>(std::move(bytes));
  auto transfer = [ctx, handle = *handle, held](double) {
    auto role = [&ctx] { return ctx.Role(kTransferToRole); };
    std::shared_ptr<AlignedBuffer> bytes = std::exchange(*held, nullptr);
    if (bytes == nullptr) {
      return ctx.Finish(absl::InternalError(
          absl::StrCat(role(), ": the transfer ran twice")));
    }
    trace::ScopedSlice slice(
        ctx.worker->recorder,
        TransferSlice(ctx, "transfer_to", "host to device", bytes->size()));
    auto buffer = ctx.session->GetBuffer(handle, role);
    if (!buffer.ok()) return ctx.Finish(buffer.status());
    if ((*buffer)->is_tuple()) return ctx.Finish(ArrayOnly(**buffer, role()));
    if (bytes->size() != (*buffer)->size()) {
      return ctx.Finish(absl::InvalidArgumentError(absl::StrCat(
          role(), " is ", (*buffer)->Describe(), " but the request carries ",
          bytes->size(), " bytes; a transfer must carry exactly ",
          (*buffer)->size(), " bytes.")));
    }
    (*buffer)->set_contents(std::move(bytes));
    ctx.Finish(absl::OkStatus());
  };
  op.body = [ctx, handle = *handle, transfer = std::move(transfer)]() {
    if (!FaultRulesActive(ctx)) return transfer(1);
    StartWithFaults(ctx, faults::OpKind::kTransferTo, BufferCore(ctx, handle),
                    "", transfer);
  };
  return op;
}

absl::StatusOr<BuiltOp> BuildTransferFrom(
    const OpContext& ctx,
    const tpu_driver::TransferFromDeviceRequest& request) {
  BuiltOp op;
  absl::StatusOr<uint64_t> handle = UseHandle(
      ctx, request.source_handle(),
      [&ctx] { return ctx.Role(kTransferFromRole); }, &op);
  if (!handle.ok()) return handle.status();
  auto transfer = [ctx, handle = *handle](double) {
    auto role = [&ctx] { return ctx.Role(kTransferFromRole); };
    auto buffer = ctx.session->GetBuffer(handle, role);
    if (!buffer.ok()) return ctx.Finish(buffer.status());
    trace::ScopedSlice slice(
        ctx.worker->recorder,
        TransferSlice(ctx, "transfer_from", "device to host",
                      (*buffer)->size()));
    if ((*buffer)->is_tuple()) return ctx.Finish(ArrayOnly(**buffer, role()));
    if ((*buffer)->size() > kMaxTransferFromBytes) {
      return ctx.Finish(absl::OutOfRangeError(
          absl::StrCat(role(), " is ", (*buffer)->Describe(),
                       ", more than one protocol message can carry (",
                       kMaxTransferFromBytes, " bytes).")));
    }
    // Snapshot now: a later write must not change what this transfer reads.
    // Contents are immutable, so the snapshot is the contents themselves,
    // sent beside the response without a copy.
    std::shared_ptr<AlignedBuffer> contents = (*buffer)->contents();
    const int64_t size = (*buffer)->size();
    if (contents != nullptr && contents->size() == size) {
      auto entry = MakeResponseEntry(ctx.wire_id, absl::OkStatus());
      return ctx.Finish(std::move(entry), std::move(contents),
                        absl::OkStatus());
    }
    // Never written: zeros that commit no memory (a read-only mapping of the
    // zero page), sent like any contents. A 2 GiB read of a never-written
    // buffer costs address space, not memory or the budget.
    absl::StatusOr<std::shared_ptr<AlignedBuffer>> zeros =
        AlignedBuffer::ReadOnlyZeros(size);
    if (!zeros.ok()) {
      return ctx.Finish(
          absl::Status(zeros.status().code(),
                       absl::StrCat(role(), ": ", zeros.status().message())));
    }
    auto entry = MakeResponseEntry(ctx.wire_id, absl::OkStatus());
    ctx.Finish(std::move(entry), *std::move(zeros), absl::OkStatus());
  };
  op.body = [ctx, handle = *handle, transfer = std::move(transfer)]() {
    if (!FaultRulesActive(ctx)) return transfer(1);
    StartWithFaults(ctx, faults::OpKind::kTransferFrom, BufferCore(ctx, handle),
                    "", transfer);
  };
  return op;
}

absl::StatusOr<BuiltOp> BuildTransferFromTo(
    const OpContext& ctx,
    const tpu_driver::TransferFromDeviceToDeviceRequest& request) {
  const std::string src_role =
      absl::StrCat(ctx.Name(), " transfer_from_to source");
  const std::string dst_role =
      absl::StrCat(ctx.Name(), " transfer_from_to target");
  BuiltOp op;
  absl::StatusOr<uint64_t> src =
      UseHandle(ctx, request.source_handle(), src_role, &op);
  if (!src.ok()) return src.status();
  absl::StatusOr<uint64_t> dst =
      UseHandle(ctx, request.target_handle(), dst_role, &op);
  if (!dst.ok()) return dst.status();
  auto copy = [ctx, src_role, dst_role, src = *src, dst = *dst](double) {
    auto source = ctx.session->GetBuffer(src, src_role);
    if (!source.ok()) return ctx.Finish(source.status());
    auto target = ctx.session->GetBuffer(dst, dst_role);
    if (!target.ok()) return ctx.Finish(target.status());
    absl::Status status = ArrayOnly(**source, src_role);
    if (status.ok()) status = ArrayOnly(**target, dst_role);
    if (!status.ok()) return ctx.Finish(status);
    if ((*source)->size() != (*target)->size()) {
      return ctx.Finish(absl::InvalidArgumentError(absl::StrCat(
          ctx.Name(), " transfer_from_to: source is ", (*source)->Describe(),
          " but target is ", (*target)->Describe(),
          "; both must have the same byte size.")));
    }
    // Contents are immutable, so sharing them is a complete copy.
    trace::ScopedSlice slice(
        ctx.worker->recorder,
        TransferSlice(ctx, "transfer_from_to", "device to device",
                      (*source)->size()));
    (*target)->set_contents((*source)->contents());
    ctx.Finish(absl::OkStatus());
  };
  // A copy counts on its source's core.
  op.body = [ctx, src = *src, copy = std::move(copy)]() {
    if (!FaultRulesActive(ctx)) return copy(1);
    StartWithFaults(ctx, faults::OpKind::kCopy, BufferCore(ctx, src), "", copy);
  };
  return op;
}

}  // namespace tpu::emulator
