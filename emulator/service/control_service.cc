#include "emulator/service/control_service.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"

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

grpc::Status ControlService::AddFault(
    grpc::ServerContext*, const tpu_emulator::AddFaultRequest* request,
    tpu_emulator::AddFaultResponse* response) {
  absl::StatusOr<int> number = worker_->fault_plan().Add(request->rule());
  if (!number.ok()) {
    return grpc::Status(static_cast<grpc::StatusCode>(number.status().code()),
                        std::string(number.status().message()));
  }
  response->set_number(*number);
  return grpc::Status::OK;
}

grpc::Status ControlService::ListFaults(
    grpc::ServerContext*, const tpu_emulator::ListFaultsRequest*,
    tpu_emulator::ListFaultsResponse* response) {
  for (const faults::RuleInfo& info : worker_->fault_plan().List()) {
    tpu_emulator::FaultRule* rule = response->add_rules();
    rule->set_number(info.number);
    rule->set_text(info.text);
    rule->set_matched(info.matched);
  }
  return grpc::Status::OK;
}

grpc::Status ControlService::ClearFaults(
    grpc::ServerContext*, const tpu_emulator::ClearFaultsRequest*,
    tpu_emulator::ClearFaultsResponse* response) {
  faults::FaultPlan& plan = worker_->fault_plan();
  response->set_cleared(static_cast<int>(plan.List().size()));
  plan.Clear();
  return grpc::Status::OK;
}

namespace {

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

// When the caller stops waiting (far away if it set no deadline).
absl::Time CallerDeadline(const grpc::ServerContext& context) {
  const auto left = context.deadline() - std::chrono::system_clock::now();
  if (left > std::chrono::hours(24)) return absl::InfiniteFuture();
  return absl::Now() + absl::FromChrono(left);
}

}  // namespace

grpc::Status ControlService::StartTrace(
    grpc::ServerContext* context,
    const tpu_emulator::StartTraceRequest* request,
    tpu_emulator::StartTraceResponse* response) {
  absl::Status started = worker_->StartTrace(request->instructions());
  if (!started.ok()) return ToGrpc(started);
  if (slice_.in_slice() && !request->this_worker_only()) {
    for (std::string& note : slice_.StartOthers(request->instructions(),
                                                CallerDeadline(*context))) {
      response->add_notes(std::move(note));
    }
  }
  return grpc::Status::OK;
}

grpc::Status ControlService::StopTrace(
    grpc::ServerContext* context, const tpu_emulator::StopTraceRequest* request,
    tpu_emulator::StopTraceResponse* response) {
  absl::StatusOr<std::string> json = worker_->StopTrace();
  if (!json.ok()) return ToGrpc(json.status());
  if (slice_.in_slice() && !request->this_worker_only()) {
    std::vector<std::string> notes;
    json = slice_.StopOthersAndMerge(*std::move(json), CallerDeadline(*context),
                                     &notes);
    if (!json.ok()) return ToGrpc(json.status());
    for (std::string& note : notes) response->add_notes(std::move(note));
  }
  response->set_trace_json(*std::move(json));
  return grpc::Status::OK;
}

grpc::Status ControlService::GetStats(grpc::ServerContext*,
                                      const tpu_emulator::GetStatsRequest*,
                                      tpu_emulator::WorkerStats* response) {
  *response = worker_->Stats();
  return grpc::Status::OK;
}

grpc::Status ControlService::GetProfile(
    grpc::ServerContext*, const tpu_emulator::GetProfileRequest* request,
    tpu_emulator::GetProfileResponse* response) {
  *response = worker_->Profile(request->program());
  return grpc::Status::OK;
}

}  // namespace tpu::emulator
