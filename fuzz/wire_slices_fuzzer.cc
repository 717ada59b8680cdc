// Fuzz target: the wire-slice readers (proto/wire_slices.h) through both
// codecs that use them on untrusted bytes: the worker's StreamRequest decoder
// and the driver's StreamResponse decoder. The first byte chooses where the
// message is cut into gRPC slices, the rest is the message.
//
// The request decoder is checked against protobuf: whenever protobuf parses
// the bytes as a StreamRequest, the decoder must accept them too and yield
// the same message once each transfer_to payload is put back in place
// (unknown fields aside).

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "driver/grpc/response_decoder.h"
#include "emulator/service/stream_codec.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "proto/tpu_service.pb.h"

namespace {

// Cuts `bytes` into slices of 1 + (cut % 7) * 3 bytes (1, 4, ..., 19), or
// one slice for cut 0.
grpc::ByteBuffer Sliced(const std::string& bytes, uint8_t cut) {
  std::vector<grpc::Slice> slices;
  const size_t step = cut == 0 ? bytes.size() + 1 : 1 + (cut % 7) * 3;
  for (size_t at = 0; at < bytes.size(); at += step) {
    slices.emplace_back(bytes.data() + at, std::min(step, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

void CheckRequestDecoder(const std::string& bytes, uint8_t cut) {
  tpu_driver::StreamRequest decoded;
  tpu::emulator::TransferData payloads;
  const bool accepted = tpu::emulator::DecodeStreamRequest(Sliced(bytes, cut),
                                                           &decoded, &payloads);
  tpu_driver::StreamRequest expected;
  if (!expected.ParsePartialFromString(bytes)) return;
  if (!accepted) {
    std::fprintf(stderr, "Protobuf parses the request, the decoder does not\n");
    std::abort();
  }
  for (int i = 0; i < decoded.entry_size(); ++i) {
    const auto& payload = tpu::emulator::PayloadOf(payloads, i);
    if (payload == nullptr) continue;
    decoded.mutable_entry(i)->mutable_transfer_to()->set_data(
        static_cast<const char*>(payload->data()), payload->size());
  }
  // Fields StreamRequest does not define are dropped by the decoder outside
  // entries and kept inside them; neither reaches the worker.
  expected.DiscardUnknownFields();
  decoded.DiscardUnknownFields();
  std::string difference;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&difference);
  if (!differencer.Compare(expected, decoded)) {
    std::fprintf(stderr, "Decoded request differs from protobuf's:\n%s\n",
                 difference.c_str());
    std::abort();
  }
}

void CheckResponseDecoder(const std::string& bytes, uint8_t cut) {
  std::deque<std::string> destinations;  // stable addresses
  tpu_driver::StreamResponse response;
  // Every other transfer_from goes to a destination, the rest stay inline.
  int calls = 0;
  auto status = tpu::driver::DecodeStreamResponse(
      Sliced(bytes, cut),
      [&](uint64_t, int64_t n) -> void* {
        if (++calls % 2 == 0 || n > (int64_t{1} << 20)) return nullptr;
        destinations.emplace_back(static_cast<size_t>(n), '\0');
        return destinations.back().data();
      },
      &response);
  (void)status;
}

}  // namespace

// Protobuf logs every string field that is not UTF-8; at thousands of inputs
// a second that is most of the run's time.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t cut = data[0];
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  CheckRequestDecoder(bytes, cut);
  CheckResponseDecoder(bytes, cut);
  return 0;
}
