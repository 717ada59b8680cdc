#ifndef SOFTWARE_TPU_EMULATOR_SERVICE_PEER_SERVICE_H_
#define SOFTWARE_TPU_EMULATOR_SERVICE_PEER_SERVICE_H_

// The Peer service (proto/peer.proto) over a worker's CollectiveHub: how the
// other workers of a pod slice join the collectives this worker coordinates
// and read its part of the wait report. Served on the worker's port.
//
// Thread safety: safe for concurrent use, as gRPC calls it.

#include "emulator/collectives/collective_hub.h"
#include "proto/peer.grpc.pb.h"

namespace tpu::emulator {

class PeerService : public tpu_emulator::Peer::Service {
 public:
  // `hub` is not owned and must outlive the service.
  explicit PeerService(CollectiveHub* hub, int host_id)
      : hub_(hub), host_id_(host_id) {}

  grpc::Status Contribute(grpc::ServerContext* context,
                          const tpu_emulator::Contribution* request,
                          tpu_emulator::ContributionResult* response) override;
  grpc::Status Deliver(grpc::ServerContext* context,
                       const tpu_emulator::Delivery* request,
                       tpu_emulator::DeliveryAck* response) override;
  grpc::Status Ping(grpc::ServerContext* context,
                    const tpu_emulator::PingRequest* request,
                    tpu_emulator::PingResponse* response) override;
  grpc::Status LocalWaitReport(
      grpc::ServerContext* context,
      const tpu_emulator::GetWaitReportRequest* request,
      tpu_emulator::PeerWaitReport* response) override;

 private:
  CollectiveHub* const hub_;
  const int host_id_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SERVICE_PEER_SERVICE_H_
