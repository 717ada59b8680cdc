#ifndef SOFTWARE_TPU_EMULATOR_WORKER_WORKER_STATS_H_
#define SOFTWARE_TPU_EMULATOR_WORKER_WORKER_STATS_H_

// The worker's stats (control service GetStats, tpu_ctl stats/top): per core
// and per client what is held and what ran, and the process's resident
// memory.
//
// Thread safety: stateless function over thread-safe objects.

#include <memory>
#include <vector>

#include "emulator/worker/session.h"
#include "emulator/worker/worker_context.h"
#include "proto/control.pb.h"

namespace tpu::emulator {

// `waits`: the hub's report now (state and queue per core); `sessions`: the
// open clients.
tpu_emulator::WorkerStats BuildWorkerStats(
    const WorkerContext& context, const tpu_emulator::WaitReport& waits,
    const std::vector<std::shared_ptr<Session>>& sessions);

// Resident set size of this process from /proc/self/statm; 0 if unreadable.
int64_t ResidentBytes();

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_WORKER_WORKER_STATS_H_
