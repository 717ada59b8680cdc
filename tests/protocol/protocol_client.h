#ifndef SOFTWARE_TPU_TESTS_PROTOCOL_PROTOCOL_CLIENT_H_
#define SOFTWARE_TPU_TESTS_PROTOCOL_PROTOCOL_CLIENT_H_

// A bare protocol client for tests: the generated gRPC stub used exactly as
// a real TPU client uses it (lifted message limits, 1.5 s keepalive pings,
// one StreamExecute per stream, encoded event ids, batched entries).
//
// Thread safety: ProtocolStream is safe for concurrent use.

#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/tpu_service.grpc.pb.h"

namespace tpu {

inline grpc::ChannelArguments RealClientChannelArguments() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT_MAX);
  args.SetMaxSendMessageSize(INT_MAX);
  // The real client pings every keepalive_timeout / 20 = 1.5 s, also idle.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 1500);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Separate connections per test client, like separate processes.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return args;
}

inline std::unique_ptr<tpu_driver::CloudTpuDriver::Stub> NewStub(
    const std::string& address,
    std::shared_ptr<grpc::ChannelCredentials> credentials =
        grpc::InsecureChannelCredentials()) {
  return tpu_driver::CloudTpuDriver::NewStub(grpc::CreateCustomChannel(
      address, std::move(credentials), RealClientChannelArguments()));
}

class ProtocolStream {
 public:
  explicit ProtocolStream(tpu_driver::CloudTpuDriver::Stub* stub) {
    stream_ = stub->StreamExecute(&context_);
    reader_ = std::thread([this] {
      tpu_driver::StreamResponse response;
      while (stream_->Read(&response)) {
        absl::MutexLock lock(&mu_);
        ++messages_;
        for (auto& e : *response.mutable_entry()) {
          const int64_t id = e.operation_id();
          responses_[id].push_back(std::move(e));
        }
        response.Clear();
      }
      absl::MutexLock lock(&mu_);
      read_done_ = true;
    });
  }

  ~ProtocolStream() {
    if (!finished_) {
      context_.TryCancel();
      reader_.join();
      stream_->Finish().IgnoreError();
    }
  }

  bool Send(std::vector<tpu_driver::StreamRequest::Entry> entries) {
    tpu_driver::StreamRequest request;
    for (auto& e : entries) *request.add_entry() = std::move(e);
    absl::MutexLock lock(&write_mu_);
    return stream_->Write(request);
  }

  std::optional<tpu_driver::StreamResponse::Entry> Await(
      int64_t id, absl::Duration timeout = absl::Seconds(30)) {
    absl::MutexLock lock(&mu_);
    auto arrived = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return responses_.count(id) > 0 || read_done_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout);
    auto it = responses_.find(id);
    if (it == responses_.end()) return std::nullopt;
    return it->second.front();
  }

  // Like Await, but moves the (first) response out; for large payloads.
  std::optional<tpu_driver::StreamResponse::Entry> Take(
      int64_t id, absl::Duration timeout = absl::Seconds(30)) {
    absl::MutexLock lock(&mu_);
    auto arrived = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return responses_.count(id) > 0 || read_done_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout);
    auto it = responses_.find(id);
    if (it == responses_.end()) return std::nullopt;
    return std::move(it->second.front());
  }

  // The status code of `id`'s response, -1 if none came.
  int Code(int64_t id, absl::Duration timeout = absl::Seconds(30)) {
    auto e = Await(id, timeout);
    return e.has_value() ? e->status().code() : -1;
  }

  // Half-closes and waits for the server to end the call.
  grpc::Status Finish() {
    stream_->WritesDone();
    reader_.join();
    finished_ = true;
    return stream_->Finish();
  }

  void Cancel() { context_.TryCancel(); }

  int messages() {
    absl::MutexLock lock(&mu_);
    return messages_;
  }
  int ResponsesFor(int64_t id) {
    absl::MutexLock lock(&mu_);
    auto it = responses_.find(id);
    return it == responses_.end() ? 0 : static_cast<int>(it->second.size());
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<tpu_driver::StreamRequest,
                                           tpu_driver::StreamResponse>>
      stream_;
  absl::Mutex write_mu_;
  absl::Mutex mu_;
  std::map<int64_t, std::vector<tpu_driver::StreamResponse::Entry>> responses_
      ABSL_GUARDED_BY(mu_);
  int messages_ ABSL_GUARDED_BY(mu_) = 0;
  bool read_done_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ = false;
  std::thread reader_;
};

}  // namespace tpu

#endif  // SOFTWARE_TPU_TESTS_PROTOCOL_PROTOCOL_CLIENT_H_
