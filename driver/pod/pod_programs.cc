// grpc+pod:// programs: compile on every worker (one pod handle over the
// workers' handles, its shape agreed among them), load, unload and execute
// on the worker that owns the core.

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "driver/pod/pod_driver.h"

namespace tpu::driver {
namespace {
// Counts completions of several worker events and reports one status: the
// first error that is not a lost worker, else OK if any worker succeeded.
struct CompileJoin {
  absl::Mutex mu;
  int remaining ABSL_GUARDED_BY(mu) = 0;
  bool any_ok ABSL_GUARDED_BY(mu) = false;
  absl::Status first_error ABSL_GUARDED_BY(mu);
  absl::Status first_unavailable ABSL_GUARDED_BY(mu);
};

// Records one worker's compile status; returns the combined status once the
// last one is in.
std::optional<absl::Status> JoinCompile(CompileJoin& join,
                                        const absl::Status& status) {
  absl::MutexLock lock(&join.mu);
  if (status.ok()) {
    join.any_ok = true;
  } else if (absl::IsUnavailable(status)) {
    if (join.first_unavailable.ok()) join.first_unavailable = status;
  } else if (join.first_error.ok()) {
    join.first_error = status;
  }
  if (--join.remaining > 0) return std::nullopt;
  if (!join.first_error.ok()) return join.first_error;
  if (join.any_ok) return absl::OkStatus();
  return join.first_unavailable;
}

}  // namespace

absl::Status PodDriverDestroyed() {
  return absl::FailedPreconditionError(
      "The grpc+pod:// driver that compiled this program was destroyed.");
}

void ResolveProgramShape(PodCompiledProgram& program) {
  if (program.shape_known) return;
  if (program.per_worker.empty()) {
    program.shape = PodDriverDestroyed();
    program.shape_known = true;
    return;
  }
  std::optional<xla::ProgramShapeProto> agreed;
  absl::Status error = absl::UnavailableError("no worker compiled the program");
  for (size_t w = 0; w < program.per_worker.size(); ++w) {
    if (program.per_worker[w] == nullptr || !program.worker_status[w].ok()) {
      continue;
    }
    absl::StatusOr<xla::ProgramShapeProto> shape =
        program.per_worker[w]->program_shape();
    if (!shape.ok()) {
      error = shape.status();
      continue;
    }
    if (!agreed.has_value()) {
      agreed = *std::move(shape);
    } else if (agreed->SerializeAsString() != shape->SerializeAsString()) {
      program.shape = absl::InternalError(absl::StrCat(
          "The workers disagree on the compiled program's shape (worker ", w,
          " differs from the first): are they running different versions?"));
      program.shape_known = true;
      return;
    }
  }
  if (agreed.has_value()) {
    program.shape = *std::move(agreed);
  } else {
    program.shape = error;
  }
  program.shape_known = true;
}

// ---------------------------------------------------------------------------
// Programs.

std::unique_ptr<CompiledProgramHandle> PodDriver::CompileProgram(
    const xla::HloProto& source, int32_t num_replicas,
    absl::Span<Event* const> wait_for) {
  auto program = std::make_shared<PodCompiledProgram>();
  auto deps = Dependencies(wait_for);
  if (!deps.ok()) {
    {
      absl::MutexLock lock(&program->mu);
      program->shape = deps.status();
      program->shape_known = true;
    }
    return std::make_unique<PodCompiledProgramHandle>(
        this, scheduler_.Failed("CompileProgram", deps.status()), program);
  }
  {
    absl::MutexLock lock(&mu_);
    compiled_.push_back(program);
  }
  auto hlo = std::make_shared<const xla::HloProto>(source);
  std::shared_ptr<PodOp> op = scheduler_.Schedule(
      "CompileProgram", *deps,
      [this, hlo, num_replicas, program](int64_t, PodScheduler::Done done) {
        const int n = static_cast<int>(workers_.size());
        std::vector<std::shared_ptr<Event>> events(n);
        std::vector<absl::Status> skipped(n);
        {
          absl::MutexLock lock(&program->mu);
          program->per_worker.resize(n);
          program->worker_status.assign(n, absl::OkStatus());
          for (int w = 0; w < n; ++w) {
            skipped[w] = WorkerUnusable(w);
            if (!skipped[w].ok()) {
              program->worker_status[w] = skipped[w];
              continue;
            }
            program->per_worker[w] =
                workers_[w]->CompileProgram(*hlo, num_replicas, {});
            events[w] = program->per_worker[w]->OnReady();
          }
        }
        auto join = std::make_shared<CompileJoin>();
        {
          absl::MutexLock lock(&join->mu);
          join->remaining = n;
        }
        for (int w = 0; w < n; ++w) {
          if (events[w] == nullptr) {
            if (auto all = JoinCompile(*join, skipped[w])) done(*all);
            continue;
          }
          events[w]->AddCallback(
              [this, w, join, program, done](absl::Status status) {
                status = FromWorker(w, status);
                if (!status.ok()) {
                  absl::MutexLock lock(&program->mu);
                  if (w < static_cast<int>(program->worker_status.size())) {
                    program->worker_status[w] = status;
                  }
                }
                if (auto all = JoinCompile(*join, status)) done(*all);
              });
        }
      });
  return std::make_unique<PodCompiledProgramHandle>(this, std::move(op),
                                                    std::move(program));
}

std::unique_ptr<LoadedProgramHandle> PodDriver::LoadProgram(
    int32_t core_id, const CompiledProgramHandle* handle,
    absl::Span<Event* const> wait_for) {
  auto failed = [this](absl::Status status) {
    return std::make_unique<PodLoadedProgramHandle>(
        this, scheduler_.Failed("LoadProgram", std::move(status)), -1);
  };
  absl::Status status = CheckCore(core_id);
  if (!status.ok()) return failed(status);
  auto* compiled = dynamic_cast<const PodCompiledProgramHandle*>(handle);
  if (compiled == nullptr || compiled->owner() != this) {
    return failed(absl::InvalidArgumentError(
        "The program to load is not a compiled program of this grpc+pod:// "
        "driver."));
  }
  auto deps = Dependencies(wait_for);
  if (!deps.ok()) return failed(deps.status());
  deps->push_back(compiled->op());
  const PodCoreLocation location = topology_.cores[core_id];
  std::shared_ptr<PodOp> op = Forward(
      "LoadProgram", *std::move(deps), WorkerCall{location.worker, -1, {}},
      // Runs with mu_ held; takes program->mu inside it.
      [this, location, program = compiled->program()](
          int64_t id, TpuDriver* worker, LoadedProgramHandle*,
          absl::Span<BufferHandle* const>)
          -> absl::StatusOr<std::shared_ptr<Event>> {
        const int w = location.worker;
        absl::MutexLock program_lock(&program->mu);
        if (w >= static_cast<int>(program->per_worker.size())) {
          return PodDriverDestroyed();
        }
        if (!program->worker_status[w].ok()) return program->worker_status[w];
        std::unique_ptr<LoadedProgramHandle> loaded = worker->LoadProgram(
            location.worker_core_id, program->per_worker[w].get(), {});
        std::shared_ptr<Event> ready = loaded->OnReady();
        loaded_[id] = Loaded{w, std::move(loaded)};
        return ready;
      });
  return std::make_unique<PodLoadedProgramHandle>(this, std::move(op), core_id);
}

std::shared_ptr<Event> PodDriver::ExecuteProgram(
    LoadedProgramHandle* program, absl::Span<BufferHandle* const> inputs,
    absl::Span<BufferHandle* const> outputs,
    const xla::DeviceAssignmentProto& device_assignment,
    absl::Span<Event* const> wait_for) {
  const char* kind = "ExecuteProgram";
  auto loaded = AsPodLoaded(program, "execute");
  if (!loaded.ok()) return FailedEvent(kind, loaded.status());
  auto deps = Dependencies(wait_for);
  if (!deps.ok()) return FailedEvent(kind, deps.status());
  deps->push_back((*loaded)->op());
  const int w = WorkerOf((*loaded)->core_id());
  if (w < 0) {
    // Its load failed up front; the dependency reports why.
    return MakeEvent(
        scheduler_.Schedule(kind, *deps, [](int64_t, PodScheduler::Done done) {
          done(absl::InternalError("unreachable"));
        }));
  }
  const std::string loaded_on = absl::StrCat(
      ", but the program is loaded on core ", (*loaded)->core_id(), " of ",
      names_[w], ": copy the buffer to the program's core first.");
  WorkerCall call{w, (*loaded)->id(), {}};
  std::vector<int64_t> output_ids;
  absl::Status status =
      CollectBuffers(inputs, "Input", w, loaded_on, &*deps, &call.buffers);
  if (status.ok()) {
    status =
        CollectBuffers(outputs, "Output", w, loaded_on, &*deps, &output_ids);
  }
  if (!status.ok()) return FailedEvent(kind, status);
  const size_t num_inputs = call.buffers.size();
  call.buffers.insert(call.buffers.end(), output_ids.begin(), output_ids.end());
  auto assignment = TranslateDeviceAssignment(topology_, w, device_assignment);
  if (!assignment.ok()) return FailedEvent(kind, assignment.status());
  return MakeEvent(Forward(
      kind, *std::move(deps), std::move(call),
      [num_inputs, assignment = *std::move(assignment)](
          int64_t, TpuDriver* worker, LoadedProgramHandle* program,
          absl::Span<BufferHandle* const> buffers)
          -> absl::StatusOr<std::shared_ptr<Event>> {
        return worker->ExecuteProgram(program, buffers.subspan(0, num_inputs),
                                      buffers.subspan(num_inputs), assignment,
                                      {});
      }));
}

}  // namespace tpu::driver
