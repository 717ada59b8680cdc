#include "emulator/service/peer_service.h"

#include <algorithm>
#include <string>

namespace tpu::emulator {
namespace {

// Each core keeps at most this many collectives.
constexpr int kMaxHistory = 1000;

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace

grpc::Status PeerService::Contribute(
    grpc::ServerContext* context, const tpu_emulator::Contribution* request,
    tpu_emulator::ContributionResult* response) {
  // The caller's RPC ends when its client closes or its worker dies: the
  // participant then withdraws.
  absl::StatusOr<Literal> output = hub_->ArriveFromPeer(
      *request, [context] { return context->IsCancelled(); });
  if (!output.ok()) return ToGrpc(output.status());
  *response->mutable_value() = output->ToProto();
  return grpc::Status::OK;
}

grpc::Status PeerService::Deliver(grpc::ServerContext*,
                                  const tpu_emulator::Delivery* request,
                                  tpu_emulator::DeliveryAck*) {
  return ToGrpc(hub_->DeliverFromPeer(*request));
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
