#ifndef SOFTWARE_TPU_DRIVER_GRPC_RESPONSE_DECODER_H_
#define SOFTWARE_TPU_DRIVER_GRPC_RESPONSE_DECODER_H_

// Decodes a StreamResponse from gRPC's slices, copying transfer_from data
// straight into the caller's destination instead of into a proto string that
// is then copied again. Entries without such a destination are parsed by
// protobuf as usual.
//
// Thread safety: stateless functions.

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/tpu_service.pb.h"

namespace tpu::driver {

// Where the `bytes` bytes of operation `wire_id`'s transfer_from data go, or
// null to leave them in the decoded entry.
using TransferDestination =
    std::function<void*(uint64_t wire_id, int64_t bytes)>;

// Decodes `buffer` into `response`. Data copied to a destination is left out
// of its entry (transfer_from present, data empty). DATA_LOSS for a message
// that is not a valid StreamResponse (including missing required fields).
absl::Status DecodeStreamResponse(const grpc::ByteBuffer& buffer,
                                  const TransferDestination& destination,
                                  tpu_driver::StreamResponse* response);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_GRPC_RESPONSE_DECODER_H_
