#ifndef SOFTWARE_TPU_EMULATOR_OP_COMMON_H_
#define SOFTWARE_TPU_EMULATOR_OP_COMMON_H_

// Internal to the operation builders (buffer_ops.cc, program_ops.cc).
//
// Thread safety: OpContext is immutable and shared by an operation's closures.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "emulator/worker/response_sink.h"
#include "emulator/worker/session.h"
#include "emulator/worker/worker_context.h"
#include "proto/event_id.h"
#include "proto/tpu_service.pb.h"

namespace tpu::emulator {

struct OpContext {
  const WorkerContext* worker;
  std::shared_ptr<Session> session;
  std::shared_ptr<ResponseSink> sink;
  int64_t wire_id;  // echoed in the response
  uint64_t op;      // operation part: the scheduler id, and the handle
  // Payload bytes the session admitted this operation with (Session::Admit),
  // retired with the response; -1 if it was refused admission.
  int64_t admitted_bytes = -1;

  std::string Name() const { return EventId::FromInt(wire_id).ToString(); }
  // Name() followed by `suffix` ("operation 5 (client 3) dealloc"): the
  // role of a handle in error messages, built only when one is reported.
  std::string Role(absl::string_view suffix) const {
    return absl::StrCat(Name(), suffix);
  }
  // Every operation is answered exactly once, through one of these.
  void Respond(const absl::Status& status) const {
    Retire();
    sink->RespondStatus(wire_id, status);
  }
  // Responds and completes the operation. The response is held back until
  // the dependents have been started, so a client that sees this operation
  // done knows that everything waiting only on it is already queued (a core
  // then runs programs in an order the client can reason about). Responses
  // of dependents that finish inline ride in the same batch, after this one.
  void Finish(const absl::Status& status) const {
    sink->Hold();
    Respond(status);
    session->scheduler().Complete(op, status);
    sink->Release();
  }
  // `payload`: transfer_from data sent beside `entry` (emulator/
  // transfer_data.h), or null.
  void Finish(std::unique_ptr<tpu_driver::StreamResponse::Entry> entry,
              std::shared_ptr<AlignedBuffer> payload,
              const absl::Status& status) const {
    sink->Hold();
    Retire();
    sink->Respond(std::move(entry), std::move(payload));
    session->scheduler().Complete(op, status);
    sink->Release();
  }

 private:
  void Retire() const {
    if (admitted_bytes >= 0) session->Retire(admitted_bytes);
  }
};

// A validated operation: what it waits for and its body. The body runs once
// every dependency completed successfully and must call ctx.Finish exactly
// once (on any thread).
struct BuiltOp {
  std::vector<uint64_t> deps;
  std::function<void()> body;
};

// Checks that `wire_handle` belongs to the operation's client and records the
// wait for its creator. Returns the handle's operation part. `role` is
// built only for the error.
absl::StatusOr<uint64_t> UseHandle(const OpContext& ctx, int64_t wire_handle,
                                   absl::FunctionRef<std::string()> role,
                                   BuiltOp* op);
inline absl::StatusOr<uint64_t> UseHandle(const OpContext& ctx,
                                          int64_t wire_handle,
                                          const std::string& role,
                                          BuiltOp* op) {
  return UseHandle(
      ctx, wire_handle, [&role] { return role; }, op);
}

// The local index of `core_id`, or INVALID_ARGUMENT naming the cores served.
absl::StatusOr<int> LocalCore(const OpContext& ctx, int64_t core_id,
                              absl::FunctionRef<std::string()> role);
inline absl::StatusOr<int> LocalCore(const OpContext& ctx, int64_t core_id,
                                     const std::string& role) {
  return LocalCore(ctx, core_id, [&role] { return role; });
}

absl::StatusOr<BuiltOp> BuildAlloc(const OpContext& ctx,
                                   const tpu_driver::AllocateRequest& request);
absl::StatusOr<BuiltOp> BuildAllocTuple(
    const OpContext& ctx, const tpu_driver::AllocateTupleRequest& request);
absl::StatusOr<BuiltOp> BuildDealloc(
    const OpContext& ctx, const tpu_driver::DeallocateRequest& request);
// `payload`: the data when it came beside the request, or null to take the
// request's own.
absl::StatusOr<BuiltOp> BuildTransferTo(
    const OpContext& ctx, const tpu_driver::TransferToDeviceRequest& request,
    std::shared_ptr<AlignedBuffer> payload);
absl::StatusOr<BuiltOp> BuildTransferFrom(
    const OpContext& ctx, const tpu_driver::TransferFromDeviceRequest& request);
absl::StatusOr<BuiltOp> BuildTransferFromTo(
    const OpContext& ctx,
    const tpu_driver::TransferFromDeviceToDeviceRequest& request);
absl::StatusOr<BuiltOp> BuildCompile(const OpContext& ctx,
                                     const tpu_driver::CompileRequest& request);
absl::StatusOr<BuiltOp> BuildLoad(
    const OpContext& ctx, const tpu_driver::LoadProgramRequest& request);
absl::StatusOr<BuiltOp> BuildUnload(
    const OpContext& ctx, const tpu_driver::UnloadProgramRequest& request);
absl::StatusOr<BuiltOp> BuildExecute(const OpContext& ctx,
                                     const tpu_driver::ExecuteRequest& request);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_OP_COMMON_H_
