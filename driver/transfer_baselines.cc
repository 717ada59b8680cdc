#include "driver/transfer_baselines.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/create_channel.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/sync_stream.h"
#include "proto/tpu_service.grpc.pb.h"

namespace tpu::driver {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Answers every message of a StreamExecute call without parsing it: an
// 8-byte message asks for a reply of that many bytes (little-endian), any
// other gets one byte. Replies are sent from memory allocated once, by
// reference, as the emulator sends transfer_from data.
class AckReactor
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  AckReactor() { StartRead(&in_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    uint64_t asked = 1;
    std::vector<grpc::Slice> slices;
    if (in_.Length() == sizeof(asked) && in_.Dump(&slices).ok() &&
        slices.size() == 1) {
      std::memcpy(&asked, slices[0].begin(), sizeof(asked));
    }
    in_.Clear();
    if (asked != reply_bytes_) {
      payload_.assign(asked, '!');
      grpc::Slice reply(payload_.data(), payload_.size(),
                        grpc::Slice::STATIC_SLICE);
      reply_ = grpc::ByteBuffer(&reply, 1);
      reply_bytes_ = asked;
    }
    StartWrite(&reply_);
  }
  void OnWriteDone(bool ok) override {
    if (ok) StartRead(&in_);
  }
  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer in_;
  std::string payload_;
  uint64_t reply_bytes_ = 0;
  grpc::ByteBuffer reply_;
};

class AckService
    : public tpu_driver::CloudTpuDriver::WithRawCallbackMethod_StreamExecute<
          tpu_driver::CloudTpuDriver::Service> {
 public:
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StreamExecute(
      grpc::CallbackServerContext*) override {
    return new AckReactor();
  }
};

}  // namespace

namespace {

// Streams `message_bytes` (at least 256 MiB per round) from `sender` to
// `receiver` in system calls of at most 1 MiB (larger ones are no faster);
// the best of three rounds. Closes both.
double StreamBytesPerSecond(int sender, int receiver, int64_t message_bytes) {
  const int64_t chunk = std::min<int64_t>(message_bytes, int64_t{1} << 20);
  const int64_t total = std::max<int64_t>(message_bytes, int64_t{256} << 20);
  // Both sides touch their memory before timing, as the driver's steady state.
  std::vector<char> out(chunk, 7);
  std::vector<char> in(chunk, 0);
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const auto start = Clock::now();
    std::thread writer([&] {
      for (int64_t sent = 0; sent < total;) {
        ssize_t n = write(sender, out.data(), std::min(chunk, total - sent));
        if (n <= 0) return;
        sent += n;
      }
    });
    int64_t got = 0;
    while (got < total) {
      ssize_t n = read(receiver, in.data(), std::min(chunk, total - got));
      if (n <= 0) break;
      got += n;
    }
    writer.join();
    best = std::max(best, got / Seconds(Clock::now() - start));
  }
  close(sender);
  close(receiver);
  return best;
}

}  // namespace

double LoopbackTcpBytesPerSecond(int64_t message_bytes) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      listen(listener, 1) != 0) {
    close(listener);
    return 0;
  }
  int sender = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(sender, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(sender);
    close(listener);
    return 0;
  }
  int receiver = accept(listener, nullptr, nullptr);
  close(listener);
  return StreamBytesPerSecond(sender, receiver, message_bytes);
}

double UnixSocketBytesPerSecond(int64_t message_bytes) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0) return 0;
  return StreamBytesPerSecond(ends[0], ends[1], message_bytes);
}

std::unique_ptr<grpc::Server> StartAckServer(int* port,
                                             const std::string& unix_socket) {
  static AckService* service = new AckService();  // Stateless, shared.
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           port);
  if (!unix_socket.empty()) {
    builder.AddListeningPort("unix:" + unix_socket,
                             grpc::InsecureServerCredentials());
  }
  builder.RegisterService(service);
  builder.SetMaxReceiveMessageSize(INT_MAX);
  builder.SetMaxSendMessageSize(INT_MAX);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (*port == 0) return nullptr;
  return server;
}

double BareGrpcBytesPerSecond(const std::string& address, int64_t message_bytes,
                              int in_flight, int messages, bool to_server) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(std::numeric_limits<int>::max());
  args.SetMaxSendMessageSize(std::numeric_limits<int>::max());
  auto channel = grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args);
  const grpc::internal::RpcMethod method(
      "/tpu_driver.CloudTpuDriver/StreamExecute",
      grpc::internal::RpcMethod::BIDI_STREAMING);
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>>
      stream(grpc::internal::ClientReaderWriterFactory<
             grpc::ByteBuffer, grpc::ByteBuffer>::Create(channel.get(), method,
                                                         &context));
  // The payload is referenced, not copied, as the driver's encoder does.
  const uint64_t request_bytes =
      to_server ? static_cast<uint64_t>(message_bytes) : sizeof(uint64_t);
  std::vector<char> payload(request_bytes, 3);
  if (!to_server) {
    const uint64_t asked = static_cast<uint64_t>(message_bytes);
    std::memcpy(payload.data(), &asked, sizeof(asked));
  }
  grpc::Slice slice(payload.data(), payload.size(), grpc::Slice::STATIC_SLICE);
  const grpc::ByteBuffer message(&slice, 1);
  grpc::ByteBuffer reply;
  auto send = [&](int count) {
    int unanswered = 0;
    for (int i = 0; i < count; ++i) {
      if (!stream->Write(message)) return false;
      if (++unanswered == in_flight) {
        if (!stream->Read(&reply)) return false;
        --unanswered;
      }
    }
    for (; unanswered > 0; --unanswered) {
      if (!stream->Read(&reply)) return false;
    }
    return true;
  };
  double rate = 0;
  if (send(std::max(2, in_flight))) {  // Warm-up: fresh memory everywhere.
    const auto start = Clock::now();
    if (send(messages)) {
      rate = message_bytes * static_cast<double>(messages) /
             Seconds(Clock::now() - start);
    }
  }
  stream->WritesDone();
  (void)stream->Finish();
  return rate;
}

struct BareGrpcStream::State {
  std::shared_ptr<grpc::Channel> channel;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>>
      stream;
  char payload[16] = {};
  grpc::ByteBuffer reply;
};

std::unique_ptr<BareGrpcStream> BareGrpcStream::Open(
    const std::string& address) {
  auto state = std::make_unique<State>();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(std::numeric_limits<int>::max());
  args.SetMaxSendMessageSize(std::numeric_limits<int>::max());
  state->channel = grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args);
  const grpc::internal::RpcMethod method(
      "/tpu_driver.CloudTpuDriver/StreamExecute",
      grpc::internal::RpcMethod::BIDI_STREAMING);
  state->stream.reset(
      grpc::internal::ClientReaderWriterFactory<
          grpc::ByteBuffer, grpc::ByteBuffer>::Create(state->channel.get(),
                                                      method, &state->context));
  std::unique_ptr<BareGrpcStream> stream(new BareGrpcStream(std::move(state)));
  // Connects, and pays the first message's costs untimed.
  if (stream->RoundTripMicros() < 0) return nullptr;
  return stream;
}

BareGrpcStream::BareGrpcStream(std::unique_ptr<State> state)
    : state_(std::move(state)) {}

BareGrpcStream::~BareGrpcStream() {
  state_->stream->WritesDone();
  (void)state_->stream->Finish();
}

double BareGrpcStream::RoundTripMicros() {
  grpc::Slice slice(state_->payload, sizeof(state_->payload),
                    grpc::Slice::STATIC_SLICE);
  const grpc::ByteBuffer message(&slice, 1);
  const auto start = Clock::now();
  if (!state_->stream->Write(message) ||
      !state_->stream->Read(&state_->reply)) {
    return -1;
  }
  return Seconds(Clock::now() - start) * 1e6;
}

}  // namespace tpu::driver
