#ifndef SOFTWARE_TPU_DRIVER_TRANSFER_BASELINES_H_
#define SOFTWARE_TPU_DRIVER_TRANSFER_BASELINES_H_

// What the transfer benchmark compares the grpc:// driver with, measured in
// the same run:
// - raw loopback TCP: the wire's ceiling on this machine (and a raw Unix
//   socket pair, for grpc://unix:);
// - a bare gRPC stream: the same library, channel settings and message
//   sizes, with no protocol behind it. The gap between the two is gRPC's own;
//   the gap between the bare stream and the driver is ours.
//
// Thread safety: each call sets up and tears down its own sockets.

#include <cstdint>
#include <memory>
#include <string>

#include "grpcpp/server.h"

namespace tpu::driver {

// Bytes per second through one loopback TCP connection streaming at least
// 256 MiB in system calls of min(message_bytes, 1 MiB); the best of three
// rounds. The transfer size does not matter to a stream, only to the calls.
double LoopbackTcpBytesPerSecond(int64_t message_bytes);

// The same through a connected pair of Unix domain stream sockets: what the
// kernel offers the grpc://unix: fast path.
double UnixSocketBytesPerSecond(int64_t message_bytes);

// A server whose StreamExecute answers every message without parsing it: an
// 8-byte message asks for a reply of that many bytes, any other gets one
// byte. Listens on 127.0.0.1:*port, and on `unix_socket` if not empty; null
// if it cannot listen.
std::unique_ptr<grpc::Server> StartAckServer(
    int* port, const std::string& unix_socket = "");

// Bytes per second of `message_bytes` messages over a bare gRPC bidi stream
// to an ack server at `address` (host:port or unix:PATH): sent by the client if
// `to_server`, else asked for with 8-byte requests and sent by the server.
// Up to `in_flight` messages are unanswered at a time (1: each waits for its
// answer). Sends `messages` after an untimed warm-up. Zero on any failure.
double BareGrpcBytesPerSecond(const std::string& address, int64_t message_bytes,
                              int in_flight, int messages, bool to_server);

// A bare gRPC stream to an ack server, whose round trips a benchmark
// interleaves with the driver's so that both see the same machine.
class BareGrpcStream {
 public:
  // Null if the stream cannot be opened.
  static std::unique_ptr<BareGrpcStream> Open(const std::string& address);
  ~BareGrpcStream();

  // Microseconds of one 16-byte message and its answer; negative on failure.
  double RoundTripMicros();

 private:
  struct State;
  explicit BareGrpcStream(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_TRANSFER_BASELINES_H_
