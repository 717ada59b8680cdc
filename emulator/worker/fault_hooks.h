#ifndef SOFTWARE_TPU_EMULATOR_WORKER_FAULT_HOOKS_H_
#define SOFTWARE_TPU_EMULATOR_WORKER_FAULT_HOOKS_H_

// Internal to the operation builders: where operations meet the worker's
// fault rules (emulator/faults/fault_plan.h) as they start, and what each
// action does to them.
//
//   delay  waits (cut short by Close/Reset), then the operation runs;
//   hang   holds the operation until its client is closed or reset, then it
//          fails CANCELLED;
//   fail   finishes it with the rule's status;
//   drop_stream ends the stream it came on abruptly and releases its client;
//   crash  logs one line and _exit(3)s the process, as a lost host;
//   hbm    limits the core's capacity from then on, and the operation runs;
//   slow   (executes) stretches the program's run to FACTOR times its time;
//   skip   (collectives) the core never arrives: it is held instead, and the
//          wait report's diagnosis names it.
// Operations that wait on a core's thread (executes, collectives) wait there,
// holding the core as a slow or hung program would; the others wait on
// threads of their own (faults::FaultThreads), never on a shared one.
//
// Thread safety: reentrant; FaultingCollectives serves one launch.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "emulator/collectives/collective_hub.h"
#include "emulator/faults/fault_plan.h"
#include "emulator/interpreter/collectives.h"
#include "emulator/worker/op_common.h"

namespace tpu::emulator {

// Runs the operation on: `slow_factor` is 1 unless a slow rule matched.
using Proceed = std::function<void(double slow_factor)>;

// Whether a fault rule could match: without rules an operation starts at
// once, without resolving the core and program that rules select on.
inline bool FaultRulesActive(const OpContext& ctx) {
  return ctx.worker->faults != nullptr && !ctx.worker->faults->empty();
}

// Consults the plan for an operation of `kind` starting on core `core_id`
// (-1: no core) with `program` (may be empty), applies the matched action,
// and calls `proceed` (now, or after a delay on a thread of its own) unless
// the action finished the operation.
void StartWithFaults(const OpContext& ctx, faults::OpKind kind, int core_id,
                     const std::string& program, Proceed proceed);

// The same for an operation starting on its core's own thread (an execute):
// delays and hangs wait right here, holding the core. Returns the slow
// factor to apply (1 unless a slow rule matched), or nullopt if the action
// finished the operation.
std::optional<double> StartOnCore(const OpContext& ctx, faults::OpKind kind,
                                  int core_id, const std::string& program);

// The core of the buffer `handle`, or -1 if it does not resolve (the
// operation then fails on its own).
int BufferCore(const OpContext& ctx, uint64_t handle);

// The collectives of one launch, with the fault rules applied as each core
// arrives at one.
class FaultingCollectives : public interpreter::CollectiveExecutor {
 public:
  // `launch` is not owned and outlives this.
  FaultingCollectives(OpContext ctx, Launch* launch, int core_id,
                      std::string program);

  absl::StatusOr<Literal> Exchange(
      const interpreter::CollectiveRequest& request, Literal contribution,
      const interpreter::CollectiveCombine& combine) override;

  // Point-to-point transfers (send/recv between devices) pass straight
  // through: fault rules apply to collectives only.
  absl::Status Send(const interpreter::TransferRequest& request,
                    Literal value) override {
    return launch_->Send(request, std::move(value));
  }
  absl::StatusOr<Literal> Receive(
      const interpreter::TransferRequest& request) override {
    return launch_->Receive(request);
  }

 private:
  const OpContext ctx_;
  Launch* const launch_;
  const int core_id_;
  const std::string program_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_WORKER_FAULT_HOOKS_H_
