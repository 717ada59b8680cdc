#include "driver/stream_driver.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/wait_report_text.h"

namespace tpu::driver {

// An operation waiting on the client for events the worker cannot wait for
// (another driver's, or this driver's operations that are themselves held).
struct StreamDriver::HeldOp {
  absl::Mutex mu;
  // Null once released or cancelled by shutdown.
  StreamDriver* driver ABSL_GUARDED_BY(mu) = nullptr;
  StreamChannel* channel ABSL_GUARDED_BY(mu) = nullptr;
  OutgoingEntry entry ABSL_GUARDED_BY(mu);
  PendingOp op ABSL_GUARDED_BY(mu);
  int remaining ABSL_GUARDED_BY(mu) = 0;
  absl::Status failure ABSL_GUARDED_BY(mu);
};

namespace {

std::string OpName(const CompletionEvent& event) {
  return event.id().ToString();
}

absl::Status DependencyFailed(const CompletionEvent& op, const std::string& dep,
                              const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(OpName(op), " was not run: its dependency ",
                                   dep, " failed: ", status.ToString()));
}

std::string DescribeEvent(Event* event) {
  if (auto* ours = dynamic_cast<CompletionEvent*>(event)) {
    return ours->id().ToString();
  }
  return "(an event of another driver)";
}

}  // namespace

absl::StatusOr<std::unique_ptr<StreamDriver>> StreamDriver::Create(
    std::unique_ptr<Transport> transport, const StreamDriverOptions& options) {
  absl::StatusOr<tpu_driver::OpenResponse> opened =
      transport->Open(tpu_driver::OpenRequest(), options.open_timeout);
  if (!opened.ok()) return opened.status();
  if (opened->client_id() > EventId::kMaxClientId) {
    return absl::InternalError(absl::StrCat(
        "TPU worker ", transport->address(), " assigned client id ",
        opened->client_id(),
        ", which does not fit in the 20 bits event ids reserve for it"));
  }
  std::unique_ptr<StreamDriver> driver(
      new StreamDriver(std::move(transport), options, opened->client_id()));
  absl::Status started = driver->StartStreams();
  if (!started.ok()) return started;  // The destructor closes the session.
  return driver;
}

StreamDriver::StreamDriver(std::unique_ptr<Transport> transport,
                           const StreamDriverOptions& options,
                           uint32_t client_id)
    : transport_(std::move(transport)),
      options_(options),
      address_(transport_->address()),
      client_id_(client_id),
      serial_(NewDriverSerial()) {}

absl::Status StreamDriver::StartStreams() {
  absl::StatusOr<tpu_driver::SystemInfo> info = transport_->QuerySystemInfo();
  if (!info.ok()) return info.status();
  // local_core lists the cores this worker serves (a pod-slice host reports
  // the whole slice in tpu_chip); a worker that does not fill it serves all.
  std::vector<int32_t> ids;
  for (const auto& core : info->local_core()) ids.push_back(core.id());
  if (ids.empty()) {
    for (const auto& chip : info->tpu_chip()) {
      for (const auto& core : chip.core()) ids.push_back(core.id());
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "TPU worker ", address_, " reports no TPU cores in its SystemInfo"));
  }
  core_ids_ = ids;
  for (int32_t id : ids) {
    core_channels_[id] = std::make_unique<StreamChannel>(
        absl::StrCat("core ", id), address_, transport_.get());
  }
  // The reference client opens a host stream too; it carries nothing today.
  host_channel_ =
      std::make_unique<StreamChannel>("host", address_, transport_.get());
  compile_channel_ = core_channels_[ids.front()].get();
  return absl::OkStatus();
}

StreamDriver::~StreamDriver() {
  bool was_closed;
  {
    absl::MutexLock lock(&mu_);
    was_closed = closed_;
    closed_ = true;
    issuing_closed_.store(true, std::memory_order_release);
  }
  if (was_closed) return;
  ShutdownChannels(/*graceful=*/true, absl::StatusCode::kAborted,
                   absl::StrCat("the TPU driver for ", address_,
                                " was closed before it completed"));
  tpu_driver::CloseRequest close;
  close.set_client_id(client_id_);
  absl::Status closed = transport_->Close(close);
  if (!closed.ok()) {
    std::fprintf(stderr, "TPU driver for %s: Close failed: %s\n",
                 address_.c_str(), closed.ToString().c_str());
  }
}

void StreamDriver::ShutdownChannels(bool graceful, absl::StatusCode code,
                                    const std::string& reason) {
  absl::flat_hash_set<std::shared_ptr<HeldOp>> held;
  {
    absl::MutexLock lock(&mu_);
    held.swap(held_);
  }
  for (const auto& op : held) {
    std::shared_ptr<CompletionEvent> event;
    {
      absl::MutexLock lock(&op->mu);
      if (op->driver == nullptr) continue;  // Being released right now.
      op->driver = nullptr;
      event = op->op.event;
    }
    event->Complete(absl::Status(
        code, absl::StrCat(OpName(*event), " did not complete: ", reason)));
  }
  std::vector<StreamChannel*> channels;
  for (auto& [id, channel] : core_channels_) channels.push_back(channel.get());
  if (host_channel_ != nullptr) channels.push_back(host_channel_.get());
  if (graceful) {
    for (StreamChannel* channel : channels) channel->BeginClose();
    const absl::Time deadline = absl::Now() + options_.close_grace;
    for (StreamChannel* channel : channels) channel->WaitEnded(deadline);
  }
  for (StreamChannel* channel : channels) channel->Shutdown(code, reason);
}

absl::StatusOr<std::string> StreamDriver::DescribeWaits() {
  absl::StatusOr<tpu_emulator::WaitReport> report = transport_->GetWaitReport();
  if (!report.ok()) return report.status();
  return wire::FormatWaitReport(*report);
}

absl::StatusOr<tpu_driver::SystemInfo> StreamDriver::QuerySystemInfo() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the TPU driver for ", address_,
          " was reset; open a new driver to use the worker again"));
    }
  }
  return transport_->QuerySystemInfo();
}

absl::Status StreamDriver::Reset() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return absl::FailedPreconditionError(
          absl::StrCat("the TPU driver for ", address_, " was already reset"));
    }
  }
  absl::Status reset = transport_->Reset(tpu_driver::ResetRequest());
  if (!reset.ok()) {
    return absl::Status(
        reset.code(), absl::StrCat("Failed to reset the TPU worker ", address_,
                                   ": ", reset.message()));
  }
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    issuing_closed_.store(true, std::memory_order_release);
  }
  ShutdownChannels(/*graceful=*/false, absl::StatusCode::kAborted,
                   absl::StrCat("the TPU driver for ", address_, " was reset"));
  // As the reference client: Close with our (now forgotten) client id, and
  // report Close's status.
  tpu_driver::CloseRequest close;
  close.set_client_id(client_id_);
  return transport_->Close(close);
}

StreamChannel* StreamDriver::ChannelOrAny(int32_t core_id) {
  absl::Status ignored;
  StreamChannel* channel = ChannelFor(core_id, &ignored);
  return channel != nullptr ? channel : compile_channel_;
}

StreamChannel* StreamDriver::ChannelFor(int32_t core_id, absl::Status* error) {
  auto it = core_channels_.find(core_id);
  if (it != core_channels_.end()) return it->second.get();
  *error = absl::InvalidArgumentError(
      absl::StrCat("TPU core ", core_id, " does not exist on worker ", address_,
                   "; its cores are ", absl::StrJoin(core_ids_, ",")));
  return nullptr;
}

absl::Status StreamDriver::CheckInfo(const StreamHandleInfo& info,
                                     absl::string_view what) {
  if (info.driver_serial == serial_) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "Invalid ", what, " (created by ", info.event->id().ToString(),
      "): it belongs to another TPU driver (client id ",
      info.event->id().client_id, "; this driver is client id ", client_id_,
      " of ", address_,
      "). Did you restart the server or use a stale handle?"));
}

template <typename Ours, typename Handle>
absl::StatusOr<const Ours*> StreamDriver::CheckHandle(const Handle* handle,
                                                      absl::string_view what) {
  if (handle == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is null"));
  }
  auto* ours = dynamic_cast<const Ours*>(handle);
  if (ours == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Invalid ", what, ": not a handle of a grpc:// or local:// driver"));
  }
  absl::Status status = CheckInfo(ours->info(), what);
  if (!status.ok()) return status;
  return ours;
}

absl::StatusOr<const StreamBufferHandle*> StreamDriver::CheckBuffer(
    const BufferHandle* handle, absl::string_view what) {
  return CheckHandle<StreamBufferHandle>(handle, what);
}

absl::StatusOr<const StreamLoadedProgramHandle*> StreamDriver::CheckLoaded(
    const LoadedProgramHandle* handle) {
  return CheckHandle<StreamLoadedProgramHandle>(handle,
                                                "loaded program handle");
}

absl::StatusOr<const StreamCompiledProgramHandle*> StreamDriver::CheckCompiled(
    const CompiledProgramHandle* handle) {
  return CheckHandle<StreamCompiledProgramHandle>(handle,
                                                  "compiled program handle");
}

std::shared_ptr<CompletionEvent> StreamDriver::NewEvent() {
  const uint64_t op = next_operation_id_.fetch_add(1) + 1;
  return std::make_shared<CompletionEvent>(EventId{client_id_, op}, serial_);
}

std::shared_ptr<CompletionEvent> StreamDriver::Issue(
    StreamChannel* channel, OutgoingEntry&& entry, PendingOp op,
    absl::Span<Event* const> wait_for,
    absl::Span<const std::shared_ptr<CompletionEvent>> named) {
  std::shared_ptr<CompletionEvent> event = op.event;
  auto fail = [&](absl::Status status) {
    event->set_submitted();
    event->Complete(std::move(status));
    return event;
  };
  if (issuing_closed_.load(std::memory_order_acquire)) {
    return fail(absl::FailedPreconditionError(
        absl::StrCat(OpName(*event), " was issued after the TPU driver for ",
                     address_, " was reset; open a new driver")));
  }
  entry.entry.set_operation_id(event->id().AsInt());

  // Sort dependencies: known done (dropped, or fatal if failed), in flight on
  // the worker (sent as wait_for_id), or only known to the client (held).
  std::vector<Event*> client_waits;
  auto add_own = [&](CompletionEvent* dep) -> absl::Status {
    if (std::optional<absl::Status> done = dep->Peek()) {
      if (!done->ok()) return DependencyFailed(*event, OpName(*dep), *done);
      return absl::OkStatus();
    }
    if (!dep->submitted()) {
      client_waits.push_back(dep);
      return absl::OkStatus();
    }
    const int64_t id = static_cast<int64_t>(dep->id().AsInt());
    for (int64_t existing : entry.entry.wait_for_id()) {
      if (existing == id) return absl::OkStatus();
    }
    entry.entry.add_wait_for_id(id);
    return absl::OkStatus();
  };
  for (size_t i = 0; i < wait_for.size(); ++i) {
    Event* dep = wait_for[i];
    if (dep == nullptr) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat(OpName(*event), ": wait_for[", i, "] is null")));
    }
    auto* ours = dynamic_cast<CompletionEvent*>(dep);
    if (ours != nullptr && ours->owner() == serial_) {
      absl::Status status = add_own(ours);
      if (!status.ok()) return fail(std::move(status));
    } else {
      client_waits.push_back(dep);
    }
  }
  for (const auto& dep : named) {
    absl::Status status = add_own(dep.get());
    if (!status.ok()) return fail(std::move(status));
  }

  if (client_waits.empty()) {
    event->set_submitted();
    channel->Submit(std::move(entry), std::move(op));
    return event;
  }

  auto held = std::make_shared<HeldOp>();
  {
    absl::MutexLock lock(&held->mu);
    held->driver = this;
    held->channel = channel;
    held->entry = std::move(entry);
    held->op = std::move(op);
    held->remaining = static_cast<int>(client_waits.size());
  }
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      // Shutdown already swept held_; it would never see this one.
      return fail(absl::FailedPreconditionError(
          absl::StrCat(OpName(*event), " was issued while the TPU driver for ",
                       address_, " was closing")));
    }
    held_.insert(held);
  }
  for (Event* dep : client_waits) {
    std::string dep_name = DescribeEvent(dep);
    dep->AddCallback([held, dep_name](absl::Status status) {
      std::shared_ptr<CompletionEvent> failed;
      absl::Status failure;
      {
        absl::MutexLock lock(&held->mu);
        if (held->driver == nullptr) return;  // Shut down meanwhile.
        if (!status.ok() && held->failure.ok()) {
          held->failure = DependencyFailed(*held->op.event, dep_name, status);
        }
        if (--held->remaining > 0) return;
        StreamDriver* driver = held->driver;
        held->driver = nullptr;
        {
          absl::MutexLock driver_lock(&driver->mu_);
          driver->held_.erase(held);
        }
        if (held->failure.ok()) {
          // Under held->mu, so shutdown waits for this Submit to finish.
          held->op.event->set_submitted();
          held->channel->Submit(std::move(held->entry), std::move(held->op));
          return;
        }
        failed = held->op.event;
        failure = held->failure;
      }
      failed->set_submitted();
      failed->Complete(std::move(failure));
    });
  }
  return event;
}

std::unique_ptr<BufferHandle> StreamDriver::FailedBuffer(absl::Status status) {
  auto event = NewEvent();
  event->set_submitted();
  event->Complete(std::move(status));
  return std::make_unique<StreamBufferHandle>(
      StreamHandleInfo{serial_, std::move(event), -1}, 0, std::nullopt);
}

std::unique_ptr<BufferHandle> StreamDriver::IssueAllocation(
    int32_t core_id, tpu_driver::MemoryRegion region, int64_t bytes,
    std::optional<xla::ShapeProto> shape, absl::Span<Event* const> wait_for) {
  absl::Status error;
  StreamChannel* channel = ChannelFor(core_id, &error);
  if (channel == nullptr) return FailedBuffer(error);
  if (bytes < 0) {
    return FailedBuffer(absl::InvalidArgumentError(
        absl::StrCat("cannot allocate a negative size (", bytes,
                     " bytes) on core ", core_id)));
  }
  OutgoingEntry entry;
  auto* alloc = entry.entry.mutable_alloc();
  alloc->set_core_id(core_id);
  alloc->set_region(region);
  if (shape.has_value()) {
    *alloc->mutable_shape() = *shape;
  } else {
    alloc->set_num_bytes(bytes);
  }
  PendingOp op;
  op.event = NewEvent();
  auto handle = std::make_unique<StreamBufferHandle>(
      StreamHandleInfo{serial_, op.event, core_id}, bytes, std::move(shape));
  Issue(channel, std::move(entry), std::move(op), wait_for, {});
  return handle;
}

std::unique_ptr<BufferHandle> StreamDriver::Allocate(
    int32_t core_id, tpu_driver::MemoryRegion region, int64_t num_bytes,
    absl::Span<Event* const> wait_for) {
  return IssueAllocation(core_id, region, num_bytes, std::nullopt, wait_for);
}

std::unique_ptr<BufferHandle> StreamDriver::Allocate(
    int32_t core_id, tpu_driver::MemoryRegion region,
    const xla::ShapeProto& shape, absl::Span<Event* const> wait_for) {
  // ComputeBytesFromShape is never negative: the worker validates the shape.
  return IssueAllocation(core_id, region, ComputeBytesFromShape(shape), shape,
                         wait_for);
}

std::unique_ptr<BufferHandle> StreamDriver::AllocateTuple(
    int32_t core_id, tpu_driver::MemoryRegion region,
    absl::Span<BufferHandle* const> children,
    absl::Span<Event* const> wait_for) {
  absl::Status error;
  StreamChannel* channel = ChannelFor(core_id, &error);
  if (channel == nullptr) return FailedBuffer(error);
  OutgoingEntry entry;
  auto* tuple = entry.entry.mutable_alloc_tuple();
  tuple->set_core_id(core_id);
  tuple->set_region(region);
  std::vector<std::shared_ptr<CompletionEvent>> named;
  std::optional<xla::ShapeProto> shape = xla::ShapeProto();
  shape->set_element_type(xla::TUPLE);
  for (size_t i = 0; i < children.size(); ++i) {
    absl::StatusOr<const StreamBufferHandle*> child =
        CheckBuffer(children[i], absl::StrCat("tuple child ", i));
    if (!child.ok()) return FailedBuffer(child.status());
    if ((*child)->info().core_id != core_id && (*child)->info().core_id != -1) {
      return FailedBuffer(absl::InvalidArgumentError(absl::StrCat(
          "tuple child ", i, " (", (*child)->info().event->id().ToString(),
          ") lives on core ", (*child)->info().core_id,
          ", but the tuple is allocated on core ", core_id,
          "; a tuple's children must be on its core")));
    }
    tuple->add_children((*child)->info().wire_id());
    named.push_back((*child)->info().event);
    std::optional<xla::ShapeProto> child_shape = children[i]->shape();
    if (child_shape.has_value() && shape.has_value()) {
      *shape->add_tuple_shapes() = *child_shape;
    } else {
      shape.reset();
    }
  }
  PendingOp op;
  op.event = NewEvent();
  auto handle = std::make_unique<StreamBufferHandle>(
      StreamHandleInfo{serial_, op.event, core_id},
      int64_t{8} * static_cast<int64_t>(children.size()), std::move(shape));
  Issue(channel, std::move(entry), std::move(op), wait_for, named);
  return handle;
}

std::shared_ptr<Event> StreamDriver::Deallocate(
    std::unique_ptr<BufferHandle> handle, absl::Span<Event* const> wait_for) {
  absl::StatusOr<const StreamBufferHandle*> buffer =
      CheckBuffer(handle.get(), "buffer handle");
  if (!buffer.ok()) return CompletionEvent::Done(buffer.status(), serial_);
  PendingOp op;
  op.event = NewEvent();
  // An allocation that failed up front (no such core) has nothing to
  // release: the operation fails on that dependency.
  StreamChannel* channel = ChannelOrAny((*buffer)->info().core_id);
  OutgoingEntry entry;
  entry.entry.mutable_dealloc()->set_handle((*buffer)->info().wire_id());
  const std::shared_ptr<CompletionEvent> named[] = {(*buffer)->info().event};
  return Issue(channel, std::move(entry), std::move(op), wait_for, named);
}

absl::StatusOr<const StreamBufferHandle*> StreamDriver::CheckTransfer(
    const BufferHandle* handle, const void* host, bool to_device) {
  absl::StatusOr<const StreamBufferHandle*> buffer =
      CheckBuffer(handle, to_device ? "destination buffer" : "source buffer");
  if (!buffer.ok()) return buffer;
  const int64_t bytes = (*buffer)->bytes();
  if (host == nullptr && bytes > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        to_device ? "transfer to device: source is null but the destination"
                  : "transfer from device: destination is null but the source",
        " (created by ", (*buffer)->info().event->id().ToString(), ") holds ",
        bytes, " bytes"));
  }
  return buffer;
}

std::shared_ptr<Event> StreamDriver::TransferToDevice(
    const void* src, BufferHandle* dst, absl::Span<Event* const> wait_for) {
  absl::StatusOr<const StreamBufferHandle*> buffer =
      CheckTransfer(dst, src, /*to_device=*/true);
  if (!buffer.ok()) return CompletionEvent::Done(buffer.status(), serial_);
  PendingOp op;
  op.event = NewEvent();
  OutgoingEntry entry;
  entry.entry.mutable_transfer_to()->set_target_handle(
      (*buffer)->info().wire_id());
  entry.payload = absl::string_view(static_cast<const char*>(src),
                                    static_cast<size_t>((*buffer)->bytes()));
  const std::shared_ptr<CompletionEvent> named[] = {(*buffer)->info().event};
  return Issue(ChannelOrAny((*buffer)->info().core_id), std::move(entry),
               std::move(op), wait_for, named);
}

std::shared_ptr<Event> StreamDriver::TransferFromDevice(
    const BufferHandle* src, void* dst, absl::Span<Event* const> wait_for) {
  absl::StatusOr<const StreamBufferHandle*> buffer =
      CheckTransfer(src, dst, /*to_device=*/false);
  if (!buffer.ok()) return CompletionEvent::Done(buffer.status(), serial_);
  PendingOp op;
  op.event = NewEvent();
  op.transfer_dst = dst;
  op.transfer_bytes = (*buffer)->bytes();
  OutgoingEntry entry;
  entry.entry.mutable_transfer_from()->set_source_handle(
      (*buffer)->info().wire_id());
  const std::shared_ptr<CompletionEvent> named[] = {(*buffer)->info().event};
  return Issue(ChannelOrAny((*buffer)->info().core_id), std::move(entry),
               std::move(op), wait_for, named);
}

std::shared_ptr<Event> StreamDriver::TransferFromDeviceToDevice(
    const BufferHandle* src, BufferHandle* dst,
    absl::Span<Event* const> wait_for) {
  absl::StatusOr<const StreamBufferHandle*> source =
      CheckBuffer(src, "source buffer");
  if (!source.ok()) return CompletionEvent::Done(source.status(), serial_);
  absl::StatusOr<const StreamBufferHandle*> target =
      CheckBuffer(dst, "destination buffer");
  if (!target.ok()) return CompletionEvent::Done(target.status(), serial_);
  StreamChannel* channel = ChannelOrAny((*source)->info().core_id);
  PendingOp op;
  op.event = NewEvent();
  OutgoingEntry entry;
  auto* copy = entry.entry.mutable_transfer_from_to();
  copy->set_source_handle((*source)->info().wire_id());
  copy->set_target_handle((*target)->info().wire_id());
  const std::shared_ptr<CompletionEvent> named[] = {(*source)->info().event,
                                                    (*target)->info().event};
  return Issue(channel, std::move(entry), std::move(op), wait_for, named);
}

std::unique_ptr<CompiledProgramHandle> StreamDriver::CompileProgram(
    const xla::HloProto& source, int32_t num_replicas,
    absl::Span<Event* const> wait_for) {
  PendingOp op;
  op.event = NewEvent();
  op.program_shape = std::make_shared<xla::ProgramShapeProto>();
  auto handle = std::make_unique<StreamCompiledProgramHandle>(
      StreamHandleInfo{serial_, op.event, -1}, op.program_shape);
  OutgoingEntry entry;
  auto* compile = entry.entry.mutable_compile();
  *compile->mutable_hlo_program() = source;
  compile->set_num_replicas(num_replicas);
  Issue(compile_channel_, std::move(entry), std::move(op), wait_for, {});
  return handle;
}

std::unique_ptr<LoadedProgramHandle> StreamDriver::LoadProgram(
    int32_t core_id, const CompiledProgramHandle* handle,
    absl::Span<Event* const> wait_for) {
  PendingOp op;
  op.event = NewEvent();
  auto loaded = std::make_unique<StreamLoadedProgramHandle>(
      StreamHandleInfo{serial_, op.event, core_id});
  auto fail = [&](absl::Status status) {
    op.event->set_submitted();
    op.event->Complete(std::move(status));
    return std::move(loaded);
  };
  absl::StatusOr<const StreamCompiledProgramHandle*> compiled =
      CheckCompiled(handle);
  if (!compiled.ok()) return fail(compiled.status());
  absl::Status error;
  StreamChannel* channel = ChannelFor(core_id, &error);
  if (channel == nullptr) return fail(error);
  OutgoingEntry entry;
  auto* load = entry.entry.mutable_load();
  load->set_core_id(core_id);
  load->set_compiled_program_handle((*compiled)->info().wire_id());
  const std::shared_ptr<CompletionEvent> named[] = {(*compiled)->info().event};
  Issue(channel, std::move(entry), std::move(op), wait_for, named);
  return loaded;
}

std::shared_ptr<Event> StreamDriver::UnloadProgram(
    std::unique_ptr<LoadedProgramHandle> handle,
    absl::Span<Event* const> wait_for) {
  absl::StatusOr<const StreamLoadedProgramHandle*> loaded =
      CheckLoaded(handle.get());
  if (!loaded.ok()) return CompletionEvent::Done(loaded.status(), serial_);
  StreamChannel* channel = ChannelOrAny((*loaded)->info().core_id);
  PendingOp op;
  op.event = NewEvent();
  OutgoingEntry entry;
  entry.entry.mutable_unload()->set_loaded_program_handle(
      (*loaded)->info().wire_id());
  const std::shared_ptr<CompletionEvent> named[] = {(*loaded)->info().event};
  return Issue(channel, std::move(entry), std::move(op), wait_for, named);
}

std::shared_ptr<Event> StreamDriver::ExecuteProgram(
    LoadedProgramHandle* program, absl::Span<BufferHandle* const> inputs,
    absl::Span<BufferHandle* const> outputs,
    const xla::DeviceAssignmentProto& device_assignment,
    absl::Span<Event* const> wait_for) {
  absl::StatusOr<const StreamLoadedProgramHandle*> loaded =
      CheckLoaded(program);
  if (!loaded.ok()) return CompletionEvent::Done(loaded.status(), serial_);
  std::vector<std::shared_ptr<CompletionEvent>> named = {
      (*loaded)->info().event};
  OutgoingEntry entry;
  auto* execute = entry.entry.mutable_execute();
  execute->set_loaded_program_handle((*loaded)->info().wire_id());
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::StatusOr<const StreamBufferHandle*> input =
        CheckBuffer(inputs[i], absl::StrCat("input buffer ", i));
    if (!input.ok()) return CompletionEvent::Done(input.status(), serial_);
    execute->add_input_handle((*input)->info().wire_id());
    named.push_back((*input)->info().event);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    absl::StatusOr<const StreamBufferHandle*> output =
        CheckBuffer(outputs[i], absl::StrCat("output buffer ", i));
    if (!output.ok()) return CompletionEvent::Done(output.status(), serial_);
    execute->add_output_handle((*output)->info().wire_id());
    named.push_back((*output)->info().event);
  }
  // As the reference: a default-constructed assignment is not sent.
  if (device_assignment.replica_count() != 0 ||
      device_assignment.computation_count() != 0) {
    *execute->mutable_device_assignment() = device_assignment;
  }
  StreamChannel* channel = ChannelOrAny((*loaded)->info().core_id);
  PendingOp op;
  op.event = NewEvent();
  return Issue(channel, std::move(entry), std::move(op), wait_for, named);
}

absl::StatusOr<xla::ProgramShapeProto>
StreamCompiledProgramHandle::program_shape() {
  std::optional<absl::Status> status =
      info_.event->AwaitWithTimeout(absl::Hours(1));
  if (!status.has_value()) {
    return absl::DeadlineExceededError(
        absl::StrCat("compilation (", info_.event->id().ToString(), ")",
                     " did not finish within 1 hour"));
  }
  if (!status->ok()) return *status;
  return *program_shape_;
}

}  // namespace tpu::driver
