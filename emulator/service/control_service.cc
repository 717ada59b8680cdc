#include "emulator/service/control_service.h"

#include <algorithm>

namespace tpu::emulator {

// Each core keeps at most this many collectives.
constexpr int kMaxHistory = 1000;

grpc::Status ControlService::GetWaitReport(
    grpc::ServerContext*, const tpu_emulator::GetWaitReportRequest* request,
    tpu_emulator::WaitReport* response) {
  *response =
      worker_->WaitReport(std::clamp(request->history(), 0, kMaxHistory));
  return grpc::Status::OK;
}

}  // namespace tpu::emulator
