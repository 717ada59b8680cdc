#include "driver/pod/pod_driver.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "driver/driver_registry.h"

namespace tpu::driver {
namespace {

absl::Status HandleDoesNotExist(int64_t id) {
  return absl::InvalidArgumentError(
      absl::StrCat("Handle ", id, " does not exist."));
}

std::optional<xla::ShapeProto> TupleShape(
    absl::Span<BufferHandle* const> children) {
  xla::ShapeProto shape;
  shape.set_element_type(xla::TUPLE);
  for (BufferHandle* child : children) {
    std::optional<xla::ShapeProto> child_shape = child->shape();
    if (!child_shape.has_value()) return std::nullopt;
    *shape.add_tuple_shapes() = *std::move(child_shape);
  }
  return shape;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParsePodAddress(
    absl::string_view address) {
  absl::string_view rest = address;
  if (!absl::ConsumePrefix(&rest, kPodDriverPrefix)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", address, "' is not a ", kPodDriverPrefix,
                     " address (", kPodDriverPrefix, "host1:port1,...)."));
  }
  if (absl::StripAsciiWhitespace(rest).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", address, "' names no workers: give their addresses as ",
        kPodDriverPrefix, "host1:port1,host2:port2."));
  }
  std::vector<std::string> workers;
  int index = 0;
  for (absl::string_view entry : absl::StrSplit(rest, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Worker ", index, " of '", address, "' is empty (stray comma?)."));
    }
    workers.push_back(absl::StrContains(entry, "://")
                          ? std::string(entry)
                          : absl::StrCat("grpc://", entry));
    ++index;
  }
  return workers;
}

absl::StatusOr<std::unique_ptr<PodDriver>> PodDriver::Open(
    const tpu_driver::TpuDriverConfig& config, PodDriverOptions options) {
  absl::StatusOr<std::vector<std::string>> addresses =
      ParsePodAddress(config.worker());
  if (!addresses.ok()) return addresses.status();
  WorkerDriverFactory open = options.open_worker;
  if (!open) {
    open = [](const tpu_driver::TpuDriverConfig& worker_config) {
      return DriverRegistry::Open(worker_config);
    };
  }
  std::vector<std::string> names;
  std::vector<std::unique_ptr<TpuDriver>> workers;
  std::vector<tpu_driver::SystemInfo> infos;
  for (size_t i = 0; i < addresses->size(); ++i) {
    names.push_back(absl::StrCat("worker ", i, " (", (*addresses)[i], ")"));
    tpu_driver::TpuDriverConfig worker_config = config;
    worker_config.set_worker((*addresses)[i]);
    absl::StatusOr<std::unique_ptr<TpuDriver>> worker = open(worker_config);
    if (!worker.ok()) {
      return absl::Status(worker.status().code(),
                          absl::StrCat("Could not open ", names.back(), ": ",
                                       worker.status().message()));
    }
    absl::StatusOr<tpu_driver::SystemInfo> info = (*worker)->QuerySystemInfo();
    if (!info.ok()) {
      return absl::Status(info.status().code(),
                          absl::StrCat("Could not query ", names.back(), ": ",
                                       info.status().message()));
    }
    workers.push_back(*std::move(worker));
    infos.push_back(*std::move(info));
  }
  absl::StatusOr<PodTopology> topology = MergeSystemInfo(infos, names);
  if (!topology.ok()) return topology.status();
  return std::unique_ptr<PodDriver>(
      new PodDriver(std::move(options), std::move(names), std::move(workers),
                    *std::move(topology)));
}

PodDriver::PodDriver(PodDriverOptions options, std::vector<std::string> names,
                     std::vector<std::unique_ptr<TpuDriver>> workers,
                     PodTopology topology)
    : options_(std::move(options)),
      names_(std::move(names)),
      workers_(std::move(workers)),
      topology_(std::move(topology)),
      bounce_bytes_(std::make_shared<std::atomic<int64_t>>(0)),
      lost_(workers_.size()) {}

PodDriver::~PodDriver() {
  scheduler_.Shutdown(options_.shutdown_timeout);
  ReleaseWorkerResources(absl::Now() + options_.shutdown_timeout);
  std::vector<std::weak_ptr<PodCompiledProgram>> compiled;
  {
    absl::MutexLock lock(&mu_);
    compiled.swap(compiled_);
  }
  for (auto& weak : compiled) {
    std::shared_ptr<PodCompiledProgram> program = weak.lock();
    if (program == nullptr) continue;
    std::vector<std::unique_ptr<CompiledProgramHandle>> handles;
    {
      absl::MutexLock lock(&program->mu);
      // Keep the shape of what compiled fine, for handles that outlive us.
      bool all_ready = !program->per_worker.empty();
      for (auto& handle : program->per_worker) {
        if (handle != nullptr &&
            !handle->OnReady()->AwaitWithTimeout(absl::ZeroDuration())) {
          all_ready = false;
        }
      }
      if (all_ready) ResolveProgramShape(*program);
      handles.swap(program->per_worker);
      program->worker_status.assign(workers_.size(), PodDriverDestroyed());
    }
  }
  // Closing the workers last: whatever they still report goes to a live
  // scheduler, which ignores it.
  workers_.clear();
}

absl::StatusOr<tpu_driver::SystemInfo> PodDriver::QuerySystemInfo() {
  // The topology is fixed; HBM and CPU figures are live. A worker that
  // cannot answer keeps its last figures (the pod stays describable when
  // one worker is gone).
  tpu_driver::SystemInfo pod = topology_.system_info;
  std::vector<absl::flat_hash_map<int32_t, const tpu_driver::TpuCoreInfo*>>
      live(workers_.size());
  std::vector<tpu_driver::SystemInfo> infos(workers_.size());
  bool first_cpu = true;
  for (size_t w = 0; w < workers_.size(); ++w) {
    if (!WorkerUnusable(static_cast<int>(w)).ok()) continue;
    absl::StatusOr<tpu_driver::SystemInfo> info =
        workers_[w]->QuerySystemInfo();
    if (!info.ok()) {
      // Only for its side effect: a lost worker is marked unusable.
      FromWorker(static_cast<int>(w), info.status()).IgnoreError();
      continue;
    }
    infos[w] = *std::move(info);
    for (const auto& chip : infos[w].tpu_chip()) {
      for (const auto& core : chip.core()) live[w][core.id()] = &core;
    }
    const tpu_driver::CpuInfo& cpu = infos[w].cpu();
    tpu_driver::CpuInfo* out = pod.mutable_cpu();
    if (first_cpu) {
      *out = cpu;
      first_cpu = false;
    } else {
      out->set_num_cpu_cores(out->num_cpu_cores() + cpu.num_cpu_cores());
      out->set_cpu_load_average_1min(
          std::max(out->cpu_load_average_1min(), cpu.cpu_load_average_1min()));
      out->set_ram_bytes_total(out->ram_bytes_total() + cpu.ram_bytes_total());
      out->set_ram_bytes_available(out->ram_bytes_available() +
                                   cpu.ram_bytes_available());
    }
  }
  auto refresh = [&](tpu_driver::TpuCoreInfo& core) {
    const PodCoreLocation& location = topology_.cores[core.id()];
    auto it = live[location.worker].find(location.worker_core_id);
    if (it == live[location.worker].end()) return;
    core.set_hbm_bytes_available(it->second->hbm_bytes_available());
    core.set_hbm_bytes_allocatable(it->second->hbm_bytes_allocatable());
  };
  for (auto& chip : *pod.mutable_tpu_chip()) {
    for (auto& core : *chip.mutable_core()) refresh(core);
  }
  for (auto& core : *pod.mutable_local_core()) refresh(core);
  return pod;
}

absl::StatusOr<std::string> PodDriver::DescribeWaits() {
  std::string out;
  absl::Status first_error;
  for (size_t w = 0; w < workers_.size(); ++w) {
    absl::StatusOr<std::string> report = workers_[w]->DescribeWaits();
    if (!report.ok()) {
      if (first_error.ok()) first_error = report.status();
      continue;
    }
    absl::StrAppend(&out, names_[w], ":\n", *report);
  }
  if (out.empty()) return first_error;
  return out;
}

absl::Status PodDriver::Reset() {
  absl::Status first;
  for (size_t w = 0; w < workers_.size(); ++w) {
    absl::Status status = FromWorker(static_cast<int>(w), workers_[w]->Reset());
    if (first.ok()) first = status;
  }
  {
    absl::MutexLock lock(&lost_mu_);
    reset_ = true;
  }
  // The workers dropped everything: forget our handles to it.
  absl::flat_hash_map<int64_t, Buffer> buffers;
  absl::flat_hash_map<int64_t, Loaded> loaded;
  {
    absl::MutexLock lock(&mu_);
    buffers.swap(buffers_);
    loaded.swap(loaded_);
  }
  return first;
}

// ---------------------------------------------------------------------------
// Up-front checks and helpers.

absl::Status PodDriver::CheckCore(int32_t core_id) const {
  const int64_t cores = static_cast<int64_t>(topology_.cores.size());
  if (core_id < 0 || core_id >= cores) {
    return absl::InvalidArgumentError(
        absl::StrCat("Core ", core_id, " does not exist: the pod has ", cores,
                     " cores (0-", cores - 1, ")."));
  }
  return absl::OkStatus();
}

absl::StatusOr<const PodBufferHandle*> PodDriver::AsPodBuffer(
    const BufferHandle* handle, const char* what) const {
  if (handle == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is a null buffer handle."));
  }
  auto* pod = dynamic_cast<const PodBufferHandle*>(handle);
  if (pod == nullptr || pod->owner() != this) {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        " is not a buffer of this grpc+pod:// driver (a handle from "
        "another driver?)."));
  }
  return pod;
}

absl::StatusOr<std::vector<std::shared_ptr<PodOp>>> PodDriver::Dependencies(
    absl::Span<Event* const> wait_for) {
  std::vector<std::shared_ptr<PodOp>> deps;
  deps.reserve(wait_for.size() + 1);
  for (size_t i = 0; i < wait_for.size(); ++i) {
    Event* event = wait_for[i];
    if (event == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("wait_for[", i, "] is a null event."));
    }
    auto* pod = dynamic_cast<PodEvent*>(event);
    if (pod != nullptr && pod->owner() == this) {
      deps.push_back(pod->op());
    } else {
      deps.push_back(scheduler_.Wrap(event));
    }
  }
  return deps;
}

std::unique_ptr<BufferHandle> PodDriver::FailedBuffer(const char* kind,
                                                      absl::Status status) {
  return std::make_unique<PodBufferHandle>(
      this, scheduler_.Failed(kind, std::move(status)), -1, 0, std::nullopt);
}

std::shared_ptr<Event> PodDriver::FailedEvent(const char* kind,
                                              absl::Status status) {
  return MakeEvent(scheduler_.Failed(kind, std::move(status)));
}

std::shared_ptr<Event> PodDriver::MakeEvent(std::shared_ptr<PodOp> op) {
  return std::make_shared<PodEvent>(this, std::move(op));
}

absl::Status PodDriver::WorkerUnusable(int w) {
  absl::MutexLock lock(&lost_mu_);
  if (reset_) {
    return absl::FailedPreconditionError(
        "The grpc+pod:// driver was reset: destroy it and open a new one.");
  }
  return lost_[w];
}

absl::Status PodDriver::FromWorker(int w, const absl::Status& status) {
  if (status.ok()) return status;
  if (absl::IsUnavailable(status)) {
    absl::MutexLock lock(&lost_mu_);
    if (lost_[w].ok()) {
      lost_[w] = absl::UnavailableError(
          absl::StrCat(names_[w], " is unavailable: ", status.message()));
      std::fprintf(stderr, "grpc+pod: %s is unavailable: %s\n",
                   names_[w].c_str(), std::string(status.message()).c_str());
    }
  }
  return absl::Status(status.code(),
                      absl::StrCat(names_[w], ": ", status.message()));
}

void PodDriver::CompleteWith(int w, const std::shared_ptr<Event>& event,
                             PodScheduler::Done done) {
  event->AddCallback([this, w, done = std::move(done)](absl::Status status) {
    done(FromWorker(w, status));
  });
}

int64_t PodDriver::WorkerResourcesForTesting() {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(buffers_.size() + loaded_.size());
}

int PodDriver::WorkerOf(int32_t core_id) const {
  return core_id < 0 ? -1 : topology_.cores[core_id].worker;
}

absl::StatusOr<PodLoadedProgramHandle*> PodDriver::AsPodLoaded(
    LoadedProgramHandle* handle, const char* verb) const {
  auto* loaded = dynamic_cast<PodLoadedProgramHandle*>(handle);
  if (loaded == nullptr || loaded->owner() != this) {
    return absl::InvalidArgumentError(
        absl::StrCat("The program to ", verb,
                     " is not a loaded program of this grpc+pod:// driver."));
  }
  return loaded;
}

absl::Status PodDriver::CollectBuffers(
    absl::Span<BufferHandle* const> buffers, const char* what, int worker,
    absl::string_view elsewhere, std::vector<std::shared_ptr<PodOp>>* deps,
    std::vector<int64_t>* ids) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    const std::string name = absl::StrCat(what, " ", i);
    absl::StatusOr<const PodBufferHandle*> buffer =
        AsPodBuffer(buffers[i], name.c_str());
    if (!buffer.ok()) return buffer.status();
    const int buffer_worker = WorkerOf((*buffer)->core_id());
    if (buffer_worker >= 0 && buffer_worker != worker) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, " (buffer ", (*buffer)->id(), ") is on core ",
          (*buffer)->core_id(), " of ", names_[buffer_worker], elsewhere));
    }
    deps->push_back((*buffer)->op());
    ids->push_back((*buffer)->id());
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Forwarding to the workers.

std::shared_ptr<PodOp> PodDriver::Forward(
    const char* kind, std::vector<std::shared_ptr<PodOp>> deps, WorkerCall call,
    IssueFn issue) {
  return scheduler_.Schedule(
      kind, deps,
      [this, call = std::move(call), issue = std::move(issue)](
          int64_t id, PodScheduler::Done done) {
        const int w = call.worker;
        absl::Status unusable = WorkerUnusable(w);
        if (!unusable.ok()) return done(unusable);
        absl::StatusOr<std::shared_ptr<Event>> event;
        {
          // Held from the lookup to the worker call: a concurrent release
          // cannot free the handles in between.
          absl::MutexLock lock(&mu_);
          event = ResolveAndIssue(id, call, issue);
        }
        if (!event.ok()) return done(event.status());
        CompleteWith(w, *event, std::move(done));
      });
}

absl::StatusOr<std::shared_ptr<Event>> PodDriver::ResolveAndIssue(
    int64_t op_id, const WorkerCall& call, const IssueFn& issue) {
  LoadedProgramHandle* program = nullptr;
  if (call.program >= 0) {
    auto it = loaded_.find(call.program);
    if (it == loaded_.end()) return HandleDoesNotExist(call.program);
    program = it->second.handle.get();
  }
  std::vector<BufferHandle*> buffers;
  buffers.reserve(call.buffers.size());
  for (int64_t id : call.buffers) {
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return HandleDoesNotExist(id);
    buffers.push_back(it->second.handle.get());
  }
  return issue(op_id, workers_[call.worker].get(), program, buffers);
}

std::shared_ptr<Event> PodDriver::ForwardOnBuffer(
    const char* kind, const PodBufferHandle& buffer,
    absl::Span<Event* const> wait_for,
    std::function<std::shared_ptr<Event>(TpuDriver*, BufferHandle*)> issue) {
  auto deps = Dependencies(wait_for);
  if (!deps.ok()) return FailedEvent(kind, deps.status());
  deps->push_back(buffer.op());
  // A buffer whose allocation failed up front has no worker; the operation
  // fails on that dependency before a worker is chosen, so any one will do.
  const int w = std::max(WorkerOf(buffer.core_id()), 0);
  return MakeEvent(Forward(kind, *std::move(deps),
                           WorkerCall{w, -1, {buffer.id()}},
                           [issue = std::move(issue)](
                               int64_t, TpuDriver* worker, LoadedProgramHandle*,
                               absl::Span<BufferHandle* const> handles)
                               -> absl::StatusOr<std::shared_ptr<Event>> {
                             return issue(worker, handles[0]);
                           }));
}

template <typename Entry, typename Handle>
std::shared_ptr<Event> PodDriver::ScheduleRelease(
    const char* kind, absl::Span<Event* const> wait_for,
    const std::shared_ptr<PodOp>& handle_op,
    absl::flat_hash_map<int64_t, Entry> PodDriver::*table,
    std::shared_ptr<Event> (TpuDriver::*release)(std::unique_ptr<Handle>,
                                                 absl::Span<Event* const>)) {
  auto deps = Dependencies(wait_for);
  if (!deps.ok()) return FailedEvent(kind, deps.status());
  deps->push_back(handle_op);
  const int64_t id = handle_op->id();
  // Takes the worker handle out of the table and releases it; returns the
  // worker's event, or null if there was nothing to release.
  auto take = [this, id, table,
               release](int* worker) -> std::shared_ptr<Event> {
    Entry entry;
    {
      absl::MutexLock lock(&mu_);
      absl::flat_hash_map<int64_t, Entry>& entries = this->*table;
      auto it = entries.find(id);
      if (it == entries.end()) return nullptr;
      entry = std::move(it->second);
      entries.erase(it);
    }
    *worker = entry.worker;
    if (!WorkerUnusable(entry.worker).ok()) return nullptr;
    return (workers_[entry.worker].get()->*release)(std::move(entry.handle),
                                                    {});
  };
  return MakeEvent(scheduler_.Schedule(
      kind, *deps,
      [this, take, id](int64_t, PodScheduler::Done done) {
        int worker = -1;
        std::shared_ptr<Event> event = take(&worker);
        if (event != nullptr) return CompleteWith(worker, event, done);
        if (worker >= 0) return done(WorkerUnusable(worker));
        done(HandleDoesNotExist(id));
      },
      [take] {
        int worker = -1;
        take(&worker);
      }));
}

// ---------------------------------------------------------------------------
// Buffers.

std::unique_ptr<BufferHandle> PodDriver::ScheduleAllocation(
    const char* kind, int32_t core_id, int64_t bytes,
    std::optional<xla::ShapeProto> shape, bool is_tuple,
    std::vector<std::shared_ptr<PodOp>> deps, std::vector<int64_t> children,
    AllocateFn allocate) {
  const PodCoreLocation location = topology_.cores[core_id];
  std::shared_ptr<PodOp> op = Forward(
      kind, std::move(deps),
      WorkerCall{location.worker, -1, std::move(children)},
      // Runs with mu_ held.
      [this, location, is_tuple, allocate = std::move(allocate)](
          int64_t id, TpuDriver* worker, LoadedProgramHandle*,
          absl::Span<BufferHandle* const> children)
          -> absl::StatusOr<std::shared_ptr<Event>> {
        std::unique_ptr<BufferHandle> handle =
            allocate(worker, location.worker_core_id, children);
        std::shared_ptr<Event> ready = handle->OnReady();
        buffers_[id] = Buffer{location.worker, is_tuple, std::move(handle)};
        return ready;
      });
  return std::make_unique<PodBufferHandle>(this, std::move(op), core_id, bytes,
                                           std::move(shape));
}

std::unique_ptr<BufferHandle> PodDriver::Allocate(
    int32_t core_id, tpu_driver::MemoryRegion region, int64_t num_bytes,
    absl::Span<Event* const> wait_for) {
  absl::Status status = CheckCore(core_id);
  if (status.ok() && num_bytes < 0) {
    status = absl::InvalidArgumentError(absl::StrCat(
        "Cannot allocate ", num_bytes, " bytes: the size is negative."));
  }
  if (!status.ok()) return FailedBuffer("Allocate", status);
  auto deps = Dependencies(wait_for);
  if (!deps.ok()) return FailedBuffer("Allocate", deps.status());
  return ScheduleAllocation(
      "Allocate", core_id, num_bytes, std::nullopt, false, *std::move(deps), {},
      [region, num_bytes](TpuDriver* worker, int32_t core,
                          absl::Span<BufferHandle* const>) {
        return worker->Allocate(core, region, num_bytes, {});
      });
}

std::unique_ptr<BufferHandle> PodDriver::Allocate(
    int32_t core_id, tpu_driver::MemoryRegion region,
    const xla::ShapeProto& shape, absl::Span<Event* const> wait_for) {
  absl::Status status = CheckCore(core_id);
  if (!status.ok()) return FailedBuffer("Allocate", status);
  auto deps = Dependencies(wait_for);
  if (!deps.ok()) return FailedBuffer("Allocate", deps.status());
  return ScheduleAllocation("Allocate", core_id, ComputeBytesFromShape(shape),
                            shape, shape.element_type() == xla::TUPLE,
                            *std::move(deps), {},
                            [region, shape](TpuDriver* worker, int32_t core,
                                            absl::Span<BufferHandle* const>) {
                              return worker->Allocate(core, region, shape, {});
                            });
}

std::unique_ptr<BufferHandle> PodDriver::AllocateTuple(
    int32_t core_id, tpu_driver::MemoryRegion region,
    absl::Span<BufferHandle* const> children,
    absl::Span<Event* const> wait_for) {
  const char* kind = "AllocateTuple";
  absl::Status status = CheckCore(core_id);
  if (!status.ok()) return FailedBuffer(kind, status);
  auto deps = Dependencies(wait_for);
  if (!deps.ok()) return FailedBuffer(kind, deps.status());
  const int worker = WorkerOf(core_id);
  std::vector<int64_t> child_ids;
  status = CollectBuffers(
      children, "Tuple child", worker,
      absl::StrCat(", but the tuple is allocated on core ", core_id, " of ",
                   names_[worker], ": a tuple's children must be on its core."),
      &*deps, &child_ids);
  if (!status.ok()) return FailedBuffer(kind, status);
  return ScheduleAllocation(
      kind, core_id, 8 * static_cast<int64_t>(children.size()),
      TupleShape(children), true, *std::move(deps), std::move(child_ids),
      [region](TpuDriver* worker, int32_t core,
               absl::Span<BufferHandle* const> handles) {
        return worker->AllocateTuple(core, region, handles, {});
      });
}

std::shared_ptr<Event> PodDriver::Deallocate(
    std::unique_ptr<BufferHandle> handle, absl::Span<Event* const> wait_for) {
  auto buffer = AsPodBuffer(handle.get(), "The buffer to deallocate");
  if (!buffer.ok()) return FailedEvent("Deallocate", buffer.status());
  return ScheduleRelease("Deallocate", wait_for, (*buffer)->op(),
                         &PodDriver::buffers_, &TpuDriver::Deallocate);
}

std::shared_ptr<Event> PodDriver::TransferToDevice(
    const void* src, BufferHandle* dst, absl::Span<Event* const> wait_for) {
  const char* kind = "TransferToDevice";
  auto buffer = AsPodBuffer(dst, "The destination");
  if (!buffer.ok()) return FailedEvent(kind, buffer.status());
  if (src == nullptr && (*buffer)->bytes() > 0) {
    return FailedEvent(kind, absl::InvalidArgumentError(
                                 "The source of TransferToDevice is null."));
  }
  return ForwardOnBuffer(kind, **buffer, wait_for,
                         [src](TpuDriver* worker, BufferHandle* handle) {
                           return worker->TransferToDevice(src, handle, {});
                         });
}

std::shared_ptr<Event> PodDriver::TransferFromDevice(
    const BufferHandle* src, void* dst, absl::Span<Event* const> wait_for) {
  const char* kind = "TransferFromDevice";
  auto buffer = AsPodBuffer(src, "The source");
  if (!buffer.ok()) return FailedEvent(kind, buffer.status());
  if (dst == nullptr && (*buffer)->bytes() > 0) {
    return FailedEvent(kind,
                       absl::InvalidArgumentError(
                           "The destination of TransferFromDevice is null."));
  }
  return ForwardOnBuffer(kind, **buffer, wait_for,
                         [dst](TpuDriver* worker, BufferHandle* handle) {
                           return worker->TransferFromDevice(handle, dst, {});
                         });
}

std::shared_ptr<Event> PodDriver::TransferFromDeviceToDevice(
    const BufferHandle* src, BufferHandle* dst,
    absl::Span<Event* const> wait_for) {
  const char* kind = "TransferFromDeviceToDevice";
  auto from = AsPodBuffer(src, "The source");
  if (!from.ok()) return FailedEvent(kind, from.status());
  auto to = AsPodBuffer(dst, "The destination");
  if (!to.ok()) return FailedEvent(kind, to.status());
  auto deps = Dependencies(wait_for);
  if (!deps.ok()) return FailedEvent(kind, deps.status());
  const int64_t src_id = (*from)->id();
  const int64_t dst_id = (*to)->id();
  // A buffer whose allocation failed up front has no core. Its operation
  // failed, so the copy only has to report that: any worker will do.
  int src_worker = WorkerOf((*from)->core_id());
  int dst_worker = WorkerOf((*to)->core_id());
  if (src_worker < 0 || dst_worker < 0) {
    src_worker = dst_worker = std::max({src_worker, dst_worker, 0});
  }

  if (src_worker == dst_worker) {
    deps->push_back((*from)->op());
    deps->push_back((*to)->op());
    return MakeEvent(Forward(
        kind, *std::move(deps), WorkerCall{src_worker, -1, {src_id, dst_id}},
        [](int64_t, TpuDriver* worker, LoadedProgramHandle*,
           absl::Span<BufferHandle* const> buffers)
            -> absl::StatusOr<std::shared_ptr<Event>> {
          return worker->TransferFromDeviceToDevice(buffers[0], buffers[1], {});
        }));
  }

  // Across workers: out to host memory on the source's worker, then in on
  // the destination's. The host buffer is shared by both steps and by the
  // worker events using it, so it is freed when the last of them is done,
  // whichever way each one ends.
  const int64_t bytes = (*from)->bytes();
  if (bytes != (*to)->bytes()) {
    return FailedEvent(
        kind,
        absl::InvalidArgumentError(absl::StrCat(
            "Cannot copy buffer ", src_id, " (", bytes, " bytes) to buffer ",
            dst_id, " (", (*to)->bytes(), " bytes): the sizes differ.")));
  }
  std::shared_ptr<std::atomic<int64_t>> counter = bounce_bytes_;
  counter->fetch_add(bytes);
  std::shared_ptr<char> host(new char[bytes > 0 ? bytes : 1],
                             [counter, bytes](char* p) {
                               delete[] p;
                               counter->fetch_sub(bytes);
                             });
  deps->push_back((*from)->op());
  std::shared_ptr<PodOp> out =
      Forward("TransferFromDeviceToDevice (out of the source worker)",
              *std::move(deps), WorkerCall{src_worker, -1, {src_id}},
              [host](int64_t, TpuDriver* worker, LoadedProgramHandle*,
                     absl::Span<BufferHandle* const> buffers)
                  -> absl::StatusOr<std::shared_ptr<Event>> {
                std::shared_ptr<Event> event =
                    worker->TransferFromDevice(buffers[0], host.get(), {});
                event->AddCallback([host](absl::Status) {});
                return event;
              });
  return MakeEvent(
      Forward(kind, {out, (*to)->op()}, WorkerCall{dst_worker, -1, {dst_id}},
              [host](int64_t, TpuDriver* worker, LoadedProgramHandle*,
                     absl::Span<BufferHandle* const> buffers)
                  -> absl::StatusOr<std::shared_ptr<Event>> {
                std::shared_ptr<Event> event =
                    worker->TransferToDevice(host.get(), buffers[0], {});
                event->AddCallback([host](absl::Status) {});
                return event;
              }));
}

// Unloading releases a pod handle as Deallocate does.
std::shared_ptr<Event> PodDriver::UnloadProgram(
    std::unique_ptr<LoadedProgramHandle> handle,
    absl::Span<Event* const> wait_for) {
  auto loaded = AsPodLoaded(handle.get(), "unload");
  if (!loaded.ok()) return FailedEvent("UnloadProgram", loaded.status());
  return ScheduleRelease("UnloadProgram", wait_for, (*loaded)->op(),
                         &PodDriver::loaded_, &TpuDriver::UnloadProgram);
}

// ---------------------------------------------------------------------------
// Teardown.

void PodDriver::ReleaseWorkerResources(absl::Time deadline) {
  absl::flat_hash_map<int64_t, Buffer> buffers;
  absl::flat_hash_map<int64_t, Loaded> loaded;
  {
    absl::MutexLock lock(&mu_);
    buffers.swap(buffers_);
    loaded.swap(loaded_);
  }
  auto await_all = [deadline](std::vector<std::shared_ptr<Event>>& events) {
    for (auto& event : events) {
      event->AwaitWithTimeout(
          std::max(deadline - absl::Now(), absl::ZeroDuration()));
    }
    events.clear();
  };
  std::vector<std::shared_ptr<Event>> events;
  for (auto& [id, entry] : loaded) {
    if (!WorkerUnusable(entry.worker).ok()) continue;
    events.push_back(
        workers_[entry.worker]->UnloadProgram(std::move(entry.handle), {}));
  }
  await_all(events);
  // Tuples first: their children must outlive them.
  for (bool tuples : {true, false}) {
    for (auto& [id, entry] : buffers) {
      if (entry.is_tuple != tuples || entry.handle == nullptr) continue;
      if (!WorkerUnusable(entry.worker).ok()) continue;
      events.push_back(
          workers_[entry.worker]->Deallocate(std::move(entry.handle), {}));
    }
    await_all(events);
  }
}

}  // namespace tpu::driver
