#ifndef SOFTWARE_TPU_EMULATOR_SERVICE_CONTROL_SERVICE_H_
#define SOFTWARE_TPU_EMULATOR_SERVICE_CONTROL_SERVICE_H_

// The emulator's control service (proto/control.proto) over a Worker:
// served on the same port as tpu_driver.CloudTpuDriver, which stays exactly
// the real protocol. tools/tpu_ctl is its command-line client.
//
// Thread safety: safe for concurrent use, as gRPC calls it.

#include <string>
#include <utility>
#include <vector>

#include "emulator/service/slice_trace.h"
#include "emulator/worker/worker.h"
#include "proto/control.grpc.pb.h"

namespace tpu::emulator {

class ControlService : public tpu_emulator::Control::Service {
 public:
  // `worker` is not owned and must outlive the service. `slice_addresses`:
  // host:port of every worker of its pod slice, by host id (empty if not in
  // a slice); traces then cover the whole slice (slice_trace.h).
  explicit ControlService(Worker* worker,
                          std::vector<std::string> slice_addresses = {},
                          int host_id = 0)
      : worker_(worker), slice_(std::move(slice_addresses), host_id) {}

  grpc::Status GetWaitReport(grpc::ServerContext* context,
                             const tpu_emulator::GetWaitReportRequest* request,
                             tpu_emulator::WaitReport* response) override;
  grpc::Status AddFault(grpc::ServerContext* context,
                        const tpu_emulator::AddFaultRequest* request,
                        tpu_emulator::AddFaultResponse* response) override;
  grpc::Status ListFaults(grpc::ServerContext* context,
                          const tpu_emulator::ListFaultsRequest* request,
                          tpu_emulator::ListFaultsResponse* response) override;
  grpc::Status ClearFaults(
      grpc::ServerContext* context,
      const tpu_emulator::ClearFaultsRequest* request,
      tpu_emulator::ClearFaultsResponse* response) override;
  // What the emulated TPU did.
  grpc::Status StartTrace(grpc::ServerContext* context,
                          const tpu_emulator::StartTraceRequest* request,
                          tpu_emulator::StartTraceResponse* response) override;
  grpc::Status StopTrace(grpc::ServerContext* context,
                         const tpu_emulator::StopTraceRequest* request,
                         tpu_emulator::StopTraceResponse* response) override;
  grpc::Status GetStats(grpc::ServerContext* context,
                        const tpu_emulator::GetStatsRequest* request,
                        tpu_emulator::WorkerStats* response) override;
  grpc::Status GetProfile(grpc::ServerContext* context,
                          const tpu_emulator::GetProfileRequest* request,
                          tpu_emulator::GetProfileResponse* response) override;

 private:
  Worker* const worker_;
  SliceTrace slice_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SERVICE_CONTROL_SERVICE_H_
