#ifndef SOFTWARE_TPU_EMULATOR_OPERATIONS_H_
#define SOFTWARE_TPU_EMULATOR_OPERATIONS_H_

// Turns one StreamRequest entry into a scheduled operation of its client.
//
// Everything that can be checked from the entry alone (the oneof, sizes,
// core ids, the client bits of handles and wait_for_ids) is checked here; a
// malformed entry becomes a failed operation (its dependents fail at once)
// and an error response, never a crash. The rest is checked when the
// operation's dependencies are met. Exactly one response is delivered to
// `sink` per entry, echoing its operation_id; the caller has called
// sink->Expect() for it.
//
// Thread safety: safe to call concurrently.

#include <memory>

#include "emulator/worker/response_sink.h"
#include "emulator/worker/session.h"
#include "emulator/worker/worker_context.h"
#include "proto/tpu_service.pb.h"

namespace tpu::emulator {

// `payload`: the entry's transfer_to data when it came beside the entry
// (emulator/transfer_data.h), or null.
// REQUIRES: the entry's operation_id carries session->client_id().
void SubmitEntry(const WorkerContext& worker,
                 const std::shared_ptr<Session>& session,
                 const tpu_driver::StreamRequest::Entry& entry,
                 std::shared_ptr<AlignedBuffer> payload,
                 const std::shared_ptr<ResponseSink>& sink);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_OPERATIONS_H_
