#include "driver/grpc/response_decoder.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/stream_payloads.h"
#include "proto/wire_slices.h"

namespace tpu::driver {
namespace {

absl::Status Malformed(const std::string& what) {
  return absl::DataLossError(
      absl::StrCat("malformed StreamResponse from the worker: ", what));
}

}  // namespace

absl::Status DecodeStreamResponse(const grpc::ByteBuffer& buffer,
                                  const TransferDestination& destination,
                                  tpu_driver::StreamResponse* response) {
  response->Clear();
  SliceReader reader;
  if (!SliceReader::FromByteBuffer(buffer, &reader)) {
    return Malformed("unreadable buffer");
  }
  absl::Status error;
  std::string bytes;
  const bool framed = ForEachMessageField(
      reader, kStreamResponseEntry, [&](size_t begin, size_t end) {
        NestedBytesAt data;
        if (!FindNestedBytes(reader, begin, end, kTransferFromData, &data)) {
          error = Malformed("bad entry");
          return false;
        }
        // Everything but the data is parsed by protobuf; the data goes
        // straight to its destination, or else into the entry.
        bytes.clear();
        if (data.found) {
          AppendWithoutNestedBytes(reader, begin, end, data, &bytes);
        } else {
          reader.AppendTo(begin, end - begin, &bytes);
        }
        tpu_driver::StreamResponse::Entry* entry = response->add_entry();
        if (!entry->ParsePartialFromString(bytes)) {
          error = Malformed("entry does not parse");
          return false;
        }
        if (data.found) {
          void* dst = data.size > 0 && destination && entry->has_operation_id()
                          ? destination(entry->operation_id(),
                                        static_cast<int64_t>(data.size))
                          : nullptr;
          std::string* kept = entry->mutable_transfer_from()->mutable_data();
          kept->clear();
          if (dst != nullptr) {
            reader.Copy(data.offset, data.size, dst);
          } else {
            reader.AppendTo(data.offset, data.size, kept);
          }
        }
        if (!entry->IsInitialized()) {
          error = Malformed(absl::StrCat("entry lacks required fields: ",
                                         entry->InitializationErrorString()));
          return false;
        }
        return true;
      });
  if (!framed && error.ok()) error = Malformed("bad field framing");
  return error;
}

}  // namespace tpu::driver
