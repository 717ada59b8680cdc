#include "emulator/service/grpc_peer_link.h"

#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "emulator/service/peer_payload.h"
#include "grpcpp/grpcpp.h"

namespace tpu::emulator {
namespace {

// How often a blocked Contribute looks at its client's cancellation.
constexpr absl::Duration kCancelPoll = absl::Milliseconds(50);
// A live worker answers a ping at once; one that does not within this, this
// many times in a row, is taken as gone (a refused connection at once).
constexpr absl::Duration kPingDeadline = absl::Seconds(2);
constexpr int kPingAttempts = 3;
constexpr absl::Duration kReportDeadline = absl::Seconds(5);
// A delivery is one message the coordinator takes at once; the bound only
// keeps a wedged peer from holding this core forever.
constexpr absl::Duration kDeliverDeadline = absl::Seconds(60);

std::chrono::system_clock::time_point DeadlineIn(absl::Duration d) {
  return absl::ToChronoTime(absl::Now() + d);
}

}  // namespace

absl::StatusOr<std::shared_ptr<GrpcPeerLink>> GrpcPeerLink::Create(
    std::vector<std::string> addresses, int host_id) {
  if (host_id < 0 || host_id >= static_cast<int>(addresses.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host id ", host_id, " has no entry in the ", addresses.size(),
        " pod addresses: list one host:port per host of the slice, in host "
        "id order"));
  }
  for (size_t h = 0; h < addresses.size(); ++h) {
    if (addresses[h].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pod address ", h,
                       " is empty: list host:port of "
                       "every host of the slice, in host id order"));
    }
  }
  return std::shared_ptr<GrpcPeerLink>(
      new GrpcPeerLink(std::move(addresses), host_id));
}

GrpcPeerLink::GrpcPeerLink(std::vector<std::string> addresses, int host_id)
    : addresses_(std::move(addresses)), host_id_(host_id) {
  for (size_t h = 0; h < addresses_.size(); ++h) {
    if (static_cast<int>(h) == host_id_) {
      stubs_.push_back(nullptr);
      raw_stubs_.push_back(nullptr);
      continue;
    }
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(INT_MAX);
    args.SetMaxSendMessageSize(INT_MAX);
    // A worker that starts after this one is reached soon after it listens.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
        addresses_[h], grpc::InsecureChannelCredentials(), args);
    stubs_.push_back(tpu_emulator::Peer::NewStub(channel));
    raw_stubs_.push_back(std::make_unique<grpc::GenericStub>(channel));
  }
}

std::string GrpcPeerLink::Address(int host) const {
  if (host < 0 || host >= static_cast<int>(addresses_.size())) return "?";
  return addresses_[host];
}

absl::Status GrpcPeerLink::PeerError(int host,
                                     const grpc::Status& status) const {
  const auto code = status.error_code();
  if (code == grpc::StatusCode::UNAVAILABLE ||
      code == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::UnavailableError(
        absl::StrCat("peer worker host ", host, " at ", Address(host),
                     " is unreachable (", status.error_message(),
                     "): check that it runs (tpu_emulator --host_id=", host,
                     ") and that every worker's --pod_addresses lists it"));
  }
  return absl::Status(static_cast<absl::StatusCode>(code),
                      status.error_message());
}

absl::StatusOr<Literal> GrpcPeerLink::Contribute(
    int host, const tpu_emulator::Contribution& arrival,
    const std::atomic<bool>* cancelled) {
  if (host < 0 || host >= static_cast<int>(stubs_.size()) ||
      stubs_[host] == nullptr) {
    return absl::InternalError(absl::StrCat("no peer worker host ", host));
  }
  grpc::ClientContext context;
  grpc::Slice serialized(arrival.SerializeAsString());
  grpc::ByteBuffer request(&serialized, 1);
  grpc::ByteBuffer response;
  grpc::Status status;
  absl::Notification done;
  raw_stubs_[host]->UnaryCall(&context, "/tpu_emulator.Peer/Contribute",
                              grpc::StubOptions(), &request, &response,
                              [&](grpc::Status s) {
                                status = std::move(s);
                                done.Notify();
                              });
  bool cancelling = false;
  while (!done.WaitForNotificationWithTimeout(kCancelPoll)) {
    if (!cancelling && cancelled != nullptr && cancelled->load()) {
      cancelling = true;
      context.TryCancel();
    }
  }
  if (!status.ok()) return PeerError(host, status);
  tpu_emulator::ContributionResult result;
  std::shared_ptr<AlignedBuffer> data;
  if (!DecodeWithData(response, kContributionResultData, &result, &data)) {
    return absl::InternalError(absl::StrCat(
        "peer worker host ", host, " answered with a malformed result"));
  }
  return TakeLiteral(result.value(), std::move(data));
}

absl::Status GrpcPeerLink::Deliver(int host, const std::string& meeting,
                                   const absl::StatusOr<Literal>& result) {
  if (host < 0 || host >= static_cast<int>(stubs_.size()) ||
      stubs_[host] == nullptr) {
    return absl::InternalError(absl::StrCat("no peer worker host ", host));
  }
  tpu_emulator::Delivery delivery;
  delivery.set_meeting(meeting);
  delivery.set_host_id(host_id_);
  std::shared_ptr<AlignedBuffer> data;
  if (!result.ok()) {
    delivery.set_code(static_cast<int>(result.status().code()));
    delivery.set_message(std::string(result.status().message()));
  } else if (PutLiteral(*result, delivery.mutable_value())) {
    data = result->buffer();
  }
  grpc::ByteBuffer request = EncodeWithData(delivery, kDeliveryData, data);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(kDeliverDeadline));
  grpc::Status status;
  absl::Notification done;
  raw_stubs_[host]->UnaryCall(&context, "/tpu_emulator.Peer/Deliver",
                              grpc::StubOptions(), &request, &response,
                              [&](grpc::Status s) {
                                status = std::move(s);
                                done.Notify();
                              });
  done.WaitForNotification();
  if (!status.ok()) return PeerError(host, status);
  return absl::OkStatus();
}

absl::Status GrpcPeerLink::Ping(int host) {
  if (host < 0 || host >= static_cast<int>(stubs_.size()) ||
      stubs_[host] == nullptr) {
    return absl::OkStatus();
  }
  grpc::Status status;
  for (int attempt = 0; attempt < kPingAttempts; ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(DeadlineIn(kPingDeadline));
    tpu_emulator::PingRequest request;
    tpu_emulator::PingResponse response;
    status = stubs_[host]->Ping(&context, request, &response);
    // A slow answer may be a busy worker; no answer at all is a gone one.
    if (status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) break;
  }
  if (!status.ok()) return PeerError(host, status);
  return absl::OkStatus();
}

absl::StatusOr<tpu_emulator::PeerWaitReport> GrpcPeerLink::LocalWaitReport(
    int host, int history) {
  if (host < 0 || host >= static_cast<int>(stubs_.size()) ||
      stubs_[host] == nullptr) {
    return absl::InternalError(absl::StrCat("no peer worker host ", host));
  }
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(kReportDeadline));
  tpu_emulator::GetWaitReportRequest request;
  request.set_history(history);
  tpu_emulator::PeerWaitReport report;
  grpc::Status status =
      stubs_[host]->LocalWaitReport(&context, request, &report);
  if (!status.ok()) return PeerError(host, status);
  return report;
}

}  // namespace tpu::emulator
