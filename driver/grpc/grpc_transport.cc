#include "driver/grpc/grpc_transport.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "driver/grpc/grpc_credentials.h"
#include "driver/grpc/open_failure.h"
#include "driver/grpc/request_encoder.h"
#include "driver/grpc/response_decoder.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/sync_stream.h"
#include "proto/control.grpc.pb.h"
#include "proto/tpu_service.grpc.pb.h"

namespace tpu::driver {
namespace {

constexpr char kStreamExecuteMethod[] =
    "/tpu_driver.CloudTpuDriver/StreamExecute";
// Deadline of the unary calls other than Open, as the reference client.
constexpr auto kUnaryDeadline = std::chrono::seconds(10);

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

// Relaxed counters: one increment per message costs nothing measurable.
std::atomic<int64_t> requests_written{0};
std::atomic<int64_t> responses_read{0};

std::unique_ptr<grpc::ClientContext> UnaryContext() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + kUnaryDeadline);
  return context;
}

// Reads on demand: no thread of its own. The StreamChannel's waiting
// thread (or its reader thread) reads, so a round trip's response wakes the
// thread that waits for it directly, as a bare gRPC stream's does.
class GrpcTransportStream : public TransportStream {
 public:
  GrpcTransportStream(grpc::Channel* channel, StreamCallbacks callbacks)
      : callbacks_(std::move(callbacks)) {
    static const grpc::internal::RpcMethod* method =
        new grpc::internal::RpcMethod(
            kStreamExecuteMethod, grpc::internal::RpcMethod::BIDI_STREAMING);
    stream_.reset(grpc::internal::ClientReaderWriterFactory<
                  grpc::ByteBuffer, grpc::ByteBuffer>::Create(channel, *method,
                                                              &context_));
  }

  ~GrpcTransportStream() override {
    Cancel();
    // Whoever read last left the stream before it ended: finish it here, so
    // on_done runs once, as the contract says.
    while (ReadNext()) {
    }
  }

  bool Write(std::vector<OutgoingEntry>& batch) override {
    std::vector<grpc::ByteBuffer> messages = EncodeStreamRequests(batch);
    for (grpc::ByteBuffer& message : messages) {
      grpc::WriteOptions options;
      options.set_no_compression();
      if (!stream_->Write(message, options)) return false;
      requests_written.fetch_add(1, std::memory_order_relaxed);
    }
    return true;
  }

  bool ReadsOnDemand() const override { return true; }

  bool ReadNext() override {
    if (read_ended_) return false;
    absl::Status failure;
    if (stream_->Read(&buffer_)) {
      responses_read.fetch_add(1, std::memory_order_relaxed);
      absl::Status parsed = DecodeStreamResponse(
          buffer_, callbacks_.transfer_destination, &response_);
      buffer_.Clear();
      if (parsed.ok()) {
        callbacks_.on_response(response_);
        return true;
      }
      // A response we cannot decode leaves its operations unanswerable:
      // end the stream so they fail instead of waiting forever.
      failure = parsed;
      context_.TryCancel();
      while (stream_->Read(&buffer_)) {
      }
      buffer_.Clear();
    }
    read_ended_ = true;
    absl::Status status = FromGrpc(stream_->Finish());
    if (!failure.ok()) status = failure;
    {
      absl::MutexLock lock(&mu_);
      ended_ = true;
    }
    callbacks_.on_done(status);
    return false;
  }

  void WritesDone() override { stream_->WritesDone(); }

  void Cancel() override {
    absl::MutexLock lock(&mu_);
    if (ended_) return;
    context_.TryCancel();
  }

 private:
  const StreamCallbacks callbacks_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>>
      stream_;
  // Used only by the one thread inside ReadNext (callers take turns).
  grpc::ByteBuffer buffer_;
  tpu_driver::StreamResponse response_;
  bool read_ended_ = false;
  absl::Mutex mu_;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

GrpcStreamMessageCounts GrpcStreamMessagesSoFar() {
  GrpcStreamMessageCounts counts;
  counts.requests_written = requests_written.load(std::memory_order_relaxed);
  counts.responses_read = responses_read.load(std::memory_order_relaxed);
  return counts;
}

absl::StatusOr<std::unique_ptr<GrpcTransport>> GrpcTransport::Create(
    const tpu_driver::TpuDriverConfig& config) {
  absl::StatusOr<GrpcAddress> address = ParseGrpcAddress(config.worker());
  if (!address.ok()) return address.status();
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ChannelCredentialsFor(*address);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(std::numeric_limits<int>::max());
  args.SetMaxSendMessageSize(std::numeric_limits<int>::max());
  // At least 20 pings before the connection is declared dead.
  const int keepalive_timeout_ms =
      static_cast<int>(config.grpc().keepalive_timeout_secs() * 1000);
  const int keepalive_interval_ms = keepalive_timeout_ms / 20;
  args.SetInt(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
              keepalive_interval_ms);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // unlimited
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive_interval_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, keepalive_timeout_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 64 * 1000 * 1000);
  // gRPC retries a refused connection after 1 s, then backs off to 2 minutes;
  // a client waiting for a worker to start (connect_timeout_ms) should notice
  // it within a fraction of a second, and retrying a dead worker once a
  // second costs nothing.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (!address->server_name.empty()) {
    args.SetSslTargetNameOverride(address->server_name);
  }
  auto channel =
      grpc::CreateCustomChannel(address->target, *std::move(credentials), args);
  const absl::Duration connect_timeout = absl::Milliseconds(
      std::max<int64_t>(0, config.grpc().connect_timeout_ms()));
  return std::unique_ptr<GrpcTransport>(
      new GrpcTransport(config.worker(), *std::move(address), connect_timeout,
                        std::move(channel)));
}

GrpcTransport::GrpcTransport(std::string address, GrpcAddress parsed,
                             absl::Duration connect_timeout,
                             std::shared_ptr<grpc::Channel> channel)
    : address_(std::move(address)),
      parsed_(std::move(parsed)),
      connect_timeout_(connect_timeout),
      channel_(std::move(channel)) {}

absl::StatusOr<tpu_driver::OpenResponse> GrpcTransport::Open(
    const tpu_driver::OpenRequest& request, absl::Duration timeout) {
  // A worker that is starting refuses connections for a while: with a
  // connect timeout, wait (gRPC retries the connection) until it accepts.
  // Without one, the call below fails at the first refusal, so a mistyped
  // address or a stopped worker is reported at once rather than after
  // `timeout`.
  if (connect_timeout_ > absl::ZeroDuration()) {
    channel_->WaitForConnected(
        absl::ToChronoTime(absl::Now() + connect_timeout_));
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(timeout));
  context.set_wait_for_ready(false);
  tpu_driver::OpenResponse response;
  grpc::Status status = tpu_driver::CloudTpuDriver::NewStub(channel_)->Open(
      &context, request, &response);
  if (status.ok()) return response;
  return DescribeOpenFailure(
      {address_, parsed_.target, parsed_.tls, connect_timeout_, timeout},
      static_cast<absl::StatusCode>(status.error_code()),
      status.error_message());
}

absl::Status GrpcTransport::Close(const tpu_driver::CloseRequest& request) {
  auto context = UnaryContext();
  tpu_driver::CloseResponse response;
  grpc::Status status = tpu_driver::CloudTpuDriver::NewStub(channel_)->Close(
      context.get(), request, &response);
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat("Failed to close the TPU driver session on ",
                                   address_, ": ", status.error_message()));
}

absl::Status GrpcTransport::Reset(const tpu_driver::ResetRequest& request) {
  auto context = UnaryContext();
  tpu_driver::ResetResponse response;
  return FromGrpc(tpu_driver::CloudTpuDriver::NewStub(channel_)->Reset(
      context.get(), request, &response));
}

absl::StatusOr<tpu_driver::SystemInfo> GrpcTransport::QuerySystemInfo() {
  auto context = UnaryContext();
  tpu_driver::QuerySystemInfoResponse response;
  grpc::Status status =
      tpu_driver::CloudTpuDriver::NewStub(channel_)->QuerySystemInfo(
          context.get(), tpu_driver::QuerySystemInfoRequest(), &response);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("QuerySystemInfo on TPU worker ", address_,
                                     " failed: ", status.error_message()));
  }
  return std::move(*response.mutable_system_info());
}

absl::StatusOr<tpu_emulator::WaitReport> GrpcTransport::GetWaitReport() {
  auto context = UnaryContext();
  tpu_emulator::WaitReport report;
  grpc::Status status = tpu_emulator::Control::NewStub(channel_)->GetWaitReport(
      context.get(), tpu_emulator::GetWaitReportRequest(), &report);
  if (!status.ok()) {
    // A real TPU worker serves no control service: UNIMPLEMENTED.
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("GetWaitReport on ", address_,
                                     " failed: ", status.error_message()));
  }
  return report;
}

std::unique_ptr<TransportStream> GrpcTransport::OpenStream(
    StreamCallbacks callbacks) {
  return std::make_unique<GrpcTransportStream>(channel_.get(),
                                               std::move(callbacks));
}

}  // namespace tpu::driver
