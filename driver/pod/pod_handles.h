#ifndef SOFTWARE_TPU_DRIVER_POD_POD_HANDLES_H_
#define SOFTWARE_TPU_DRIVER_POD_POD_HANDLES_H_

// The events and handles the pod driver gives out. Each one names its pod
// operation (whose id is the handle's id) and the driver it came from, and
// holds no worker resource: those stay in the driver's tables, so a handle
// can be dropped at any time without leaking or dangling anything.
//
// Thread safety: safe for concurrent use.

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "driver/pod/pod_op.h"
#include "driver/tpu_driver.h"

namespace tpu::driver {

class PodEvent : public Event {
 public:
  // `owner` identifies the driver (compared, never dereferenced).
  PodEvent(const void* owner, std::shared_ptr<PodOp> op)
      : owner_(owner), op_(std::move(op)) {}

  absl::Status Await() override { return op_->Await(); }
  std::optional<absl::Status> AwaitWithTimeout(
      absl::Duration timeout) override {
    return op_->AwaitWithTimeout(timeout);
  }
  // Runs on the pod driver's dispatcher thread (or right away if done).
  void AddCallback(std::function<void(absl::Status)> callback) override {
    op_->AddCallback(std::move(callback));
  }

  const void* owner() const { return owner_; }
  const std::shared_ptr<PodOp>& op() const { return op_; }

 private:
  const void* const owner_;
  const std::shared_ptr<PodOp> op_;
};

class PodBufferHandle : public BufferHandle {
 public:
  PodBufferHandle(const void* owner, std::shared_ptr<PodOp> op, int32_t core_id,
                  int64_t size_in_bytes, std::optional<xla::ShapeProto> shape)
      : event_(std::make_shared<PodEvent>(owner, std::move(op))),
        core_id_(core_id),
        size_in_bytes_(size_in_bytes),
        shape_(std::move(shape)) {}

  std::shared_ptr<Event> OnReady() override { return event_; }
  int64_t size_in_bytes() override { return size_in_bytes_; }
  std::optional<xla::ShapeProto> shape() override { return shape_; }

  const void* owner() const { return event_->owner(); }
  const std::shared_ptr<PodOp>& op() const { return event_->op(); }
  int64_t id() const { return event_->op()->id(); }
  int32_t core_id() const { return core_id_; }
  int64_t bytes() const { return size_in_bytes_; }

 private:
  const std::shared_ptr<PodEvent> event_;
  const int32_t core_id_;
  const int64_t size_in_bytes_;
  const std::optional<xla::ShapeProto> shape_;
};

// What compiling on every worker produced. Shared by the handle and by the
// loads that use it, so that the user may drop the handle right after
// LoadProgram. The driver empties it when it is destroyed.
struct PodCompiledProgram {
  absl::Mutex mu;
  // One entry per worker; null where that worker could not compile.
  std::vector<std::unique_ptr<CompiledProgramHandle>> per_worker
      ABSL_GUARDED_BY(mu);
  // Why worker i has no program (OK where it has one).
  std::vector<absl::Status> worker_status ABSL_GUARDED_BY(mu);
  // Once shape_known: the program shape all workers agree on, or why there
  // is none.
  bool shape_known ABSL_GUARDED_BY(mu) = false;
  absl::StatusOr<xla::ProgramShapeProto> shape ABSL_GUARDED_BY(mu) =
      absl::UnknownError("compilation has not completed");
};

// FAILED_PRECONDITION: the pod driver behind a handle is gone.
absl::Status PodDriverDestroyed();

// Fills program.shape from the workers' compiled programs, unless known.
// REQUIRES: compilation succeeded (the pod operation completed OK).
void ResolveProgramShape(PodCompiledProgram& program)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(program.mu);

class PodCompiledProgramHandle : public CompiledProgramHandle {
 public:
  PodCompiledProgramHandle(const void* owner, std::shared_ptr<PodOp> op,
                           std::shared_ptr<PodCompiledProgram> program)
      : event_(std::make_shared<PodEvent>(owner, std::move(op))),
        program_(std::move(program)) {}

  std::shared_ptr<Event> OnReady() override { return event_; }

  absl::StatusOr<xla::ProgramShapeProto> program_shape() override {
    absl::Status status = event_->Await();
    if (!status.ok()) return status;
    absl::MutexLock lock(&program_->mu);
    ResolveProgramShape(*program_);
    return program_->shape;
  }

  const void* owner() const { return event_->owner(); }
  const std::shared_ptr<PodOp>& op() const { return event_->op(); }
  const std::shared_ptr<PodCompiledProgram>& program() const {
    return program_;
  }

 private:
  const std::shared_ptr<PodEvent> event_;
  const std::shared_ptr<PodCompiledProgram> program_;
};

class PodLoadedProgramHandle : public LoadedProgramHandle {
 public:
  PodLoadedProgramHandle(const void* owner, std::shared_ptr<PodOp> op,
                         int32_t core_id)
      : event_(std::make_shared<PodEvent>(owner, std::move(op))),
        core_id_(core_id) {}

  std::shared_ptr<Event> OnReady() override { return event_; }

  const void* owner() const { return event_->owner(); }
  const std::shared_ptr<PodOp>& op() const { return event_->op(); }
  int64_t id() const { return event_->op()->id(); }
  int32_t core_id() const { return core_id_; }

 private:
  const std::shared_ptr<PodEvent> event_;
  const int32_t core_id_;
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_POD_POD_HANDLES_H_
