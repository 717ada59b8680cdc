#include "emulator/worker/worker.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "emulator/fiber/fiber.h"
#include "emulator/trace/chrome_json.h"
#include "emulator/worker/hbm.h"
#include "emulator/worker/operations.h"
#include "emulator/worker/response_sink.h"
#include "emulator/worker/session.h"
#include "emulator/worker/system_info.h"
#include "emulator/worker/timer_queue.h"
#include "emulator/worker/topology.h"
#include "emulator/worker/work_queue.h"
#include "emulator/worker/worker_context.h"
#include "emulator/worker/worker_stats.h"
#include "hlo/aligned_buffer.h"
#include "hlo/host_memory.h"
#include "hlo/memory_budget.h"
#include "proto/event_id.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator {
namespace {

class WorkerImpl;

class StreamImpl : public WorkerStream {
 public:
  StreamImpl(WorkerImpl* worker, Worker::ResponseCallback on_response)
      : worker_(worker),
        sink_(std::make_shared<ResponseSink>(std::move(on_response))) {}
  ~StreamImpl() override;

  void Submit(const tpu_driver::StreamRequest& request,
              const TransferData& transfer_data) override;
  void Finish() override;
  void FinishAsync(std::function<void()> done) override;
  void Abort() override;
  void SetDropHandler(
      std::function<void(const absl::Status&)> handler) override {
    sink_->SetDropHandler(std::move(handler));
  }

 private:
  WorkerImpl* const worker_;
  const std::shared_ptr<ResponseSink> sink_;

  // PERMISSION_DENIED for an entry of a client other than the stream's.
  absl::Status CheckOwnerLocked(const EventId& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // The clients whose operations this stream carried.
  absl::flat_hash_map<uint32_t, std::shared_ptr<Session>> clients_
      ABSL_GUARDED_BY(mu_);
  // The client this stream acts for: the first open client an entry named
  // (0 until then). Entries of other clients are refused, so a client can
  // neither act through, nor be released with, a stream it did not open.
  uint32_t owner_ ABSL_GUARDED_BY(mu_) = 0;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

// How long a worker stays without clients before it gives memory back, and
// the last of the follow-up releases: each comes twice as late as the one
// before (1, 2, 4, 8 s). Memory a closed connection still holds (gRPC's
// buffers, threads' allocator caches) is freed after the first release and
// would otherwise stay resident until the next burst: the soak test measured
// 135% of the idle footprint after one release and 108% after a second.
constexpr absl::Duration kIdleMemoryRelease = absl::Seconds(1);
constexpr absl::Duration kLastIdleMemoryRelease = absl::Seconds(8);

// Shared with timer callbacks so that a sweep never touches a destroyed
// worker.
struct SweepState {
  absl::Mutex mu;
  WorkerImpl* worker ABSL_GUARDED_BY(mu) = nullptr;
};

class WorkerImpl : public Worker {
 public:
  WorkerImpl(const WorkerOptions& options, Topology topology);
  ~WorkerImpl() override;

  absl::StatusOr<tpu_driver::OpenResponse> Open(
      const tpu_driver::OpenRequest& request) override;
  absl::Status Close(const tpu_driver::CloseRequest& request) override;
  absl::Status Reset(const tpu_driver::ResetRequest& request) override;
  absl::StatusOr<tpu_driver::QuerySystemInfoResponse> QuerySystemInfo(
      const tpu_driver::QuerySystemInfoRequest& request) override;
  std::unique_ptr<WorkerStream> OpenStream(
      ResponseCallback on_response) override;
  tpu_emulator::WaitReport WaitReport(int history) const override {
    return hub_->SliceReport(history);
  }
  CollectiveHub& collective_hub() override { return *hub_; }
  faults::FaultPlan& fault_plan() const override { return *faults_; }
  absl::Status StartTrace(bool instructions) override {
    return recorder_.Start(instructions);
  }
  absl::StatusOr<std::string> StopTrace() override {
    absl::StatusOr<trace::Trace> recorded = recorder_.Stop();
    if (!recorded.ok()) return recorded.status();
    return trace::ToChromeJson(*recorded);
  }
  tpu_emulator::WorkerStats Stats() const override;
  tpu_emulator::GetProfileResponse Profile(
      const std::string& program) const override {
    return profiles_.Get(program);
  }

  std::shared_ptr<Session> FindSession(uint32_t client_id);
  void CloseClient(uint32_t client_id, const absl::Status& reason);
  const WorkerContext& context() const { return context_; }

 private:
  static void ScheduleSweep(std::shared_ptr<SweepState> state,
                            std::shared_ptr<TimerQueue> timers,
                            absl::Duration period);
  void SweepIdle();
  // With no client left, gives the heap's free pages and cached blocks back
  // to the system once the worker has stayed without clients for
  // kIdleMemoryRelease: a test suite that reconnects for every test keeps
  // its warm memory, an idle worker returns to its idle footprint.
  void ReleaseMemoryIfNoClients();
  void ScheduleIdleRelease(uint64_t generation, absl::Duration delay);
  // True if the worker is still without clients since `generation`.
  bool ReleaseMemoryIfStillIdle(uint64_t generation);

  // Constant after construction (the queues and device it points to are
  // members below).
  WorkerContext context_;
  const std::shared_ptr<TimerQueue> timers_;
  const std::shared_ptr<SweepState> sweep_;
  const std::shared_ptr<faults::FaultPlan> faults_;
  // Delayed and held operations off the cores; joined once every client
  // is closed.
  faults::FaultThreads fault_threads_;
  // What the TPU did (emulator/trace/); outlive everything that records.
  trace::Recorder recorder_;
  trace::ActivityCounters activity_;
  trace::ProgramProfiles profiles_;

  mutable absl::Mutex mu_;
  // Outlives the cores: programs blocked in collectives leave through it.
  std::unique_ptr<CollectiveHub> hub_;
  absl::flat_hash_map<uint32_t, std::shared_ptr<Session>> sessions_
      ABSL_GUARDED_BY(mu_);
  uint32_t next_client_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Counts opens and last closes: a memory release scheduled at one last
  // close happens only if nothing opened since.
  uint64_t idle_generation_ ABSL_GUARDED_BY(mu_) = 0;

  // Declared last so they are destroyed first: programs and transfers still
  // queued must finish while everything they use is alive. The Eigen pool
  // outlives the core queues whose programs run kernels on it.
  std::unique_ptr<Eigen::ThreadPool> eigen_pool_;
  std::unique_ptr<Eigen::ThreadPoolDevice> eigen_device_;
  std::unique_ptr<WorkQueue> pool_;
  // The OS threads the cores' fibers run on; outlives the cores' queues.
  std::unique_ptr<fiber::Scheduler> fibers_;
  std::vector<std::unique_ptr<WorkQueue>> cores_;
};

WorkerImpl::WorkerImpl(const WorkerOptions& options, Topology topology)
    : context_{options, topology, {}, nullptr, {}, nullptr},
      timers_(std::make_shared<TimerQueue>()),
      sweep_(std::make_shared<SweepState>()),
      faults_(options.fault_plan != nullptr
                  ? options.fault_plan
                  : std::make_shared<faults::FaultPlan>()),
      recorder_(options.host_id) {
  context_.recorder = &recorder_;
  context_.activity = &activity_;
  context_.profiles = &profiles_;
  if (options.host_memory_budget > 0) {
    // Never deleted: buffers release to the budget they were charged to,
    // and some (a client's literals under local://) outlive the worker.
    MemoryBudget::SetProcess(new MemoryBudget(
        options.host_memory_budget,
        "the worker's host memory budget (--host_memory_budget)"));
  }
  int threads = options.compute_threads;
  if (threads <= 0) {
    threads =
        std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  eigen_pool_ = std::make_unique<Eigen::ThreadPool>(threads);
  eigen_device_ =
      std::make_unique<Eigen::ThreadPoolDevice>(eigen_pool_.get(), threads);
  pool_ = std::make_unique<WorkQueue>("tpu-worker-pool", 2);
  context_.pool = pool_.get();
  context_.device = eigen_device_.get();
  // Each core runs on a fiber, and the fibers on at most one OS thread per
  // hardware thread: cores meeting at a collective switch fibers in user
  // space instead of waking one OS thread per core.
  const int hardware_threads =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  fibers_ = std::make_unique<fiber::Scheduler>(
      "tpu-cores",
      std::max(1, std::min(topology.local_core_count(), hardware_threads)));
  for (int i = 0; i < topology.local_core_count(); ++i) {
    context_.hbm.push_back(
        HbmAccount::Create(topology.CoreId(i), options.hbm_bytes_per_core));
    cores_.push_back(std::make_unique<WorkQueue>(absl::StrCat("tpu-core-", i),
                                                 fibers_.get()));
    context_.cores.push_back(cores_.back().get());
  }
  CollectiveHubOptions hub_options;
  for (int i = 0; i < topology.local_core_count(); ++i) {
    hub_options.cores.push_back(topology.CoreId(i));
  }
  hub_options.host_id = options.host_id;
  hub_options.report_waits_after = options.report_waits_after;
  hub_options.launch_barrier = options.launch_barrier;
  hub_options.peers = options.peers;
  hub_options.recorder = &recorder_;
  for (int i = 0; i < topology.local_core_count(); ++i) {
    recorder_.NameTrack(trace::CoreTrack(topology.CoreId(i)),
                        absl::StrCat("core ", topology.CoreId(i)));
  }
  hub_options.queued = [this](int core) {
    const int local = context_.topology.LocalIndex(core);
    if (local < 0 || local >= static_cast<int>(context_.cores.size())) return 0;
    // The running program is not queued.
    return std::max(0, context_.cores[local]->pending() - 1);
  };
  hub_ = std::make_unique<CollectiveHub>(std::move(hub_options));
  context_.collectives = hub_.get();
  context_.faults = faults_.get();
  context_.fault_threads = &fault_threads_;
  context_.close_client = [this](uint32_t client_id,
                                 const absl::Status& reason) {
    CloseClient(client_id, reason);
  };
  // Clearing the rules gives every core its whole HBM back.
  faults_->OnClear([hbm = context_.hbm]() {
    for (const auto& account : hbm) account->RestoreCapacity();
  });
  {
    absl::MutexLock lock(&sweep_->mu);
    sweep_->worker = this;
  }
  // Sweeps often enough that an idle client lingers at most a few percent
  // past its limit, and at most once a second.
  const absl::Duration period = std::min(
      absl::Seconds(1), absl::Seconds(options.max_idle_time_seconds) / 20);
  ScheduleSweep(sweep_, timers_, period);
}

WorkerImpl::~WorkerImpl() {
  {
    // Waits for a sweep in progress; later ones find no worker.
    absl::MutexLock lock(&sweep_->mu);
    sweep_->worker = nullptr;
  }
  absl::flat_hash_map<uint32_t, std::shared_ptr<Session>> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions.swap(sessions_);
  }
  for (auto& [id, session] : sessions) {
    session->Close(absl::CancelledError("The worker is shutting down."));
  }
  // No more long-wait log lines (they read the core queues), and waiters
  // of the closed sessions leave their collectives.
  hub_->StopReporting();
  hub_->WakeWaiters();
  // Operations held by fault rules saw their clients cancelled and end.
  fault_threads_.JoinAll();
  // Members: the core queues drain first (their programs stop at the next
  // instruction boundary, being cancelled), then the pool, then Eigen.
  cores_.clear();
  pool_.reset();
}

void WorkerImpl::ScheduleSweep(std::shared_ptr<SweepState> state,
                               std::shared_ptr<TimerQueue> timers,
                               absl::Duration period) {
  std::weak_ptr<TimerQueue> weak_timers = timers;
  timers->Schedule(absl::Now() + period, [state, weak_timers, period]() {
    {
      absl::MutexLock lock(&state->mu);
      if (state->worker == nullptr) return;
      state->worker->SweepIdle();
    }
    if (auto timers = weak_timers.lock()) {
      ScheduleSweep(state, std::move(timers), period);
    }
  });
}

void WorkerImpl::SweepIdle() {
  const absl::Time cutoff =
      absl::Now() - absl::Seconds(context_.options.max_idle_time_seconds);
  std::vector<std::shared_ptr<Session>> idle;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->second->IdleSince(cutoff)) {
        idle.push_back(std::move(it->second));
        sessions_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (auto& session : idle) {
    session->Close(absl::CancelledError(absl::StrCat(
        "Client ", session->client_id(), " was idle for more than ",
        context_.options.max_idle_time_seconds,
        " seconds and its resources were released.")));
  }
  if (idle.empty()) return;
  hub_->WakeWaiters();
  idle.clear();
  ReleaseMemoryIfNoClients();
}

absl::StatusOr<tpu_driver::OpenResponse> WorkerImpl::Open(
    const tpu_driver::OpenRequest& request) {
  uint32_t id = 0;
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mu_);
    if (sessions_.size() >= EventId::kMaxClientId) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "All ", EventId::kMaxClientId,
          " client ids are in use; close clients before opening more."));
    }
    // Ids count up and wrap within 20 bits, skipping live ones, so a closed
    // client's id is not handed out again soon.
    while (true) {
      id = next_client_id_;
      next_client_id_ =
          next_client_id_ >= EventId::kMaxClientId ? 1 : next_client_id_ + 1;
      if (!sessions_.contains(id)) break;
    }
    ++idle_generation_;
    session = std::make_shared<Session>(
        id, timers_,
        absl::Milliseconds(context_.options.unknown_handle_wait_ms),
        context_.options.client_limits);
    sessions_[id] = session;
  }
  recorder_.NameTrack(trace::ClientTrack(id), absl::StrCat("client ", id));
  tpu_driver::OpenResponse response;
  response.set_client_id(id);
  response.set_max_idle_time_seconds(context_.options.max_idle_time_seconds);
  return response;
}

absl::Status WorkerImpl::Close(const tpu_driver::CloseRequest& request) {
  // Unknown ids succeed: the real client closes with its id after Reset.
  CloseClient(request.client_id(),
              absl::CancelledError(absl::StrCat("Client ", request.client_id(),
                                                " was closed.")));
  return absl::OkStatus();
}

void WorkerImpl::CloseClient(uint32_t client_id, const absl::Status& reason) {
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(client_id);
    if (it == sessions_.end()) return;
    session = std::move(it->second);
    sessions_.erase(it);
  }
  session->Close(reason);
  hub_->WakeWaiters();
  hub_->ForgetClient(client_id);
  activity_.ForgetClient(client_id);
  session.reset();
  ReleaseMemoryIfNoClients();
}

void WorkerImpl::ReleaseMemoryIfNoClients() {
  uint64_t generation;
  {
    absl::MutexLock lock(&mu_);
    if (!sessions_.empty()) return;
    generation = ++idle_generation_;
  }
  ScheduleIdleRelease(generation, kIdleMemoryRelease);
}

void WorkerImpl::ScheduleIdleRelease(uint64_t generation,
                                     absl::Duration delay) {
  std::shared_ptr<SweepState> state = sweep_;
  timers_->Schedule(absl::Now() + delay, [state, generation, delay] {
    absl::MutexLock lock(&state->mu);
    if (state->worker != nullptr &&
        state->worker->ReleaseMemoryIfStillIdle(generation) &&
        delay < kLastIdleMemoryRelease) {
      state->worker->ScheduleIdleRelease(generation, delay * 2);
    }
  });
}

bool WorkerImpl::ReleaseMemoryIfStillIdle(uint64_t generation) {
  {
    absl::MutexLock lock(&mu_);
    if (!sessions_.empty() || idle_generation_ != generation) return false;
  }
  AlignedBuffer::DropCachedBlocks();
  ReleaseFreeHostMemory();
  return true;
}

tpu_emulator::WorkerStats WorkerImpl::Stats() const {
  std::vector<std::shared_ptr<Session>> sessions;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, session] : sessions_) sessions.push_back(session);
  }
  return BuildWorkerStats(context_, hub_->Report(/*history=*/0), sessions);
}

absl::Status WorkerImpl::Reset(const tpu_driver::ResetRequest& request) {
  absl::flat_hash_map<uint32_t, std::shared_ptr<Session>> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions.swap(sessions_);
  }
  for (auto& [id, session] : sessions) {
    session->Close(absl::CancelledError(
        absl::StrCat("The worker was reset; client ", id, " is gone.")));
  }
  hub_->WakeWaiters();
  for (auto& [id, session] : sessions) {
    hub_->ForgetClient(id);
    activity_.ForgetClient(id);
  }
  sessions.clear();
  ReleaseMemoryIfNoClients();
  return absl::OkStatus();
}

absl::StatusOr<tpu_driver::QuerySystemInfoResponse> WorkerImpl::QuerySystemInfo(
    const tpu_driver::QuerySystemInfoRequest& request) {
  tpu_driver::QuerySystemInfoResponse response;
  *response.mutable_system_info() = BuildSystemInfo(
      context_.topology, context_.options.hbm_bytes_per_core,
      [this](int local) { return context_.hbm[local]->available(); },
      ReadCpuInfo());
  return response;
}

std::unique_ptr<WorkerStream> WorkerImpl::OpenStream(
    ResponseCallback on_response) {
  return std::make_unique<StreamImpl>(this, std::move(on_response));
}

std::shared_ptr<Session> WorkerImpl::FindSession(uint32_t client_id) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(client_id);
  return it == sessions_.end() ? nullptr : it->second;
}

StreamImpl::~StreamImpl() {
  sink_->Detach();
  absl::MutexLock lock(&mu_);
  for (auto& [id, session] : clients_) session->DetachStream();
  clients_.clear();
}

void StreamImpl::Submit(const tpu_driver::StreamRequest& request,
                        const TransferData& transfer_data) {
  // Whatever completes while this request is taken apart goes out as one
  // response.
  sink_->Hold();
  // Every entry responds, whatever happens below.
  sink_->Expect(request.entry_size());
  // The session that was last touched: a request's entries are usually all
  // one client's, which is marked active once per request.
  const Session* touched = nullptr;
  for (int index = 0; index < request.entry_size(); ++index) {
    const tpu_driver::StreamRequest::Entry& entry = request.entry(index);
    if (!entry.has_operation_id()) {
      sink_->RespondStatus(
          0, absl::InvalidArgumentError(
                 "A request entry has no operation_id; every entry needs a "
                 "unique one (client_id << 44 | operation number)."));
      continue;
    }
    const EventId id = EventId::FromInt(entry.operation_id());
    std::shared_ptr<Session> session;
    {
      absl::MutexLock lock(&mu_);
      if (ended_) {
        sink_->RespondStatus(
            entry.operation_id(),
            absl::FailedPreconditionError("The stream was already finished."));
        continue;
      }
      if (absl::Status owner = CheckOwnerLocked(id); !owner.ok()) {
        sink_->RespondStatus(entry.operation_id(), owner);
        continue;
      }
      auto it = clients_.find(id.client_id);
      if (it != clients_.end() && !it->second->closed()) {
        session = it->second;
      }
    }
    if (session == nullptr) {
      session = worker_->FindSession(id.client_id);
      if (session == nullptr) {
        sink_->RespondStatus(
            entry.operation_id(),
            absl::FailedPreconditionError(absl::StrCat(
                id.ToString(), ": client ", id.client_id,
                " is not open (never opened, closed, reset, or released after "
                "being idle); call Open and use the client id it returns.")));
        continue;
      }
      absl::MutexLock lock(&mu_);
      if (absl::Status owner = CheckOwnerLocked(id); !owner.ok()) {
        sink_->RespondStatus(entry.operation_id(), owner);
        continue;
      }
      owner_ = id.client_id;
      auto [it, inserted] = clients_.try_emplace(id.client_id, session);
      if (inserted) {
        session->AttachStream();
      } else if (it->second != session) {
        it->second->DetachStream();
        it->second = session;
        session->AttachStream();
      }
    }
    if (session.get() != touched) {
      session->Touch();
      touched = session.get();
    }
    SubmitEntry(worker_->context(), session, entry,
                PayloadOf(transfer_data, index), sink_);
  }
  sink_->Release();
}

absl::Status StreamImpl::CheckOwnerLocked(const EventId& id) {
  if (owner_ == 0 || id.client_id == owner_) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      id.ToString(), ": this stream belongs to client ", owner_,
      "; a StreamExecute stream acts only for the client whose id it first "
      "used. Open a stream of its own for client ",
      id.client_id, "."));
}

void StreamImpl::FinishAsync(std::function<void()> done) {
  {
    absl::MutexLock lock(&mu_);
    ended_ = true;
  }
  sink_->OnDrained(std::move(done));
}

void StreamImpl::Finish() {
  auto drained = std::make_shared<absl::Notification>();
  FinishAsync([drained] { drained->Notify(); });
  drained->WaitForNotification();
}

void StreamImpl::Abort() {
  std::vector<uint32_t> ids;
  {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    for (auto& [id, session] : clients_) ids.push_back(id);
  }
  sink_->Detach();
  for (uint32_t id : ids) {
    worker_->CloseClient(id, absl::CancelledError(absl::StrCat(
                                 "A stream of client ", id,
                                 " broke; the client was released.")));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Worker>> Worker::Create(
    const WorkerOptions& options) {
  absl::StatusOr<Topology> topology =
      Topology::Create(options.chips, options.cores_per_chip, options.pod_hosts,
                       options.host_id);
  if (!topology.ok()) return topology.status();
  if (options.hbm_bytes_per_core < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hbm_bytes_per_core is negative (", options.hbm_bytes_per_core, ")."));
  }
  if (options.max_idle_time_seconds < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_idle_time_seconds must be at least 1, got ",
                     options.max_idle_time_seconds, "."));
  }
  if (options.unknown_handle_wait_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown_handle_wait_ms is negative (",
                     options.unknown_handle_wait_ms, ")."));
  }
  if (options.host_memory_budget < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host_memory_budget is negative (", options.host_memory_budget, ")."));
  }
  for (const auto& [limit, name] :
       {std::pair{options.client_limits.max_handles, "max_handles"},
        std::pair{options.client_limits.max_pending_operations,
                  "max_pending_operations"},
        std::pair{options.client_limits.max_bytes_in_flight,
                  "max_bytes_in_flight"}}) {
    if (limit < 0) {
      return absl::InvalidArgumentError(absl::StrCat("client_limits.", name,
                                                     " is negative (", limit,
                                                     "); 0 means no limit."));
    }
  }
  if (options.compute_threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compute_threads is negative (", options.compute_threads, ")."));
  }
  return std::unique_ptr<Worker>(new WorkerImpl(options, *std::move(topology)));
}

}  // namespace tpu::emulator
