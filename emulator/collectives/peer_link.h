#ifndef SOFTWARE_TPU_EMULATOR_COLLECTIVES_PEER_LINK_H_
#define SOFTWARE_TPU_EMULATOR_COLLECTIVES_PEER_LINK_H_

// How the CollectiveHub reaches the other workers of its pod slice, without
// knowing the transport (emulator/service/grpc_peer_link.h is the gRPC one,
// over proto/peer.proto).
//
// Thread safety: implementations are called concurrently by every core.

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "proto/peer.pb.h"

namespace tpu::emulator {

class PeerLink {
 public:
  virtual ~PeerLink() = default;

  // Workers of the slice, this one included.
  virtual int host_count() const = 0;
  // "host:port" of worker `host`, for messages.
  virtual std::string Address(int host) const = 0;

  // Hands `arrival` (its value included) to the meeting on `host`, the
  // meeting's coordinator, and blocks until this participant's output comes
  // back. UNAVAILABLE naming the worker when it cannot be reached or goes
  // away; CANCELLED once `*cancelled` turns true (checked a few times a
  // second); otherwise the coordinator's status.
  virtual absl::StatusOr<Literal> Contribute(
      int host, const tpu_emulator::Contribution& arrival,
      const std::atomic<bool>* cancelled) = 0;

  // Hands the result of a suffix fold (proto/peer.proto) to the meeting on
  // `host`, its coordinator. UNAVAILABLE naming the worker when it cannot be
  // reached.
  virtual absl::Status Deliver(int host, const std::string& meeting,
                               const absl::StatusOr<Literal>& result) = 0;

  // OK while worker `host` answers; UNAVAILABLE naming it otherwise.
  virtual absl::Status Ping(int host) = 0;

  // Worker `host`'s part of the slice-wide wait report.
  virtual absl::StatusOr<tpu_emulator::PeerWaitReport> LocalWaitReport(
      int host, int history) = 0;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_COLLECTIVES_PEER_LINK_H_
