#include "emulator/worker/operations.h"

#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "emulator/worker/op_common.h"
#include "hlo/memory_budget.h"
#include "proto/event_id.h"

namespace tpu::emulator {

absl::StatusOr<uint64_t> UseHandle(const OpContext& ctx, int64_t wire_handle,
                                   absl::FunctionRef<std::string()> role,
                                   BuiltOp* op) {
  const EventId handle = EventId::FromInt(wire_handle);
  if (handle.client_id != ctx.session->client_id()) {
    return absl::InvalidArgumentError(absl::StrCat(
        role(), ": handle ", wire_handle, " belongs to client ",
        handle.client_id, ", not to client ", ctx.session->client_id(),
        " (handles are scoped to the client that created them)."));
  }
  op->deps.push_back(handle.operation_id);
  return handle.operation_id;
}

absl::StatusOr<int> LocalCore(const OpContext& ctx, int64_t core_id,
                              absl::FunctionRef<std::string()> role) {
  const int local = ctx.worker->topology.LocalIndex(core_id);
  if (local < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(role(), ": core_id ", core_id,
                     " is not served by this worker, which has ",
                     ctx.worker->topology.DescribeLocalCores(), "."));
  }
  return local;
}

namespace {

absl::StatusOr<BuiltOp> Build(const OpContext& ctx,
                              const tpu_driver::StreamRequest::Entry& entry,
                              std::shared_ptr<AlignedBuffer> payload) {
  using Entry = tpu_driver::StreamRequest::Entry;
  switch (entry.request_case()) {
    case Entry::kAlloc:
      return BuildAlloc(ctx, entry.alloc());
    case Entry::kAllocTuple:
      return BuildAllocTuple(ctx, entry.alloc_tuple());
    case Entry::kDealloc:
      return BuildDealloc(ctx, entry.dealloc());
    case Entry::kTransferTo:
      return BuildTransferTo(ctx, entry.transfer_to(), std::move(payload));
    case Entry::kTransferFrom:
      return BuildTransferFrom(ctx, entry.transfer_from());
    case Entry::kTransferFromTo:
      return BuildTransferFromTo(ctx, entry.transfer_from_to());
    case Entry::kCompile:
      return BuildCompile(ctx, entry.compile());
    case Entry::kLoad:
      return BuildLoad(ctx, entry.load());
    case Entry::kUnload:
      return BuildUnload(ctx, entry.unload());
    case Entry::kExecute:
      return BuildExecute(ctx, entry.execute());
    case Entry::REQUEST_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      ctx.Name(),
      " has no request: set one of alloc, alloc_tuple, dealloc, transfer_to, "
      "transfer_from, transfer_from_to, compile, load, unload, execute."));
}

}  // namespace

void SubmitEntry(const WorkerContext& worker,
                 const std::shared_ptr<Session>& session,
                 const tpu_driver::StreamRequest::Entry& entry,
                 std::shared_ptr<AlignedBuffer> payload,
                 const std::shared_ptr<ResponseSink>& sink) {
  const EventId id = EventId::FromInt(entry.operation_id());
  // Refused admission (the client's limits) fails this operation like a
  // malformed one: dependents see the failure, not a missing operation.
  const int64_t payload_bytes =
      payload != nullptr ? payload->size()
      : entry.has_transfer_to()
          ? static_cast<int64_t>(entry.transfer_to().data().size())
          : 0;
  absl::Status admitted = session->Admit(payload_bytes, id.operation_id);
  auto ctx = std::make_shared<const OpContext>(
      OpContext{&worker, session, sink, entry.operation_id(), id.operation_id,
                admitted.ok() ? payload_bytes : -1});
  absl::StatusOr<BuiltOp> built = absl::InternalError("not built");
  if (!admitted.ok()) {
    built = admitted;
  } else {
    try {
      built = Build(*ctx, entry, std::move(payload));
    } catch (const std::bad_alloc& error) {
      built = AllocationFailureStatus(error);
    }
  }
  absl::Status wait_error;
  if (built.ok()) {
    for (int64_t wire : entry.wait_for_id()) {
      // Id 0 is what the real client gives events that failed locally; it
      // never names an operation of ours, and the client has already
      // reported that failure itself.
      if (wire == 0) continue;
      absl::StatusOr<uint64_t> dep = UseHandle(
          *ctx, wire, [&ctx] { return ctx->Role(" wait_for_id"); }, &*built);
      if (!dep.ok()) {
        wait_error = dep.status();
        break;
      }
    }
  }
  if (!built.ok() || !wait_error.ok()) {
    const absl::Status error = built.ok() ? wait_error : built.status();
    session->scheduler().Reject(ctx->op, error,
                                [ctx](absl::Status s) { ctx->Respond(s); });
    return;
  }
  std::function<void()> body = std::move(built->body);
  session->scheduler().Submit(
      ctx->op, built->deps, [ctx, body = std::move(body)](absl::Status s) {
        if (!s.ok()) {
          ctx->Respond(s);
          return;
        }
        // Bodies allocate before they finish; an allocation the budget or
        // the system refuses fails this operation only.
        try {
          body();
        } catch (const std::bad_alloc& error) {
          ctx->Finish(absl::Status(
              absl::StatusCode::kResourceExhausted,
              absl::StrCat(ctx->Name(), ": ",
                           AllocationFailureStatus(error).message())));
        }
      });
}

}  // namespace tpu::emulator
