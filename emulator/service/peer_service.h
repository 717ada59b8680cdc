#ifndef SOFTWARE_TPU_EMULATOR_SERVICE_PEER_SERVICE_H_
#define SOFTWARE_TPU_EMULATOR_SERVICE_PEER_SERVICE_H_

// The Peer service (proto/peer.proto) over a worker's CollectiveHub: how the
// other workers of a pod slice join the collectives this worker coordinates
// and read its part of the wait report. Served on the worker's port.
//
// Contribute and Deliver read and write raw bytes, so that a large array
// crosses without protobuf's copies (emulator/service/peer_payload.h).
// Contribute blocks until its meeting completes, on a thread of its own:
// gRPC's callback threads must not wait.
//
// Thread safety: safe for concurrent use, as gRPC calls it.

#include "emulator/collectives/collective_hub.h"
#include "proto/peer.grpc.pb.h"

namespace tpu::emulator {

using PeerServiceBase = tpu_emulator::Peer::WithRawCallbackMethod_Contribute<
    tpu_emulator::Peer::WithRawCallbackMethod_Deliver<
        tpu_emulator::Peer::Service>>;

class PeerService : public PeerServiceBase {
 public:
  // `hub` is not owned and must outlive the service.
  explicit PeerService(CollectiveHub* hub, int host_id)
      : hub_(hub), host_id_(host_id) {}

  grpc::ServerUnaryReactor* Contribute(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Deliver(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
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
