#include "emulator/service/peer_service.h"

#include <algorithm>
#include <memory>
#include <string>
#include <thread>

#include "emulator/service/peer_payload.h"

namespace tpu::emulator {
namespace {

// Each core keeps at most this many collectives.
constexpr int kMaxHistory = 1000;

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace

grpc::ServerUnaryReactor* PeerService::Contribute(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto contribution = std::make_shared<tpu_emulator::Contribution>();
  std::shared_ptr<AlignedBuffer> unused;
  if (!DecodeWithData(*request, /*data_field=*/0, contribution.get(),
                      &unused)) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "malformed Contribution"));
    return reactor;
  }
  // The meeting may wait for a long time: not on gRPC's callback thread.
  // The caller's RPC ends when its client closes or its worker dies: the
  // participant then withdraws. gRPC's shutdown cancels the call and waits
  // for Finish, so the hub outlives the thread's use of it.
  std::thread([this, context, reactor, response, contribution] {
    absl::StatusOr<Literal> output = hub_->ArriveFromPeer(
        *contribution, [context] { return context->IsCancelled(); });
    if (!output.ok()) {
      reactor->Finish(ToGrpc(output.status()));
      return;
    }
    tpu_emulator::ContributionResult result;
    std::shared_ptr<AlignedBuffer> data;
    if (PutLiteral(*output, result.mutable_value())) data = output->buffer();
    *response = EncodeWithData(result, kContributionResultData, data);
    reactor->Finish(grpc::Status::OK);
  }).detach();
  return reactor;
}

grpc::ServerUnaryReactor* PeerService::Deliver(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // DeliveryAck is empty, but gRPC needs a buffer to send.
  grpc::Slice empty;
  *response = grpc::ByteBuffer(&empty, 1);
  tpu_emulator::Delivery delivery;
  std::shared_ptr<AlignedBuffer> data;
  if (!DecodeWithData(*request, kDeliveryData, &delivery, &data)) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed Delivery"));
    return reactor;
  }
  absl::StatusOr<Literal> result =
      delivery.code() != 0 ? absl::StatusOr<Literal>(absl::Status(
                                 static_cast<absl::StatusCode>(delivery.code()),
                                 delivery.message()))
                           : TakeLiteral(delivery.value(), std::move(data));
  reactor->Finish(
      ToGrpc(hub_->DeliverFromPeer(delivery.meeting(), std::move(result))));
  return reactor;
}

grpc::Status PeerService::Ping(grpc::ServerContext*,
                               const tpu_emulator::PingRequest*,
                               tpu_emulator::PingResponse* response) {
  response->set_host_id(host_id_);
  return grpc::Status::OK;
}

grpc::Status PeerService::LocalWaitReport(
    grpc::ServerContext*, const tpu_emulator::GetWaitReportRequest* request,
    tpu_emulator::PeerWaitReport* response) {
  *response = hub_->LocalReport(std::clamp(request->history(), 0, kMaxHistory));
  return grpc::Status::OK;
}

}  // namespace tpu::emulator
