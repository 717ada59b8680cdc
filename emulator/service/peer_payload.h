#ifndef SOFTWARE_TPU_EMULATOR_SERVICE_PEER_PAYLOAD_H_
#define SOFTWARE_TPU_EMULATOR_SERVICE_PEER_PAYLOAD_H_

// The wire form of Peer messages (proto/peer.proto) that carry a large
// array: the message with its `value` holding only the array's shape, then
// the array's bytes as the message's bytes field `data`. The sender's bytes
// go to gRPC as a slice that references them (no copy); the receiver copies
// them once, from gRPC's slices into the buffer the Literal adopts. A
// LiteralProto would copy them four times (into the proto, into gRPC's
// buffer, into the parsed proto, into the Literal) and fault in fresh pages
// for two of them. Protobuf parses the same bytes into the same message.
//
// Thread safety: stateless functions.

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"
#include "hlo/aligned_buffer.h"
#include "hlo/literal.h"
#include "proto/xla_data.pb.h"

namespace tpu::emulator {

// Field numbers of `data` in proto/peer.proto.
inline constexpr uint32_t kContributionResultData = 2;
inline constexpr uint32_t kDeliveryData = 6;

// Sets `*value` to what travels in the message for `literal`: the shape
// alone if its bytes go as `data` (returns true), else the whole literal.
bool PutLiteral(const Literal& literal, xla::LiteralProto* value);

// `message` followed, if `data` is set, by its bytes as field `data_field`.
// The buffer keeps `data` alive until gRPC has sent it.
grpc::ByteBuffer EncodeWithData(const google::protobuf::MessageLite& message,
                                uint32_t data_field,
                                const std::shared_ptr<AlignedBuffer>& data);

// Parses `buffer` into `message`, except field `data_field`, whose bytes go
// into `*data` (null if absent). False if `buffer` is malformed or memory
// runs out.
bool DecodeWithData(const grpc::ByteBuffer& buffer, uint32_t data_field,
                    google::protobuf::MessageLite* message,
                    std::shared_ptr<AlignedBuffer>* data);

// The literal PutLiteral sent: `value`'s shape over `data`, or `value`
// itself when `data` is null.
absl::StatusOr<Literal> TakeLiteral(const xla::LiteralProto& value,
                                    std::shared_ptr<AlignedBuffer> data);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SERVICE_PEER_PAYLOAD_H_
