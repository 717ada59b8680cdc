#ifndef SOFTWARE_TPU_EMULATOR_SERVICE_GRPC_PEER_LINK_H_
#define SOFTWARE_TPU_EMULATOR_SERVICE_GRPC_PEER_LINK_H_

// The workers of a pod slice reach each other over gRPC: the Peer service
// (proto/peer.proto) that every worker serves beside
// tpu_driver.CloudTpuDriver. Plaintext channels: peers talk on the slice's
// own network (loopback in tests), like the TPU's inter-chip links.
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/collectives/peer_link.h"
#include "grpcpp/generic/generic_stub.h"
#include "proto/peer.grpc.pb.h"

namespace tpu::emulator {

class GrpcPeerLink : public PeerLink {
 public:
  // `addresses[h]` is "host:port" of the worker with host id h; this worker
  // is `host_id`. INVALID_ARGUMENT for an empty address or a host id out of
  // range.
  static absl::StatusOr<std::shared_ptr<GrpcPeerLink>> Create(
      std::vector<std::string> addresses, int host_id);

  int host_count() const override { return addresses_.size(); }
  std::string Address(int host) const override;
  absl::StatusOr<Literal> Contribute(
      int host, const tpu_emulator::Contribution& arrival,
      const std::atomic<bool>* cancelled) override;
  absl::Status Deliver(int host, const std::string& meeting,
                       const absl::StatusOr<Literal>& result) override;
  absl::Status Ping(int host) override;
  absl::StatusOr<tpu_emulator::PeerWaitReport> LocalWaitReport(
      int host, int history) override;

 private:
  GrpcPeerLink(std::vector<std::string> addresses, int host_id);

  // UNAVAILABLE naming worker `host` for a call that could not reach it;
  // other failures keep their code and message.
  absl::Status PeerError(int host, const grpc::Status& status) const;

  const std::vector<std::string> addresses_;
  const int host_id_;
  // Indexed by host id; null for this worker.
  std::vector<std::unique_ptr<tpu_emulator::Peer::Stub>> stubs_;
  // The same channels, for the calls whose large arrays travel as raw
  // bytes (emulator/service/peer_payload.h).
  std::vector<std::unique_ptr<grpc::GenericStub>> raw_stubs_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SERVICE_GRPC_PEER_LINK_H_
