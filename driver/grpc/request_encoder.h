#ifndef SOFTWARE_TPU_DRIVER_GRPC_REQUEST_ENCODER_H_
#define SOFTWARE_TPU_DRIVER_GRPC_REQUEST_ENCODER_H_

// Serializes a batch of OutgoingEntry into StreamRequest messages without
// building a StreamRequest: transfer_to payloads go from the caller's memory
// into their own slice, instead of being copied into a proto string and
// copied again by its serialization.
//
// The payload is appended as a second occurrence of the entry's transfer_to
// field holding only `data`; protobuf parsers merge repeated occurrences of a
// message field, so every parser sees one transfer_to with both fields.
//
// Thread safety: stateless functions.

#include <cstdint>
#include <vector>

#include "driver/transport.h"
#include "grpcpp/support/byte_buffer.h"

namespace tpu::driver {

// Messages larger than this are split (one entry may exceed it on its own).
inline constexpr int64_t kMaxStreamRequestBytes = 10 * 1000 * 1000;

// Encodes `batch` in order into one or more StreamRequest messages of at most
// `max_message_bytes` each (except an entry that is larger on its own).
std::vector<grpc::ByteBuffer> EncodeStreamRequests(
    const std::vector<OutgoingEntry>& batch,
    int64_t max_message_bytes = kMaxStreamRequestBytes);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_GRPC_REQUEST_ENCODER_H_
