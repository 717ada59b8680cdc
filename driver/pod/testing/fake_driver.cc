#include "driver/pod/testing/fake_driver.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace tpu::driver {
namespace testing {
namespace {

// std::mutex rather than absl::Mutex: one per operation (see pod_op.h).
class FakeEvent : public Event {
 public:
  absl::Status Await() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    return status_;
  }
  std::optional<absl::Status> AwaitWithTimeout(
      absl::Duration timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(
            lock,
            absl::ToChronoNanoseconds(std::min(timeout, absl::Hours(24 * 365))),
            [this] { return done_; })) {
      return std::nullopt;
    }
    return status_;
  }
  void AddCallback(std::function<void(absl::Status)> callback) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!done_) {
        callbacks_.push_back(std::move(callback));
        return;
      }
    }
    callback(status_);
  }
  void Complete(absl::Status status) {
    std::vector<std::function<void(absl::Status)>> callbacks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done_) return;
      done_ = true;
      status_ = std::move(status);
      callbacks.swap(callbacks_);
    }
    cv_.notify_all();
    for (auto& callback : callbacks) callback(status_);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  absl::Status status_;
  std::vector<std::function<void(absl::Status)>> callbacks_;
};

struct FakeBuffer {
  int32_t core = 0;
  int64_t bytes = 0;
  bool allocated = false;
  bool freed = false;
  std::vector<uint8_t> data;
};

struct FakeCompiled {
  std::string module;
  xla::ProgramShapeProto shape;
  bool ok = false;
};

struct FakeLoaded {
  int32_t core = 0;
  std::shared_ptr<FakeCompiled> program;
  bool loaded = false;
};

}  // namespace

struct FakeWorker::State {
  FakeWorkerOptions options;
  absl::flat_hash_set<int32_t> local_cores;
  tpu_driver::SystemInfo info;

  absl::Mutex mu;
  bool holding ABSL_GUARDED_BY(mu) = false;
  bool gone ABSL_GUARDED_BY(mu) = false;
  struct Queued {
    std::string kind;
    std::function<absl::Status()> effect;
    std::shared_ptr<FakeEvent> event;
  };
  std::deque<Queued> queue ABSL_GUARDED_BY(mu);
  std::map<std::string, std::deque<absl::Status>> fail_next ABSL_GUARDED_BY(mu);
  std::map<std::string, int64_t> issued ABSL_GUARDED_BY(mu);
  std::map<int32_t, xla::DeviceAssignmentProto> assignments ABSL_GUARDED_BY(mu);
  std::map<int32_t, int64_t> hbm_in_use ABSL_GUARDED_BY(mu);
  int64_t live_buffers ABSL_GUARDED_BY(mu) = 0;
  int64_t live_loaded ABSL_GUARDED_BY(mu) = 0;
  int64_t drivers_open ABSL_GUARDED_BY(mu) = 0;
  int64_t resets ABSL_GUARDED_BY(mu) = 0;

  absl::Status Lost() const {
    return absl::UnavailableError(
        absl::StrCat("fake ", options.name, ": connection lost"));
  }

  // Runs `effect` now, or queues it; returns the operation's event.
  std::shared_ptr<FakeEvent> Issue(const std::string& kind,
                                   std::function<absl::Status()> effect) {
    auto event = std::make_shared<FakeEvent>();
    absl::Status status;
    {
      absl::MutexLock lock(&mu);
      ++issued[kind];
      if (gone) {
        status = Lost();
      } else if (auto it = fail_next.find(kind);
                 it != fail_next.end() && !it->second.empty()) {
        status = it->second.front();
        it->second.pop_front();
      } else if (holding) {
        queue.push_back({kind, std::move(effect), event});
        return event;
      } else {
        status = absl::OkStatus();
      }
    }
    if (status.ok()) status = effect();
    event->Complete(status);
    return event;
  }

  std::shared_ptr<FakeEvent> Failed(absl::Status status) {
    auto event = std::make_shared<FakeEvent>();
    event->Complete(std::move(status));
    return event;
  }
};

namespace {

class FakeDriver;

class FakeBufferHandle : public BufferHandle {
 public:
  FakeBufferHandle(const FakeDriver* owner, std::shared_ptr<FakeBuffer> buffer,
                   std::shared_ptr<FakeEvent> ready,
                   std::optional<xla::ShapeProto> shape)
      : owner(owner),
        buffer(std::move(buffer)),
        ready(std::move(ready)),
        shape_(std::move(shape)) {}
  std::shared_ptr<Event> OnReady() override { return ready; }
  int64_t size_in_bytes() override { return buffer->bytes; }
  std::optional<xla::ShapeProto> shape() override { return shape_; }

  const FakeDriver* const owner;
  const std::shared_ptr<FakeBuffer> buffer;
  const std::shared_ptr<FakeEvent> ready;

 private:
  const std::optional<xla::ShapeProto> shape_;
};

class FakeCompiledHandle : public CompiledProgramHandle {
 public:
  FakeCompiledHandle(const FakeDriver* owner,
                     std::shared_ptr<FakeCompiled> program,
                     std::shared_ptr<FakeEvent> ready)
      : owner(owner), program(std::move(program)), ready(std::move(ready)) {}
  std::shared_ptr<Event> OnReady() override { return ready; }
  absl::StatusOr<xla::ProgramShapeProto> program_shape() override {
    absl::Status status = ready->Await();
    if (!status.ok()) return status;
    return program->shape;
  }
  const FakeDriver* const owner;
  const std::shared_ptr<FakeCompiled> program;
  const std::shared_ptr<FakeEvent> ready;
};

class FakeLoadedHandle : public LoadedProgramHandle {
 public:
  FakeLoadedHandle(const FakeDriver* owner, std::shared_ptr<FakeLoaded> loaded,
                   std::shared_ptr<FakeEvent> ready)
      : owner(owner), loaded(std::move(loaded)), ready(std::move(ready)) {}
  std::shared_ptr<Event> OnReady() override { return ready; }
  const FakeDriver* const owner;
  const std::shared_ptr<FakeLoaded> loaded;
  const std::shared_ptr<FakeEvent> ready;
};

class FakeDriver : public TpuDriver {
 public:
  explicit FakeDriver(std::shared_ptr<FakeWorker> worker)
      : worker_(std::move(worker)), s_(worker_->state()) {
    absl::MutexLock lock(&s_->mu);
    ++s_->drivers_open;
  }
  ~FakeDriver() override {
    // Closing the connection: whatever is still held is cancelled.
    std::deque<FakeWorker::State::Queued> queue;
    {
      absl::MutexLock lock(&s_->mu);
      --s_->drivers_open;
      queue.swap(s_->queue);
    }
    for (auto& q : queue) {
      q.event->Complete(absl::CancelledError("fake driver closed"));
    }
  }

  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override {
    absl::MutexLock lock(&s_->mu);
    if (s_->gone) return s_->Lost();
    tpu_driver::SystemInfo info = s_->info;
    auto live = [this](tpu_driver::TpuCoreInfo& core)
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_->mu) {
                      auto it = s_->hbm_in_use.find(core.id());
                      if (it != s_->hbm_in_use.end()) {
                        core.set_hbm_bytes_available(
                            s_->options.hbm_bytes_per_core - it->second);
                      }
                    };
    for (auto& chip : *info.mutable_tpu_chip()) {
      for (auto& core : *chip.mutable_core()) live(core);
    }
    for (auto& core : *info.mutable_local_core()) live(core);
    return info;
  }

  absl::Status Reset() override {
    absl::MutexLock lock(&s_->mu);
    if (s_->gone) return s_->Lost();
    ++s_->resets;
    s_->live_buffers = 0;
    s_->live_loaded = 0;
    s_->hbm_in_use.clear();
    return absl::OkStatus();
  }

  std::unique_ptr<BufferHandle> Allocate(
      int32_t core_id, tpu_driver::MemoryRegion region, int64_t num_bytes,
      absl::Span<Event* const> wait_for) override {
    return NewBuffer(core_id, num_bytes, std::nullopt, wait_for);
  }
  std::unique_ptr<BufferHandle> Allocate(
      int32_t core_id, tpu_driver::MemoryRegion region,
      const xla::ShapeProto& shape,
      absl::Span<Event* const> wait_for) override {
    return NewBuffer(core_id, ComputeBytesFromShape(shape), shape, wait_for);
  }
  std::unique_ptr<BufferHandle> AllocateTuple(
      int32_t core_id, tpu_driver::MemoryRegion region,
      absl::Span<BufferHandle* const> children,
      absl::Span<Event* const> wait_for) override {
    for (BufferHandle* child : children) {
      absl::Status status = Check(child).status();
      if (!status.ok()) {
        return std::make_unique<FakeBufferHandle>(
            this, std::make_shared<FakeBuffer>(), s_->Failed(status),
            std::nullopt);
      }
    }
    return NewBuffer(core_id, 8 * static_cast<int64_t>(children.size()),
                     std::nullopt, wait_for, "AllocateTuple");
  }

  std::shared_ptr<Event> Deallocate(
      std::unique_ptr<BufferHandle> handle,
      absl::Span<Event* const> wait_for) override {
    auto buffer = Check(handle.get());
    if (!buffer.ok()) return s_->Failed(buffer.status());
    if (auto w = CheckWaitFor(wait_for); !w.ok()) return s_->Failed(w);
    return s_->Issue("Deallocate", [s = s_, b = *buffer]() {
      if (!b->allocated || b->freed) {
        return absl::FailedPreconditionError("fake: buffer not allocated");
      }
      b->freed = true;
      absl::MutexLock lock(&s->mu);
      --s->live_buffers;
      s->hbm_in_use[b->core] -= b->bytes;
      return absl::OkStatus();
    });
  }

  std::shared_ptr<Event> TransferToDevice(
      const void* src, BufferHandle* dst,
      absl::Span<Event* const> wait_for) override {
    auto buffer = Check(dst);
    if (!buffer.ok()) return s_->Failed(buffer.status());
    if (auto w = CheckWaitFor(wait_for); !w.ok()) return s_->Failed(w);
    return s_->Issue("TransferToDevice", [src, b = *buffer]() {
      if (!b->allocated || b->freed) {
        return absl::FailedPreconditionError("fake: buffer not allocated");
      }
      std::memcpy(b->data.data(), src, b->bytes);
      return absl::OkStatus();
    });
  }

  std::shared_ptr<Event> TransferFromDevice(
      const BufferHandle* src, void* dst,
      absl::Span<Event* const> wait_for) override {
    auto buffer = Check(src);
    if (!buffer.ok()) return s_->Failed(buffer.status());
    if (auto w = CheckWaitFor(wait_for); !w.ok()) return s_->Failed(w);
    return s_->Issue("TransferFromDevice", [dst, b = *buffer]() {
      if (!b->allocated || b->freed) {
        return absl::FailedPreconditionError("fake: buffer not allocated");
      }
      std::memcpy(dst, b->data.data(), b->bytes);
      return absl::OkStatus();
    });
  }

  std::shared_ptr<Event> TransferFromDeviceToDevice(
      const BufferHandle* src, BufferHandle* dst,
      absl::Span<Event* const> wait_for) override {
    auto from = Check(src);
    if (!from.ok()) return s_->Failed(from.status());
    auto to = Check(dst);
    if (!to.ok()) return s_->Failed(to.status());
    if (auto w = CheckWaitFor(wait_for); !w.ok()) return s_->Failed(w);
    return s_->Issue("TransferFromDeviceToDevice", [f = *from, t = *to]() {
      if (f->bytes != t->bytes) {
        return absl::InvalidArgumentError("fake: copy between sizes");
      }
      t->data = f->data;
      return absl::OkStatus();
    });
  }

  std::unique_ptr<CompiledProgramHandle> CompileProgram(
      const xla::HloProto& source, int32_t num_replicas,
      absl::Span<Event* const> wait_for) override {
    auto program = std::make_shared<FakeCompiled>();
    program->module = source.hlo_module().name();
    program->shape = source.hlo_module().host_program_shape();
    auto ready = s_->Issue("CompileProgram", [program]() {
      if (program->module == "fail_compile") {
        return absl::InvalidArgumentError("fake: the program does not compile");
      }
      program->ok = true;
      return absl::OkStatus();
    });
    return std::make_unique<FakeCompiledHandle>(this, program, ready);
  }

  std::unique_ptr<LoadedProgramHandle> LoadProgram(
      int32_t core_id, const CompiledProgramHandle* handle,
      absl::Span<Event* const> wait_for) override {
    auto loaded = std::make_shared<FakeLoaded>();
    loaded->core = core_id;
    auto* compiled = dynamic_cast<const FakeCompiledHandle*>(handle);
    if (compiled == nullptr || compiled->owner != this) {
      return std::make_unique<FakeLoadedHandle>(
          this, loaded, s_->Failed(Foreign("compiled program")));
    }
    if (!s_->local_cores.contains(core_id)) {
      return std::make_unique<FakeLoadedHandle>(this, loaded,
                                                s_->Failed(NoCore(core_id)));
    }
    loaded->program = compiled->program;
    auto ready = s_->Issue("LoadProgram", [s = s_, loaded]() {
      if (!loaded->program->ok) {
        return absl::FailedPreconditionError("fake: program not compiled");
      }
      loaded->loaded = true;
      absl::MutexLock lock(&s->mu);
      ++s->live_loaded;
      return absl::OkStatus();
    });
    return std::make_unique<FakeLoadedHandle>(this, loaded, ready);
  }

  std::shared_ptr<Event> UnloadProgram(
      std::unique_ptr<LoadedProgramHandle> handle,
      absl::Span<Event* const> wait_for) override {
    auto* loaded = dynamic_cast<FakeLoadedHandle*>(handle.get());
    if (loaded == nullptr || loaded->owner != this) {
      return s_->Failed(Foreign("loaded program"));
    }
    return s_->Issue("UnloadProgram", [s = s_, l = loaded->loaded]() {
      if (!l->loaded) {
        return absl::FailedPreconditionError("fake: program not loaded");
      }
      l->loaded = false;
      absl::MutexLock lock(&s->mu);
      --s->live_loaded;
      return absl::OkStatus();
    });
  }

  std::shared_ptr<Event> ExecuteProgram(
      LoadedProgramHandle* program, absl::Span<BufferHandle* const> inputs,
      absl::Span<BufferHandle* const> outputs,
      const xla::DeviceAssignmentProto& device_assignment,
      absl::Span<Event* const> wait_for) override {
    auto* loaded = dynamic_cast<FakeLoadedHandle*>(program);
    if (loaded == nullptr || loaded->owner != this) {
      return s_->Failed(Foreign("loaded program"));
    }
    std::vector<std::shared_ptr<FakeBuffer>> ins, outs;
    for (BufferHandle* input : inputs) {
      auto b = Check(input);
      if (!b.ok()) return s_->Failed(b.status());
      ins.push_back(*b);
    }
    for (BufferHandle* output : outputs) {
      auto b = Check(output);
      if (!b.ok()) return s_->Failed(b.status());
      outs.push_back(*b);
    }
    return s_->Issue("ExecuteProgram", [s = s_, l = loaded->loaded, ins, outs,
                                        device_assignment]() {
      if (!l->loaded) {
        return absl::FailedPreconditionError("fake: program not loaded");
      }
      {
        absl::MutexLock lock(&s->mu);
        s->assignments[l->core] = device_assignment;
      }
      if (l->program->module == "fail_execute") {
        return absl::InternalError("fake: the program failed");
      }
      if (!ins.empty() && !outs.empty()) {
        const size_t n = std::min(ins[0]->data.size(), outs[0]->data.size());
        for (size_t i = 0; i < n; ++i) {
          outs[0]->data[i] = static_cast<uint8_t>(ins[0]->data[i] + 1);
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  absl::Status Foreign(const char* what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("fake ", s_->options.name, ": the ", what,
                     " is null or belongs to another driver"));
  }
  absl::Status NoCore(int32_t core) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "fake ", s_->options.name, ": core ", core, " is not served here"));
  }
  absl::Status CheckWaitFor(absl::Span<Event* const> wait_for) const {
    for (Event* event : wait_for) {
      auto status = event->AwaitWithTimeout(absl::ZeroDuration());
      if (!status.has_value()) {
        return absl::UnimplementedError("fake: wait_for must be complete");
      }
      if (!status->ok()) return *status;
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::shared_ptr<FakeBuffer>> Check(
      const BufferHandle* handle) const {
    auto* fake = dynamic_cast<const FakeBufferHandle*>(handle);
    if (fake == nullptr || fake->owner != this) return Foreign("buffer");
    return fake->buffer;
  }

  std::unique_ptr<BufferHandle> NewBuffer(int32_t core, int64_t bytes,
                                          std::optional<xla::ShapeProto> shape,
                                          absl::Span<Event* const> wait_for,
                                          const char* kind = "Allocate") {
    auto buffer = std::make_shared<FakeBuffer>();
    buffer->core = core;
    buffer->bytes = bytes;
    std::shared_ptr<FakeEvent> ready;
    if (!s_->local_cores.contains(core)) {
      ready = s_->Failed(NoCore(core));
    } else if (auto w = CheckWaitFor(wait_for); !w.ok()) {
      ready = s_->Failed(w);
    } else {
      ready = s_->Issue(kind, [s = s_, buffer]() {
        absl::MutexLock lock(&s->mu);
        int64_t& in_use = s->hbm_in_use[buffer->core];
        if (in_use + buffer->bytes > s->options.hbm_bytes_per_core) {
          return absl::ResourceExhaustedError(
              absl::StrCat("fake ", s->options.name, ": requested ",
                           buffer->bytes, " bytes, in use ", in_use,
                           ", capacity ", s->options.hbm_bytes_per_core));
        }
        in_use += buffer->bytes;
        buffer->data.assign(buffer->bytes, 0);
        buffer->allocated = true;
        ++s->live_buffers;
        return absl::OkStatus();
      });
    }
    return std::make_unique<FakeBufferHandle>(this, buffer, ready,
                                              std::move(shape));
  }

  const std::shared_ptr<FakeWorker> worker_;
  FakeWorker::State* const s_;
};

}  // namespace

FakeWorker::FakeWorker(FakeWorkerOptions options)
    : state_(std::make_unique<State>()) {
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
  return std::make_unique<FakeDriver>(shared_from_this());
}

void FakeWorker::Hold() {
  absl::MutexLock lock(&state_->mu);
  state_->holding = true;
}

void FakeWorker::Release() {
  while (true) {
    State::Queued q;
    {
      absl::MutexLock lock(&state_->mu);
      if (state_->queue.empty()) {
        state_->holding = false;
        return;
      }
      q = std::move(state_->queue.front());
      state_->queue.pop_front();
    }
    q.event->Complete(q.effect());
  }
}

void FakeWorker::Disappear() {
  std::deque<State::Queued> queue;
  {
    absl::MutexLock lock(&state_->mu);
    state_->gone = true;
    queue.swap(state_->queue);
  }
  for (auto& q : queue) q.event->Complete(state_->Lost());
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
  absl::MutexLock lock(&state_->mu);
  auto enough = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu) {
    return static_cast<int>(state_->queue.size()) >= count;
  };
  return state_->mu.AwaitWithTimeout(absl::Condition(&enough), timeout);
}
int64_t FakeWorker::live_buffers() {
  absl::MutexLock lock(&state_->mu);
  return state_->live_buffers;
}
int64_t FakeWorker::live_loaded_programs() {
  absl::MutexLock lock(&state_->mu);
  return state_->live_loaded;
}
int64_t FakeWorker::drivers_open() {
  absl::MutexLock lock(&state_->mu);
  return state_->drivers_open;
}
int64_t FakeWorker::resets() {
  absl::MutexLock lock(&state_->mu);
  return state_->resets;
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

std::string FakeCluster::address() const {
  std::string address = kPodDriverPrefix;
  for (size_t i = 0; i < workers_.size(); ++i) {
    absl::StrAppend(&address, i == 0 ? "" : ",", "fake", i);
  }
  return address;
}

PodDriverOptions FakeCluster::pod_options() const {
  PodDriverOptions options;
  options.shutdown_timeout = absl::Seconds(5);
  options.open_worker =
      [workers = workers_](const tpu_driver::TpuDriverConfig& config)
      -> absl::StatusOr<std::unique_ptr<TpuDriver>> {
    for (size_t i = 0; i < workers.size(); ++i) {
      if (config.worker() == absl::StrCat("grpc://fake", i)) {
        return workers[i]->NewDriver();
      }
    }
    return absl::UnavailableError(
        absl::StrCat("no fake worker at ", config.worker()));
  };
  return options;
}

xla::HloProto FakeProgram(const std::string& name, int64_t bytes) {
  xla::HloProto proto;
  proto.mutable_hlo_module()->set_name(name);
  xla::ProgramShapeProto* shape =
      proto.mutable_hlo_module()->mutable_host_program_shape();
  xla::ShapeProto array;
  array.set_element_type(xla::U8);
  array.add_dimensions(bytes);
  *shape->add_parameters() = array;
  *shape->mutable_result() = array;
  return proto;
}

}  // namespace testing
}  // namespace tpu::driver
