#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_COLLECTIVES_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_COLLECTIVES_H_

// How a running program meets its peers at a collective instruction.
//
// The interpreter knows what a collective computes; the worker knows where
// the other participants are. They meet at this interface: a collective
// kernel describes its exchange (a CollectiveRequest: the participating
// devices, in group order, and this device's rank among them), hands over its
// contribution and a combine function, and blocks in
// CollectiveExecutor::Exchange until every participant arrived. The combine
// runs once per exchange (on whichever thread completes the group) over all
// contributions in group order and yields one output per rank; outputs may
// share bytes, since values are immutable once produced. Running it once is
// what makes a 64 MiB all-reduce cost one reduction instead of one per core,
// and it is why every participant sees bit-identical results.
//
// Thread safety: implementations are called concurrently by every core.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "hlo/literal.h"

namespace tpu::emulator::interpreter {

// Which device runs each (replica, partition) of one launch: the execute
// request's device_assignment, as device (core) ids.
struct DeviceAssignment {
  int num_replicas = 1;
  int num_partitions = 1;
  // devices[replica * num_partitions + partition].
  std::vector<int> devices;

  int device(int replica, int partition) const {
    return devices[replica * num_partitions + partition];
  }
};

// `assignment`, or one replica on one device (device 0) when it is null: a
// program run without an execute request's device_assignment.
inline const DeviceAssignment& AssignmentOrSingle(
    const DeviceAssignment* assignment) {
  static const DeviceAssignment* const kSingle =
      new DeviceAssignment{1, 1, {0}};
  return assignment != nullptr ? *assignment : *kSingle;
}

// Folds `values` left to right (the first is where the fold starts), as an
// all-reduce's reduction combines contributions, rounding at every step.
using CollectiveFold = std::function<absl::StatusOr<Literal>(
    const std::vector<const Literal*>& values)>;

struct CollectiveRequest {
  // The instruction's name and opcode ("all-reduce.3", "all-reduce"), and
  // its computation's name: they identify the meeting point within a launch
  // and name it in wait reports.
  std::string computation;
  std::string instruction;
  std::string kind;
  // How many times this participant already ran this instruction in this
  // launch (collectives inside loops meet per iteration).
  int64_t occurrence = 0;
  // The participating device ids in group order, and this device's index.
  std::vector<int> devices;
  int rank = 0;
  // "f32[1024]": what the participant contributes, to diagnose mismatches.
  std::string signature;
  // All-reduce only (null otherwise): every rank's output is `fold` over the
  // contributions of the ranks in `fold_order`, left to right. A left fold
  // may start from the fold of a prefix of that order, so the workers of a
  // pod slice can fold their own run of it where the data lives and send
  // one partial result instead of every contribution. Valid during Exchange.
  const CollectiveFold* fold = nullptr;
  std::vector<int> fold_order;
};

// Produces one output per rank from the contributions, in group order.
using CollectiveCombine = std::function<absl::StatusOr<std::vector<Literal>>(
    const std::vector<Literal>& contributions)>;

// One point-to-point transfer of send/recv between devices: the k-th value
// `source` sends to `target` in a launch is the k-th that `target` receives
// from `source` (per ordered pair of devices, as NCCL pairs point-to-point
// operations), whatever the instructions' names or channels.
struct TransferRequest {
  // The instruction sending ("send") or receiving ("recv-done"), for
  // reports.
  std::string computation;
  std::string instruction;
  std::string kind;
  int source = 0;
  int target = 0;
  // "f32[2,2]": what is sent, or what the receiver expects.
  std::string signature;
};

class CollectiveExecutor {
 public:
  virtual ~CollectiveExecutor() = default;

  // Queues `value` for `request.target`. Never waits for the receiver: a
  // send completes once its data left the sender, so programs that send
  // before they receive (pipelines) cannot deadlock on it.
  virtual absl::Status Send(const TransferRequest& request, Literal value) {
    return absl::UnimplementedError(
        absl::StrCat("send ", request.instruction,
                     ": this executor has no point-to-point transfers"));
  }

  // Blocks until the oldest value `request.source` queued for
  // `request.target` in this launch arrives, and returns it. Fails (and
  // unblocks) when the launch is cancelled.
  virtual absl::StatusOr<Literal> Receive(const TransferRequest& request) {
    return absl::UnimplementedError(
        absl::StrCat("recv ", request.instruction,
                     ": this executor has no point-to-point transfers"));
  }

  // Blocks until every device of `request.devices` contributed to the same
  // meeting point, then returns this rank's output. Fails (and unblocks) when
  // the launch is cancelled, e.g. its client closed.
  virtual absl::StatusOr<Literal> Exchange(
      const CollectiveRequest& request, Literal contribution,
      const CollectiveCombine& combine) = 0;
};

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_COLLECTIVES_H_
