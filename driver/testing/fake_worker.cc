// FakeWorker, FakeCluster and the fake's programs (fake_driver.h); the
// driver itself is in fake_driver.cc.

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "driver/testing/fake_driver.h"
#include "driver/testing/fake_worker_state.h"

namespace tpu::driver::testing {
namespace {

// Calls `then` once every event of `deps` has completed: with OK, or with
// the first failure seen.
void AfterAll(const std::vector<Event*>& deps,
              std::function<void(absl::Status)> then) {
  if (deps.empty()) return then(absl::OkStatus());
  struct Join {
    std::atomic<size_t> remaining;
    std::mutex mu;
    absl::Status failed;  // Guarded by mu.
    std::function<void(absl::Status)> then;
  };
  auto join = std::make_shared<Join>();
  // One more than there are dependencies, so `then` cannot run while the
  // callbacks are still being added.
  join->remaining = deps.size() + 1;
  join->then = std::move(then);
  auto arrive = [join](absl::Status status) {
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(join->mu);
      if (join->failed.ok()) join->failed = std::move(status);
    }
    if (--join->remaining != 0) return;
    absl::Status failed;
    {
      std::lock_guard<std::mutex> lock(join->mu);
      failed = join->failed;
    }
    join->then(std::move(failed));
  };
  for (Event* dep : deps) dep->AddCallback(arrive);
  arrive(absl::OkStatus());
}

// A copy of one of the state's fields, read under its lock.
template <typename T>
T Read(FakeWorker::State& state, T FakeWorker::State::*field) {
  absl::MutexLock lock(&state.mu);
  return state.*field;
}

}  // namespace

// out[0] byte i = in[0] byte i + 1.
absl::Status AddOneToEachByte(const std::vector<Literal>& inputs,
                              std::vector<Literal>* outputs) {
  if (inputs.empty() || outputs->empty()) return absl::OkStatus();
  const auto* in = static_cast<const uint8_t*>(inputs[0].untyped_data());
  auto* out = static_cast<uint8_t*>((*outputs)[0].mutable_untyped_data());
  const int64_t n =
      std::min(inputs[0].size_bytes(), (*outputs)[0].size_bytes());
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(in[i] + 1);
  return absl::OkStatus();
}

absl::Status FakeWorker::State::Lost() const {
  return absl::UnavailableError(
      absl::StrCat("fake ", options.name, ": connection lost"));
}

std::shared_ptr<ManualEvent> FakeWorker::State::Issue(
    const void* driver, std::string kind, const std::vector<Event*>& deps,
    std::function<absl::Status()> effect) {
  auto event = std::make_shared<ManualEvent>();
  {
    absl::MutexLock lock(&mu);
    ++issued[kind];
  }
  Op op{driver, std::move(kind), std::move(effect), event};
  AfterAll(deps, [self = shared_from_this(),
                  op = std::move(op)](absl::Status status) mutable {
    if (!status.ok()) {
      op.event->Complete(absl::FailedPreconditionError(
          absl::StrCat("a dependency failed: ", status.message())));
      return;
    }
    self->Run(std::move(op));
  });
  return event;
}

void FakeWorker::State::Run(Op op) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu);
    auto planted = fail_next.find(op.kind);
    if (gone) {
      status = Lost();
    } else if (planted != fail_next.end() && !planted->second.empty()) {
      status = planted->second.front();
      planted->second.pop_front();
    } else if (holding == Holding::kEverything ||
               (holding == Holding::kExecutions &&
                op.kind == "ExecuteProgram")) {
      queue.push_back(std::move(op));
      return;
    }
  }
  if (status.ok()) status = op.effect();
  op.event->Complete(status);
}

void FakeWorker::State::FailQueued(const void* driver,
                                   const absl::Status& status) {
  std::vector<Op> failed;
  {
    absl::MutexLock lock(&mu);
    std::deque<Op> kept;
    for (Op& op : queue) {
      if (driver == nullptr || op.driver == driver) {
        failed.push_back(std::move(op));
      } else {
        kept.push_back(std::move(op));
      }
    }
    queue.swap(kept);
  }
  for (Op& op : failed) op.event->Complete(status);
}

FakeWorker::FakeWorker(FakeWorkerOptions options)
    : state_(std::make_shared<State>()) {
  State& s = *state_;
  s.options = std::move(options);
  const int hosts = std::max(1, s.options.pod_hosts);
  const int cpc = s.options.cores_per_chip;
  tpu_driver::SystemInfo& info = s.info;
  for (int chip = 0; chip < hosts * s.options.chips; ++chip) {
    const int host = chip / s.options.chips;
    auto* c = info.add_tpu_chip();
    c->set_host_id(host);
    c->mutable_chip_coord()->set_x(chip);
    c->mutable_chip_coord()->set_y(0);
    c->mutable_chip_coord()->set_z(0);
    for (int k = 0; k < cpc; ++k) {
      auto* core = c->add_core();
      core->set_id(chip * cpc + k);
      core->set_core_on_chip_index(k);
      core->set_core_on_host_index((chip % s.options.chips) * cpc + k);
      core->set_hbm_bytes_available(s.options.hbm_bytes_per_core);
      core->set_hbm_bytes_allocatable(s.options.hbm_bytes_per_core);
      if (host == s.options.host_id) {
        *info.add_local_core() = *core;
        s.local_cores.insert(core->id());
      }
    }
  }
  info.mutable_cpu()->set_num_cpu_cores(2);
  info.mutable_cpu()->set_cpu_load_average_1min(0.5f);
  info.mutable_cpu()->set_ram_bytes_total(int64_t{1} << 30);
  info.mutable_cpu()->set_ram_bytes_available(int64_t{1} << 29);
  info.set_host_id(s.options.host_id);
  info.set_host_count(hosts);
  info.set_chip_count(info.tpu_chip_size());
  info.set_core_count(hosts * s.options.chips * cpc);
}

FakeWorker::~FakeWorker() = default;

std::shared_ptr<FakeWorker> FakeWorker::Create(FakeWorkerOptions options) {
  return std::shared_ptr<FakeWorker>(new FakeWorker(std::move(options)));
}

std::unique_ptr<TpuDriver> FakeWorker::NewDriver() {
  return NewFakeDriver(state_);
}

void FakeWorker::set_executor(Executor executor) {
  absl::MutexLock lock(&state_->mu);
  state_->executor = std::move(executor);
}

void FakeWorker::Hold() {
  absl::MutexLock lock(&state_->mu);
  state_->holding = State::Holding::kEverything;
}

void FakeWorker::HoldExecutions() {
  absl::MutexLock lock(&state_->mu);
  state_->holding = State::Holding::kExecutions;
}

void FakeWorker::Release() {
  // One at a time, holding still: what a released operation makes ready
  // queues behind the rest instead of running inside it, so order is kept.
  while (true) {
    State::Op op;
    {
      absl::MutexLock lock(&state_->mu);
      if (state_->queue.empty()) {
        state_->holding = State::Holding::kNothing;
        return;
      }
      op = std::move(state_->queue.front());
      state_->queue.pop_front();
    }
    op.event->Complete(op.effect());
  }
}

void FakeWorker::Disappear() {
  {
    absl::MutexLock lock(&state_->mu);
    state_->gone = true;
  }
  state_->FailQueued(nullptr, state_->Lost());
}

void FakeWorker::FailNext(const std::string& kind, absl::Status status) {
  absl::MutexLock lock(&state_->mu);
  state_->fail_next[kind].push_back(std::move(status));
}

int FakeWorker::held() {
  absl::MutexLock lock(&state_->mu);
  return static_cast<int>(state_->queue.size());
}

bool FakeWorker::AwaitHeld(int count, absl::Duration timeout) {
  State* s = state_.get();
  absl::MutexLock lock(&s->mu);
  auto enough = [s, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) {
    return static_cast<int>(s->queue.size()) >= count;
  };
  return s->mu.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

int64_t FakeWorker::live_buffers() {
  return Read(*state_, &State::live_buffers);
}
int64_t FakeWorker::live_loaded_programs() {
  return Read(*state_, &State::live_loaded);
}
int64_t FakeWorker::drivers_open() {
  return Read(*state_, &State::drivers_open);
}
int64_t FakeWorker::resets() { return Read(*state_, &State::resets); }
std::optional<xla::DeviceAssignmentProto> FakeWorker::last_assignment() {
  return Read(*state_, &State::last_assignment);
}
std::vector<int32_t> FakeWorker::executed_cores() {
  return Read(*state_, &State::executed_cores);
}
int32_t FakeWorker::last_num_replicas() {
  return Read(*state_, &State::last_num_replicas);
}

int64_t FakeWorker::issued(const std::string& kind) {
  absl::MutexLock lock(&state_->mu);
  auto it = state_->issued.find(kind);
  return it == state_->issued.end() ? 0 : it->second;
}

std::optional<xla::DeviceAssignmentProto> FakeWorker::last_assignment(
    int32_t core) {
  absl::MutexLock lock(&state_->mu);
  auto it = state_->assignments.find(core);
  if (it == state_->assignments.end()) return std::nullopt;
  return it->second;
}

const std::string& FakeWorker::name() const { return state_->options.name; }

tpu_driver::SystemInfo FakeWorker::system_info() const { return state_->info; }

std::shared_ptr<FakeWorker> FakeCluster::Add(FakeWorkerOptions options) {
  options.name = absl::StrCat("fake", workers_.size());
  workers_.push_back(FakeWorker::Create(std::move(options)));
  return workers_.back();
}

std::string FakeCluster::pod_address() const {
  std::string address = "grpc+pod://";
  for (size_t i = 0; i < workers_.size(); ++i) {
    absl::StrAppend(&address, i == 0 ? "" : ",", "fake", i);
  }
  return address;
}

std::function<absl::StatusOr<std::unique_ptr<TpuDriver>>(
    const tpu_driver::TpuDriverConfig& config)>
FakeCluster::OpenWorker() const {
  return [workers = workers_](const tpu_driver::TpuDriverConfig& config)
             -> absl::StatusOr<std::unique_ptr<TpuDriver>> {
    for (size_t i = 0; i < workers.size(); ++i) {
      if (config.worker() == absl::StrCat("grpc://fake", i)) {
        return workers[i]->NewDriver();
      }
    }
    return absl::UnavailableError(
        absl::StrCat("no fake worker at ", config.worker()));
  };
}

xla::HloModuleProto ModuleWithSignature(const std::vector<Shape>& parameters,
                                        const Shape& result) {
  xla::HloModuleProto module;
  module.set_name("fake");
  module.set_entry_computation_id(7);
  xla::HloComputationProto* entry = module.add_computations();
  entry->set_id(7);
  entry->set_name("main");
  for (const Shape& parameter : parameters) {
    *entry->mutable_program_shape()->add_parameters() = parameter.ToProto();
  }
  *entry->mutable_program_shape()->mutable_result() = result.ToProto();
  return module;
}

xla::HloProto FakeProgram(const std::string& name, int64_t bytes) {
  const Shape array = Shape::Array(xla::U8, {bytes});
  xla::HloProto proto;
  *proto.mutable_hlo_module() = ModuleWithSignature({array}, array);
  proto.mutable_hlo_module()->set_name(name);
  return proto;
}

}  // namespace tpu::driver::testing
