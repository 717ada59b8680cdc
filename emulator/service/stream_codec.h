#ifndef SOFTWARE_TPU_EMULATOR_STREAM_CODEC_H_
#define SOFTWARE_TPU_EMULATOR_STREAM_CODEC_H_

// The gRPC service's side of StreamExecute's wire format, written for large
// transfers (emulator/transfer_data.h):
// - a received StreamRequest's transfer_to data is copied once, from gRPC's
//   slices straight into the AlignedBuffer that becomes the HBM contents;
// - a StreamResponse's transfer_from data is sent from the contents it
//   snapshots, as slices that reference them: no copy at all.
// Everything else is parsed and serialized by protobuf.
//
// Thread safety: stateless functions.

#include "emulator/worker/transfer_data.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/tpu_service.pb.h"

namespace tpu::emulator {

// Decodes `buffer` into `request` (partially: missing required fields are
// the worker's to report) with transfer_to payloads in `transfer_data`.
// False if `buffer` is not a StreamRequest.
bool DecodeStreamRequest(const grpc::ByteBuffer& buffer,
                         tpu_driver::StreamRequest* request,
                         TransferData* transfer_data);

// Serializes `response` with `transfer_data` as its entries' transfer_from
// data. The result keeps the payloads alive until gRPC has sent it.
grpc::ByteBuffer EncodeStreamResponse(
    const tpu_driver::StreamResponse& response,
    const TransferData& transfer_data);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_STREAM_CODEC_H_
