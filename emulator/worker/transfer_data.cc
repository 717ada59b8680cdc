#include "emulator/worker/transfer_data.h"

namespace tpu::emulator {

void InlineTransferData(const TransferData& data,
                        tpu_driver::StreamResponse* response) {
  for (int i = 0; i < response->entry_size(); ++i) {
    const std::shared_ptr<AlignedBuffer>& payload = PayloadOf(data, i);
    if (payload == nullptr) continue;
    response->mutable_entry(i)->mutable_transfer_from()->set_data(
        static_cast<const char*>(payload->data()), payload->size());
  }
}

}  // namespace tpu::emulator
