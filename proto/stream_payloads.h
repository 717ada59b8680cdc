#ifndef SOFTWARE_TPU_PROTO_STREAM_PAYLOADS_H_
#define SOFTWARE_TPU_PROTO_STREAM_PAYLOADS_H_
// Where StreamExecute's transfer payloads sit in its messages
// (proto/tpu_service.proto), for the codecs of both ends.

#include <cstdint>

#include "proto/wire_slices.h"

namespace tpu {

// StreamRequest.entry.
inline constexpr uint32_t kStreamRequestEntry = 30;
// StreamResponse.entry.
inline constexpr uint32_t kStreamResponseEntry = 20;

// StreamRequest.Entry.transfer_to (4) .data (2); the other members of the
// entry's oneof: alloc 1, alloc_tuple 2, dealloc 3, transfer_from 5,
// compile 6, load 7, unload 8, execute 9, transfer_from_to 10.
inline constexpr NestedBytes kTransferToData = {
    4, 2,
    OneofBit(1) | OneofBit(2) | OneofBit(3) | OneofBit(5) | OneofBit(6) |
        OneofBit(7) | OneofBit(8) | OneofBit(9) | OneofBit(10)};

// StreamResponse.Entry.transfer_from (3) .data (2); the other member of the
// entry's oneof: compile 4.
inline constexpr NestedBytes kTransferFromData = {3, 2, OneofBit(4)};

}  // namespace tpu

#endif  // SOFTWARE_TPU_PROTO_STREAM_PAYLOADS_H_
