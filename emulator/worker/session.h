#ifndef SOFTWARE_TPU_EMULATOR_SESSION_H_
#define SOFTWARE_TPU_EMULATOR_SESSION_H_

// Everything one client (one id from Open) owns: its event graph, its
// buffers and programs by handle, and the flag that cancels its running
// programs. Handles are the operation parts of the creating operations' ids;
// the caller has already checked that a handle's client bits are this
// client's.
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "emulator/interpreter/executable.h"
#include "emulator/worker/client_limits.h"
#include "emulator/worker/device_buffer.h"
#include "emulator/worker/scheduler.h"
#include "emulator/worker/timer_queue.h"
#include "hlo/shape.h"
#include "proto/xla_data.pb.h"

namespace tpu::emulator {

// The result of a compile operation.
struct CompiledProgram {
  std::shared_ptr<const interpreter::Executable> executable;
  std::vector<Shape> parameter_shapes;
  Shape result_shape;
  int num_replicas = 1;
  // The HLO module's name, and a fingerprint of the module that is the same
  // in every worker process: launches of one program meet at collectives
  // whichever client or handle runs them.
  std::string name;
  std::string fingerprint;
  // Cheap and never blocks: an execute may run it on the thread that starts
  // it when its core is idle (emulator/worker/inline_execution.h).
  bool runs_inline = false;
};

// A compiled program loaded on one core.
struct LoadedProgram {
  std::shared_ptr<const CompiledProgram> program;
  int core_id = 0;
};

// What one client holds on one core, and in all (for the worker's stats).
struct CoreUsage {
  int64_t buffers = 0;
  int64_t bytes = 0;
  int64_t loaded_programs = 0;
};
struct SessionUsage {
  // By core id.
  absl::flat_hash_map<int, CoreUsage> cores;
  int64_t compiled_programs = 0;
};

using Resource = std::variant<std::shared_ptr<DeviceBuffer>,
                              std::shared_ptr<CompiledProgram>,
                              std::shared_ptr<LoadedProgram>>;

class Session {
 public:
  Session(uint32_t client_id, std::shared_ptr<TimerQueue> timers,
          absl::Duration unknown_wait, ClientLimits limits = ClientLimits());
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  uint32_t client_id() const { return client_id_; }
  Scheduler& scheduler() { return *scheduler_; }
  // Set once the session is closed; running programs poll it.
  const std::atomic<bool>* cancelled() const { return &cancelled_; }

  // Registers what operation `handle` created. FAILED_PRECONDITION if the
  // session was closed, RESOURCE_EXHAUSTED if the client already holds
  // limits.max_handles handles (the resource is released right away).
  absl::Status Add(uint64_t handle, Resource resource);

  // The live resource of `handle`, or NOT_FOUND (never created, deallocated,
  // unloaded) / INVALID_ARGUMENT (a resource of another kind). `what` names
  // the role in messages, e.g. "transfer_to target".
  absl::StatusOr<std::shared_ptr<DeviceBuffer>> GetBuffer(
      uint64_t handle, const std::string& what) const;
  // The same, with the role built only for an error message: most lookups
  // succeed, and per-operation strings are a large part of a small
  // operation's cost.
  absl::StatusOr<std::shared_ptr<DeviceBuffer>> GetBuffer(
      uint64_t handle, absl::FunctionRef<std::string()> what) const;
  absl::StatusOr<std::shared_ptr<CompiledProgram>> GetCompiled(
      uint64_t handle, const std::string& what) const;
  absl::StatusOr<std::shared_ptr<LoadedProgram>> GetLoaded(
      uint64_t handle, const std::string& what) const;

  // Removes and returns a buffer (dealloc) or a loaded program (unload), with
  // the same errors as the getters.
  absl::StatusOr<std::shared_ptr<DeviceBuffer>> TakeBuffer(
      uint64_t handle, const std::string& what);
  absl::StatusOr<std::shared_ptr<DeviceBuffer>> TakeBuffer(
      uint64_t handle, absl::FunctionRef<std::string()> what);
  absl::StatusOr<std::shared_ptr<LoadedProgram>> TakeLoaded(
      uint64_t handle, const std::string& what);

  // Cancels running programs and waiting operations (they fail with
  // `reason`) and releases every buffer's HBM. Idempotent.
  void Close(const absl::Status& reason);
  bool closed() const;

  // Idle tracking: a client is idle while no stream carries its operations
  // and nothing arrived for it.
  void Touch();
  void AttachStream();
  void DetachStream();
  // True if idle since before `cutoff`.
  bool IdleSince(absl::Time cutoff) const;

  // Admission of operation `op` (its operation part) carrying `bytes` of
  // transfer payload: RESOURCE_EXHAUSTED (naming the operation) when the
  // client already has limits.max_pending_operations operations or
  // limits.max_bytes_in_flight payload bytes unanswered. Every admitted
  // operation is retired once, when it is answered.
  absl::Status Admit(int64_t bytes, uint64_t op);
  void Retire(int64_t bytes);

  // Number of live resources, for tests.
  size_t resource_count() const;
  // Live buffers and programs, per core.
  SessionUsage Usage() const;

 private:
  std::string HandleName(uint64_t handle) const;
  // The resource of `handle`, or null after setting *error.
  const Resource* Find(uint64_t handle, absl::Status* error) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const uint32_t client_id_;
  const std::shared_ptr<Scheduler> scheduler_;
  const ClientLimits limits_;

  std::atomic<bool> cancelled_{false};

  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Resource> resources_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int attached_streams_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_activity_ ABSL_GUARDED_BY(mu_);
  int64_t pending_operations_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SESSION_H_
