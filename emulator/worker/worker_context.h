#ifndef SOFTWARE_TPU_EMULATOR_WORKER_CONTEXT_H_
#define SOFTWARE_TPU_EMULATOR_WORKER_CONTEXT_H_

// What operations need from their worker: topology, HBM accounts, and where
// to run. Owned by the worker; outlives every operation (the worker drains
// its queues before destroying it).
//
// Thread safety: immutable after construction; the objects it points to are
// safe for concurrent use.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "emulator/collectives/collective_hub.h"
#include "emulator/faults/fault_plan.h"
#include "emulator/faults/fault_wait.h"
#include "emulator/trace/activity.h"
#include "emulator/trace/program_profile.h"
#include "emulator/trace/recorder.h"
#include "emulator/worker/hbm.h"
#include "emulator/worker/topology.h"
#include "emulator/worker/work_queue.h"
#include "emulator/worker/worker.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace tpu::emulator {

struct WorkerContext {
  WorkerOptions options;
  Topology topology;
  // By local core index.
  std::vector<std::shared_ptr<HbmAccount>> hbm;
  // Transfers and compiles. Not owned.
  WorkQueue* pool = nullptr;
  // One serial queue per local core: its programs, in readiness order.
  std::vector<WorkQueue*> cores;
  // Where kernels run. Not owned.
  const Eigen::ThreadPoolDevice* device = nullptr;
  // Where cores meet at collectives. Not owned.
  CollectiveHub* collectives = nullptr;
  // The fault rules operations consult as they start, and the threads that
  // delayed or held operations wait on. Not owned.
  faults::FaultPlan* faults = nullptr;
  faults::FaultThreads* fault_threads = nullptr;
  // Releases a client as Close does, failing its waiting operations with
  // `reason` (a fault rule's drop_stream).
  std::function<void(uint32_t client_id, const absl::Status& reason)>
      close_client;
  // What the TPU did (emulator/trace/): the timeline, programs run and busy
  // time, per-program profiles. Not owned.
  trace::Recorder* recorder = nullptr;
  trace::ActivityCounters* activity = nullptr;
  trace::ProgramProfiles* profiles = nullptr;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_WORKER_CONTEXT_H_
