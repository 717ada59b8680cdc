#include "emulator/trace/activity.h"

namespace tpu::emulator::trace {

void ActivityCounters::ProgramRan(int core, uint32_t client_id,
                                  int64_t micros) {
  absl::MutexLock lock(&mu_);
  Activity& per_core = cores_[core];
  ++per_core.programs_run;
  per_core.busy_micros += micros;
  Activity& per_client = clients_[client_id];
  ++per_client.programs_run;
  per_client.busy_micros += micros;
}

Activity ActivityCounters::Core(int core) const {
  absl::MutexLock lock(&mu_);
  auto it = cores_.find(core);
  return it == cores_.end() ? Activity() : it->second;
}

Activity ActivityCounters::Client(uint32_t client_id) const {
  absl::MutexLock lock(&mu_);
  auto it = clients_.find(client_id);
  return it == clients_.end() ? Activity() : it->second;
}

void ActivityCounters::ForgetClient(uint32_t client_id) {
  absl::MutexLock lock(&mu_);
  clients_.erase(client_id);
}

}  // namespace tpu::emulator::trace
