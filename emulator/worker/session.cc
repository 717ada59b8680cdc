#include "emulator/worker/session.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/event_id.h"

namespace tpu::emulator {
namespace {

const char* KindName(const Resource& r) {
  switch (r.index()) {
    case 0:
      return "a buffer";
    case 1:
      return "a compiled program";
    default:
      return "a loaded program";
  }
}

void ReleaseResource(const Resource& r) {
  if (auto* buffer = std::get_if<std::shared_ptr<DeviceBuffer>>(&r)) {
    (*buffer)->Release();
  }
}

}  // namespace

Session::Session(uint32_t client_id, std::shared_ptr<TimerQueue> timers,
                 absl::Duration unknown_wait, ClientLimits limits)
    : client_id_(client_id),
      scheduler_(Scheduler::Create(client_id, std::move(timers), unknown_wait)),
      limits_(limits),
      last_activity_(absl::Now()) {}

Session::~Session() {
  Close(absl::CancelledError(
      absl::StrCat("Client ", client_id_, " was destroyed.")));
}

std::string Session::HandleName(uint64_t handle) const {
  return absl::StrCat("Handle ", handle, " (client ", client_id_, ")");
}

absl::Status Session::Add(uint64_t handle, Resource resource) {
  {
    absl::MutexLock lock(&mu_);
    if (!closed_) {
      if (limits_.max_handles > 0 &&
          static_cast<int64_t>(resources_.size()) >= limits_.max_handles) {
        ReleaseResource(resource);
        return absl::ResourceExhaustedError(absl::StrCat(
            EventId{client_id_, handle}.ToString(), ": client ", client_id_,
            " already holds ", resources_.size(),
            " live handles, the most one client may hold "
            "(--max_handles_per_client); deallocate buffers or unload "
            "programs first."));
      }
      resources_[handle] = std::move(resource);
      return absl::OkStatus();
    }
  }
  ReleaseResource(resource);
  return absl::FailedPreconditionError(absl::StrCat(
      "Client ", client_id_, " was closed while ",
      EventId{client_id_, handle}.ToString(), " ran; its result was dropped."));
}

const Resource* Session::Find(uint64_t handle, absl::Status* error) const {
  auto it = resources_.find(handle);
  if (it == resources_.end()) {
    *error = absl::NotFoundError(absl::StrCat(
        HandleName(handle),
        " does not exist: it was deallocated or unloaded, or operation ",
        handle, " created nothing."));
    return nullptr;
  }
  return &it->second;
}

namespace {

// The resource `r` as a T, or an error; `error` is Find's when `r` is null.
// Names are built only for an error message.
template <typename T>
absl::StatusOr<std::shared_ptr<T>> As(
    const Resource* r, const absl::Status& error,
    absl::FunctionRef<std::string()> handle_name,
    absl::FunctionRef<std::string()> what, const char* wanted) {
  if (r == nullptr) {
    return absl::Status(error.code(),
                        absl::StrCat(what(), ": ", error.message()));
  }
  if (auto* p = std::get_if<std::shared_ptr<T>>(r)) return *p;
  return absl::InvalidArgumentError(absl::StrCat(what(), ": ", handle_name(),
                                                 " is ", KindName(*r), ", not ",
                                                 wanted, "."));
}

}  // namespace

absl::StatusOr<std::shared_ptr<DeviceBuffer>> Session::GetBuffer(
    uint64_t handle, const std::string& what) const {
  return GetBuffer(handle, [&what] { return what; });
}

absl::StatusOr<std::shared_ptr<DeviceBuffer>> Session::GetBuffer(
    uint64_t handle, absl::FunctionRef<std::string()> what) const {
  absl::ReaderMutexLock lock(&mu_);
  absl::Status error;
  const Resource* r = Find(handle, &error);
  return As<DeviceBuffer>(
      r, error, [&] { return HandleName(handle); }, what, "a buffer");
}

absl::StatusOr<std::shared_ptr<CompiledProgram>> Session::GetCompiled(
    uint64_t handle, const std::string& what) const {
  absl::ReaderMutexLock lock(&mu_);
  absl::Status error;
  const Resource* r = Find(handle, &error);
  return As<CompiledProgram>(
      r, error, [&] { return HandleName(handle); }, [&] { return what; },
      "a compiled program");
}

absl::StatusOr<std::shared_ptr<LoadedProgram>> Session::GetLoaded(
    uint64_t handle, const std::string& what) const {
  absl::ReaderMutexLock lock(&mu_);
  absl::Status error;
  const Resource* r = Find(handle, &error);
  return As<LoadedProgram>(
      r, error, [&] { return HandleName(handle); }, [&] { return what; },
      "a loaded program");
}

absl::StatusOr<std::shared_ptr<DeviceBuffer>> Session::TakeBuffer(
    uint64_t handle, const std::string& what) {
  return TakeBuffer(handle, [&what] { return what; });
}

absl::StatusOr<std::shared_ptr<DeviceBuffer>> Session::TakeBuffer(
    uint64_t handle, absl::FunctionRef<std::string()> what) {
  absl::MutexLock lock(&mu_);
  absl::Status error;
  const Resource* r = Find(handle, &error);
  auto buffer = As<DeviceBuffer>(
      r, error, [&] { return HandleName(handle); }, what, "a buffer");
  if (buffer.ok()) resources_.erase(handle);
  return buffer;
}

absl::StatusOr<std::shared_ptr<LoadedProgram>> Session::TakeLoaded(
    uint64_t handle, const std::string& what) {
  absl::MutexLock lock(&mu_);
  absl::Status error;
  const Resource* r = Find(handle, &error);
  auto loaded = As<LoadedProgram>(
      r, error, [&] { return HandleName(handle); }, [&] { return what; },
      "a loaded program");
  if (loaded.ok()) resources_.erase(handle);
  return loaded;
}

void Session::Close(const absl::Status& reason) {
  absl::flat_hash_map<uint64_t, Resource> resources;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    resources.swap(resources_);
  }
  cancelled_.store(true);
  scheduler_->Cancel(reason);
  for (const auto& [handle, resource] : resources) ReleaseResource(resource);
}

bool Session::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

void Session::Touch() {
  absl::MutexLock lock(&mu_);
  last_activity_ = absl::Now();
}

void Session::AttachStream() {
  absl::MutexLock lock(&mu_);
  ++attached_streams_;
  last_activity_ = absl::Now();
}

void Session::DetachStream() {
  absl::MutexLock lock(&mu_);
  --attached_streams_;
  last_activity_ = absl::Now();
}

bool Session::IdleSince(absl::Time cutoff) const {
  absl::MutexLock lock(&mu_);
  return attached_streams_ == 0 && last_activity_ < cutoff;
}

SessionUsage Session::Usage() const {
  SessionUsage usage;
  absl::MutexLock lock(&mu_);
  for (const auto& [handle, resource] : resources_) {
    if (const auto* buffer =
            std::get_if<std::shared_ptr<DeviceBuffer>>(&resource)) {
      CoreUsage& core = usage.cores[(*buffer)->core_id()];
      ++core.buffers;
      core.bytes += (*buffer)->size();
    } else if (const auto* loaded =
                   std::get_if<std::shared_ptr<LoadedProgram>>(&resource)) {
      ++usage.cores[(*loaded)->core_id].loaded_programs;
    } else {
      ++usage.compiled_programs;
    }
  }
  return usage;
}

absl::Status Session::Admit(int64_t bytes, uint64_t op) {
  absl::MutexLock lock(&mu_);
  auto what = [&] { return EventId{client_id_, op}.ToString(); };
  if (limits_.max_pending_operations > 0 &&
      pending_operations_ >= limits_.max_pending_operations) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what(), ": client ", client_id_, " already has ", pending_operations_,
        " operations pending, the most one client may have "
        "(--max_pending_operations_per_client); wait for some to complete "
        "before sending more."));
  }
  if (limits_.max_bytes_in_flight > 0 && bytes > 0 &&
      bytes > limits_.max_bytes_in_flight - bytes_in_flight_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what(), ": client ", client_id_, " already has ", bytes_in_flight_,
        " transfer bytes in flight and this operation carries ", bytes,
        ", more than the ", limits_.max_bytes_in_flight,
        " one client may have (--max_bytes_in_flight_per_client); wait for "
        "transfers to complete, or send smaller ones."));
  }
  ++pending_operations_;
  bytes_in_flight_ += bytes;
  return absl::OkStatus();
}

void Session::Retire(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  --pending_operations_;
  bytes_in_flight_ -= bytes;
}

size_t Session::resource_count() const {
  absl::MutexLock lock(&mu_);
  return resources_.size();
}

}  // namespace tpu::emulator
