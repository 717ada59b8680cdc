#include "emulator/worker/worker_stats.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "absl/time/clock.h"

namespace tpu::emulator {

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

tpu_emulator::WorkerStats BuildWorkerStats(
    const WorkerContext& context, const tpu_emulator::WaitReport& waits,
    const std::vector<std::shared_ptr<Session>>& sessions) {
  tpu_emulator::WorkerStats stats;
  stats.set_taken_unix_micros(absl::ToUnixMicros(absl::Now()));
  stats.set_host_id(context.options.host_id);
  stats.set_host_rss_bytes(ResidentBytes());
  stats.set_tracing(context.recorder != nullptr && context.recorder->on());

  std::vector<std::pair<uint32_t, SessionUsage>> usages;
  usages.reserve(sessions.size());
  for (const auto& session : sessions) {
    usages.push_back({session->client_id(), session->Usage()});
  }
  std::sort(usages.begin(), usages.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });

  for (int local = 0; local < context.topology.local_core_count(); ++local) {
    const int core_id = context.topology.CoreId(local);
    tpu_emulator::CoreStats* core = stats.add_cores();
    core->set_core(core_id);
    core->set_hbm_in_use(context.hbm[local]->in_use());
    core->set_hbm_capacity(context.hbm[local]->capacity());
    for (const auto& [client, usage] : usages) {
      auto it = usage.cores.find(core_id);
      if (it == usage.cores.end()) continue;
      core->set_live_buffers(core->live_buffers() + it->second.buffers);
      core->set_programs_loaded(core->programs_loaded() +
                                it->second.loaded_programs);
    }
    const trace::Activity activity = context.activity->Core(core_id);
    core->set_programs_run(activity.programs_run);
    core->set_busy_micros(activity.busy_micros);
    for (const tpu_emulator::CoreWait& wait : waits.cores()) {
      if (wait.core() != core_id) continue;
      core->set_state(wait.activity());
      core->set_queue_depth(wait.queued());
    }
  }
  for (size_t i = 0; i < usages.size(); ++i) {
    const auto& [client_id, usage] = usages[i];
    tpu_emulator::ClientStats* client = stats.add_clients();
    client->set_client_id(client_id);
    for (const auto& [core, held] : usage.cores) {
      client->set_hbm_in_use(client->hbm_in_use() + held.bytes);
      client->set_live_buffers(client->live_buffers() + held.buffers);
      client->set_programs_loaded(client->programs_loaded() +
                                  held.loaded_programs);
    }
    client->set_programs_compiled(usage.compiled_programs);
    const trace::Activity activity = context.activity->Client(client_id);
    client->set_programs_run(activity.programs_run);
    client->set_busy_micros(activity.busy_micros);
  }
  for (const auto& session : sessions) {
    for (auto& client : *stats.mutable_clients()) {
      if (client.client_id() == session->client_id()) {
        client.set_operations_in_flight(
            static_cast<int64_t>(session->scheduler().live_nodes()));
      }
    }
  }
  return stats;
}

}  // namespace tpu::emulator
