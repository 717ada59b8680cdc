#include "driver/record/recording_driver.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "driver/completion_event.h"
#include "driver/driver_registry.h"

namespace tpu::driver {

// An operation's event as the caller sees it: completes once the wrapped
// driver's event did and the result is recorded.
class RecordedEvent : public CompletionEvent {
 public:
  // Carries the wrapped event's wire id, if it has one, so that what names
  // operations by their wire id still can.
  RecordedEvent(int64_t id, std::shared_ptr<Event> inner)
      : CompletionEvent(WireId(inner.get()), 0),
        id_(id),
        inner_(std::move(inner)) {}
  int64_t recording_id() const { return id_; }
  // The wrapped driver's event, which is what that driver waits for.
  Event* inner() const { return inner_.get(); }

 private:
  static EventId WireId(Event* inner) {
    auto* completion = dynamic_cast<CompletionEvent*>(inner);
    return completion != nullptr ? completion->id() : EventId{};
  }

  const int64_t id_;
  const std::shared_ptr<Event> inner_;
};

namespace {

using Entry = tpu_driver::StreamRequest::Entry;

// Ids of things that are not this driver's (recorded as such, never used).
constexpr int64_t kForeignId = -1;

int64_t CurrentThreadId() { return static_cast<int64_t>(syscall(SYS_gettid)); }

class RecordedBuffer : public BufferHandle {
 public:
  RecordedBuffer(std::unique_ptr<BufferHandle> inner, int64_t id,
                 std::shared_ptr<RecordedEvent> ready)
      : inner_(std::move(inner)), id_(id), ready_(std::move(ready)) {}
  std::shared_ptr<Event> OnReady() override { return ready_; }
  int64_t size_in_bytes() override { return inner_->size_in_bytes(); }
  std::optional<xla::ShapeProto> shape() override { return inner_->shape(); }

  std::unique_ptr<BufferHandle> inner_;
  const int64_t id_;
  const std::shared_ptr<RecordedEvent> ready_;
};

class RecordedCompiledProgram : public CompiledProgramHandle {
 public:
  RecordedCompiledProgram(std::unique_ptr<CompiledProgramHandle> inner,
                          int64_t id, std::shared_ptr<RecordedEvent> ready)
      : inner_(std::move(inner)), id_(id), ready_(std::move(ready)) {}
  std::shared_ptr<Event> OnReady() override { return ready_; }
  absl::StatusOr<xla::ProgramShapeProto> program_shape() override {
    return inner_->program_shape();
  }

  const std::unique_ptr<CompiledProgramHandle> inner_;
  const int64_t id_;
  const std::shared_ptr<RecordedEvent> ready_;
};

class RecordedLoadedProgram : public LoadedProgramHandle {
 public:
  RecordedLoadedProgram(std::unique_ptr<LoadedProgramHandle> inner, int64_t id,
                        std::shared_ptr<RecordedEvent> ready)
      : inner_(std::move(inner)), id_(id), ready_(std::move(ready)) {}
  std::shared_ptr<Event> OnReady() override { return ready_; }

  std::unique_ptr<LoadedProgramHandle> inner_;
  const int64_t id_;
  const std::shared_ptr<RecordedEvent> ready_;
};

// The wrapped driver's view of a handle and its id in the log. A handle of
// another driver passes through as it is, for the wrapped driver to judge.
template <typename Recorded, typename Handle>
std::pair<Handle*, int64_t> Unwrap(Handle* handle) {
  using Mutable = std::remove_const_t<Handle>;
  auto* recorded = dynamic_cast<Recorded*>(const_cast<Mutable*>(handle));
  if (recorded == nullptr) return {handle, kForeignId};
  return {recorded->inner_.get(), recorded->id_};
}

std::vector<Event*> UnwrapEvents(absl::Span<Event* const> wait_for) {
  std::vector<Event*> unwrapped;
  unwrapped.reserve(wait_for.size());
  for (Event* event : wait_for) {
    auto* recorded = dynamic_cast<RecordedEvent*>(event);
    unwrapped.push_back(recorded != nullptr ? recorded->inner() : event);
  }
  return unwrapped;
}

// "record://|file=PATH|worker=ADDRESS" -> PATH, ADDRESS; keys in any order.
absl::Status ParseAddress(const std::string& address, std::string* file,
                          std::string* worker) {
  for (absl::string_view part : absl::StrSplit(
           absl::string_view(address).substr(strlen(kRecordDriverPrefix)), '|',
           absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv =
        absl::StrSplit(part, absl::MaxSplits('=', 1));
    if (kv.first == "file") {
      *file = kv.second;
    } else if (kv.first == "worker") {
      *worker = kv.second;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option \"", part, "\" in \"", address,
                       "\"; the form is record://|file=PATH|worker=ADDRESS"));
    }
  }
  if (file->empty() || worker->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", address, "\" names no ", file->empty() ? "file" : "worker",
        "; the form is record://|file=PATH|worker=ADDRESS, e.g. "
        "record://|file=/tmp/session.log|worker=grpc://127.0.0.1:8470"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<RecordingDriver>> RecordingDriver::Create(
    std::unique_ptr<TpuDriver> inner, const std::string& path) {
  absl::StatusOr<std::unique_ptr<RecordWriter>> log =
      RecordWriter::Create(path);
  if (!log.ok()) return log.status();
  absl::StatusOr<std::unique_ptr<RecordWriter>> results =
      RecordWriter::Create(absl::StrCat(path, kResultsSuffix));
  if (!results.ok()) return results.status();
  return std::unique_ptr<RecordingDriver>(new RecordingDriver(
      std::move(inner), *std::move(log), *std::move(results)));
}

absl::StatusOr<std::unique_ptr<RecordingDriver>> RecordingDriver::Open(
    const tpu_driver::TpuDriverConfig& config) {
  std::string file, worker;
  absl::Status parsed = ParseAddress(config.worker(), &file, &worker);
  if (!parsed.ok()) return parsed;
  tpu_driver::TpuDriverConfig inner_config = config;
  inner_config.set_worker(worker);
  absl::StatusOr<std::unique_ptr<TpuDriver>> inner =
      DriverRegistry::Open(inner_config);
  if (!inner.ok()) return inner.status();
  return Create(*std::move(inner), file);
}

RecordingDriver::~RecordingDriver() = default;

std::shared_ptr<RecordedEvent> RecordingDriver::Track(
    int64_t id, std::shared_ptr<Event> inner, const void* read_back,
    int64_t size) {
  auto event = std::make_shared<RecordedEvent>(id, inner);
  // The callback keeps `event` (which keeps `inner`) alive until it runs:
  // the wrapped driver completes every event it issued, at the latest when
  // it is destroyed, which breaks the cycle.
  inner->AddCallback([event, results = results_, read_back,
                      size](absl::Status status) {
    tpu_emulator::OperationResult result;
    result.set_operation_id(event->recording_id());
    result.set_code(static_cast<int>(status.code()));
    result.set_message(std::string(status.message()));
    if (status.ok() && read_back != nullptr) {
      result.set_transfer_from_data(static_cast<const char*>(read_back), size);
    }
    // A write error is kept by the writer and reported by the log's next
    // Append; the operation's own outcome is unaffected.
    (void)results->Append(result);
    event->Complete(status);
  });
  return event;
}

void RecordingDriver::Save(Entry& entry, absl::Span<Event* const> wait_for,
                           int64_t id) {
  for (Event* event : wait_for) {
    auto* recorded = dynamic_cast<RecordedEvent*>(event);
    if (recorded != nullptr) entry.add_wait_for_id(recorded->recording_id());
  }
  entry.set_operation_id(id);
  entry.set_thread_id(CurrentThreadId());
  (void)log_->Append(entry);
}

absl::StatusOr<tpu_driver::SystemInfo> RecordingDriver::QuerySystemInfo() {
  return inner_->QuerySystemInfo();
}

absl::Status RecordingDriver::Reset() { return inner_->Reset(); }

absl::StatusOr<std::string> RecordingDriver::DescribeWaits() {
  return inner_->DescribeWaits();
}

std::unique_ptr<BufferHandle> RecordingDriver::Allocate(
    int32_t core_id, tpu_driver::MemoryRegion region, int64_t num_bytes,
    absl::Span<Event* const> wait_for) {
  std::unique_ptr<BufferHandle> inner;
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    inner =
        inner_->Allocate(core_id, region, num_bytes, UnwrapEvents(wait_for));
    Entry entry;
    entry.mutable_alloc()->set_core_id(core_id);
    entry.mutable_alloc()->set_region(region);
    entry.mutable_alloc()->set_num_bytes(num_bytes);
    Save(entry, wait_for, id);
  }
  std::shared_ptr<RecordedEvent> ready = Track(id, inner->OnReady());
  return std::make_unique<RecordedBuffer>(std::move(inner), id,
                                          std::move(ready));
}

std::unique_ptr<BufferHandle> RecordingDriver::Allocate(
    int32_t core_id, tpu_driver::MemoryRegion region,
    const xla::ShapeProto& shape, absl::Span<Event* const> wait_for) {
  std::unique_ptr<BufferHandle> inner;
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    inner = inner_->Allocate(core_id, region, shape, UnwrapEvents(wait_for));
    Entry entry;
    entry.mutable_alloc()->set_core_id(core_id);
    entry.mutable_alloc()->set_region(region);
    *entry.mutable_alloc()->mutable_shape() = shape;
    Save(entry, wait_for, id);
  }
  std::shared_ptr<RecordedEvent> ready = Track(id, inner->OnReady());
  return std::make_unique<RecordedBuffer>(std::move(inner), id,
                                          std::move(ready));
}

std::unique_ptr<BufferHandle> RecordingDriver::AllocateTuple(
    int32_t core_id, tpu_driver::MemoryRegion region,
    absl::Span<BufferHandle* const> children,
    absl::Span<Event* const> wait_for) {
  std::vector<BufferHandle*> inner_children;
  Entry entry;
  entry.mutable_alloc_tuple()->set_core_id(core_id);
  entry.mutable_alloc_tuple()->set_region(region);
  for (BufferHandle* child : children) {
    auto [inner_child, child_id] = Unwrap<RecordedBuffer>(child);
    inner_children.push_back(inner_child);
    entry.mutable_alloc_tuple()->add_children(child_id);
  }
  std::unique_ptr<BufferHandle> inner;
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    inner = inner_->AllocateTuple(core_id, region, inner_children,
                                  UnwrapEvents(wait_for));
    Save(entry, wait_for, id);
  }
  std::shared_ptr<RecordedEvent> ready = Track(id, inner->OnReady());
  return std::make_unique<RecordedBuffer>(std::move(inner), id,
                                          std::move(ready));
}

std::shared_ptr<Event> RecordingDriver::Deallocate(
    std::unique_ptr<BufferHandle> handle, absl::Span<Event* const> wait_for) {
  Entry entry;
  std::unique_ptr<BufferHandle> inner_handle;
  if (auto* recorded = dynamic_cast<RecordedBuffer*>(handle.get())) {
    entry.mutable_dealloc()->set_handle(recorded->id_);
    inner_handle = std::move(recorded->inner_);
  } else {
    entry.mutable_dealloc()->set_handle(kForeignId);
    inner_handle = std::move(handle);
  }
  std::shared_ptr<Event> inner;
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    inner = inner_->Deallocate(std::move(inner_handle), UnwrapEvents(wait_for));
    Save(entry, wait_for, id);
  }
  return Track(id, std::move(inner));
}

std::shared_ptr<Event> RecordingDriver::TransferToDevice(
    const void* src, BufferHandle* dst, absl::Span<Event* const> wait_for) {
  auto [inner_dst, dst_id] = Unwrap<RecordedBuffer>(dst);
  // Null arguments are the wrapped driver's to reject; recorded without data.
  const int64_t size =
      inner_dst != nullptr && src != nullptr ? inner_dst->size_in_bytes() : 0;
  Entry entry;
  entry.mutable_transfer_to()->set_target_handle(dst_id);
  if (size > 0) {
    entry.mutable_transfer_to()->set_data(static_cast<const char*>(src), size);
  } else {
    entry.mutable_transfer_to()->set_data("");
  }
  std::shared_ptr<Event> inner;
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    inner = inner_->TransferToDevice(src, inner_dst, UnwrapEvents(wait_for));
    Save(entry, wait_for, id);
  }
  return Track(id, std::move(inner));
}

std::shared_ptr<Event> RecordingDriver::TransferFromDevice(
    const BufferHandle* src, void* dst, absl::Span<Event* const> wait_for) {
  auto [inner_src, src_id] = Unwrap<RecordedBuffer>(src);
  const int64_t size =
      inner_src != nullptr
          ? const_cast<BufferHandle*>(inner_src)->size_in_bytes()
          : 0;
  std::shared_ptr<Event> inner;
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    inner = inner_->TransferFromDevice(inner_src, dst, UnwrapEvents(wait_for));
    Entry entry;
    entry.mutable_transfer_from()->set_source_handle(src_id);
    Save(entry, wait_for, id);
  }
  return Track(id, std::move(inner), dst, size);
}

std::shared_ptr<Event> RecordingDriver::TransferFromDeviceToDevice(
    const BufferHandle* src, BufferHandle* dst,
    absl::Span<Event* const> wait_for) {
  auto [inner_src, src_id] = Unwrap<RecordedBuffer>(src);
  auto [inner_dst, dst_id] = Unwrap<RecordedBuffer>(dst);
  std::shared_ptr<Event> inner;
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    inner = inner_->TransferFromDeviceToDevice(inner_src, inner_dst,
                                               UnwrapEvents(wait_for));
    Entry entry;
    entry.mutable_transfer_from_to()->set_source_handle(src_id);
    entry.mutable_transfer_from_to()->set_target_handle(dst_id);
    Save(entry, wait_for, id);
  }
  return Track(id, std::move(inner));
}

std::unique_ptr<CompiledProgramHandle> RecordingDriver::CompileProgram(
    const xla::HloProto& source, int32_t num_replicas,
    absl::Span<Event* const> wait_for) {
  std::unique_ptr<CompiledProgramHandle> inner;
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    inner =
        inner_->CompileProgram(source, num_replicas, UnwrapEvents(wait_for));
    Entry entry;
    *entry.mutable_compile()->mutable_hlo_program() = source;
    entry.mutable_compile()->set_num_replicas(num_replicas);
    Save(entry, wait_for, id);
  }
  std::shared_ptr<RecordedEvent> ready = Track(id, inner->OnReady());
  return std::make_unique<RecordedCompiledProgram>(std::move(inner), id,
                                                   std::move(ready));
}

std::unique_ptr<LoadedProgramHandle> RecordingDriver::LoadProgram(
    int32_t core_id, const CompiledProgramHandle* handle,
    absl::Span<Event* const> wait_for) {
  auto [inner_compiled, compiled_id] = Unwrap<RecordedCompiledProgram>(handle);
  std::unique_ptr<LoadedProgramHandle> inner;
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    inner =
        inner_->LoadProgram(core_id, inner_compiled, UnwrapEvents(wait_for));
    Entry entry;
    entry.mutable_load()->set_core_id(core_id);
    entry.mutable_load()->set_compiled_program_handle(compiled_id);
    Save(entry, wait_for, id);
  }
  std::shared_ptr<RecordedEvent> ready = Track(id, inner->OnReady());
  return std::make_unique<RecordedLoadedProgram>(std::move(inner), id,
                                                 std::move(ready));
}

std::shared_ptr<Event> RecordingDriver::UnloadProgram(
    std::unique_ptr<LoadedProgramHandle> handle,
    absl::Span<Event* const> wait_for) {
  Entry entry;
  std::unique_ptr<LoadedProgramHandle> inner_handle;
  if (auto* recorded = dynamic_cast<RecordedLoadedProgram*>(handle.get())) {
    entry.mutable_unload()->set_loaded_program_handle(recorded->id_);
    inner_handle = std::move(recorded->inner_);
  } else {
    entry.mutable_unload()->set_loaded_program_handle(kForeignId);
    inner_handle = std::move(handle);
  }
  std::shared_ptr<Event> inner;
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    inner =
        inner_->UnloadProgram(std::move(inner_handle), UnwrapEvents(wait_for));
    Save(entry, wait_for, id);
  }
  return Track(id, std::move(inner));
}

std::shared_ptr<Event> RecordingDriver::ExecuteProgram(
    LoadedProgramHandle* program, absl::Span<BufferHandle* const> inputs,
    absl::Span<BufferHandle* const> outputs,
    const xla::DeviceAssignmentProto& device_assignment,
    absl::Span<Event* const> wait_for) {
  Entry entry;
  auto [inner_program, program_id] = Unwrap<RecordedLoadedProgram>(program);
  entry.mutable_execute()->set_loaded_program_handle(program_id);
  std::vector<BufferHandle*> inner_inputs, inner_outputs;
  for (BufferHandle* input : inputs) {
    auto [inner_input, input_id] = Unwrap<RecordedBuffer>(input);
    inner_inputs.push_back(inner_input);
    entry.mutable_execute()->add_input_handle(input_id);
  }
  for (BufferHandle* output : outputs) {
    auto [inner_output, output_id] = Unwrap<RecordedBuffer>(output);
    inner_outputs.push_back(inner_output);
    entry.mutable_execute()->add_output_handle(output_id);
  }
  *entry.mutable_execute()->mutable_device_assignment() = device_assignment;
  std::shared_ptr<Event> inner;
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    inner = inner_->ExecuteProgram(inner_program, inner_inputs, inner_outputs,
                                   device_assignment, UnwrapEvents(wait_for));
    Save(entry, wait_for, id);
  }
  return Track(id, std::move(inner));
}

}  // namespace tpu::driver
