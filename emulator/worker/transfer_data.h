#ifndef SOFTWARE_TPU_EMULATOR_TRANSFER_DATA_H_
#define SOFTWARE_TPU_EMULATOR_TRANSFER_DATA_H_

// Transfer payloads that travel beside a StreamRequest or StreamResponse
// instead of inside it.
//
// A transfer's bytes are HBM contents, and HBM contents are immutable
// AlignedBuffers (emulator/device_buffer.h). Kept out of the protos, a payload
// is copied once: a transport decodes transfer_to data straight into the
// AlignedBuffer that becomes the buffer's contents, and sends transfer_from
// data straight from the contents it snapshots. Inside a proto string it would
// be copied into the string, out of it, and by protobuf's (de)serialization.
//
// TransferData is indexed like the message's entries; a null element (or one
// past the end) means the entry has no payload beside it:
// - request entry i with transfer_data[i] set: its transfer_to data is
//   transfer_data[i]; any transfer_to.data in the proto is ignored.
// - response entry i with transfer_data[i] set: a transfer_from response
//   whose data is transfer_data[i]; the entry itself has no transfer_from.

#include <memory>
#include <vector>

#include "hlo/aligned_buffer.h"
#include "proto/tpu_service.pb.h"

namespace tpu::emulator {

using TransferData = std::vector<std::shared_ptr<AlignedBuffer>>;

// Entry `index`'s payload, or null.
inline const std::shared_ptr<AlignedBuffer>& PayloadOf(const TransferData& data,
                                                       int index) {
  static const std::shared_ptr<AlignedBuffer> kNone;
  return index < static_cast<int>(data.size()) ? data[index] : kNone;
}

// Copies the payloads into their entries' transfer_from.data: the response as
// a plain protocol message (for tests and transports without a faster way).
void InlineTransferData(const TransferData& data,
                        tpu_driver::StreamResponse* response);

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_TRANSFER_DATA_H_
