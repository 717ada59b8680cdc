// Program operations: compile, load, unload and execute.

#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "emulator/faults/fault_wait.h"
#include "emulator/interpreter/executable.h"
#include "emulator/trace/program_profile.h"
#include "emulator/trace/recorder.h"
#include "emulator/worker/device_buffer.h"
#include "emulator/worker/fault_hooks.h"
#include "emulator/worker/inline_execution.h"
#include "emulator/worker/op_common.h"
#include "emulator/worker/program_memory.h"
#include "hlo/literal.h"
#include "hlo/memory_budget.h"
#include "hlo/shape.h"
#include "proto/hlo.pb.h"

namespace tpu::emulator {
namespace {

// Replicas one program may be compiled for.
constexpr int64_t kMaxReplicas = 65536;

// std::hash of the serialized module: unlike absl::Hash it is not seeded
// per process, so the workers of a pod slice agree on it.
std::string Fingerprint(const xla::HloModuleProto& module) {
  const std::string bytes = module.SerializeAsString();
  return absl::StrCat(absl::Hex(std::hash<std::string>{}(bytes)), "-",
                      bytes.size());
}

absl::StatusOr<std::shared_ptr<CompiledProgram>> MakeCompiledProgram(
    std::unique_ptr<interpreter::Executable> executable, int num_replicas,
    const xla::HloModuleProto& module) {
  auto program = std::make_shared<CompiledProgram>();
  program->name = module.name();
  program->fingerprint = Fingerprint(module);
  const xla::ProgramShapeProto& shape = executable->program_shape();
  for (const xla::ShapeProto& parameter : shape.parameters()) {
    absl::StatusOr<Shape> parsed = Shape::FromProto(parameter);
    if (!parsed.ok()) return parsed.status();
    program->parameter_shapes.push_back(*std::move(parsed));
  }
  absl::StatusOr<Shape> result = Shape::FromProto(shape.result());
  if (!result.ok()) return result.status();
  program->result_shape = *std::move(result);
  program->num_replicas = num_replicas;
  program->runs_inline = RunsInline(module, num_replicas);
  program->executable = std::move(executable);
  return program;
}

// The devices of `assignment` as the interpreter indexes them; one device,
// the executing core, without an assignment.
interpreter::DeviceAssignment ToDevices(
    const xla::DeviceAssignmentProto* assignment, int core_id) {
  interpreter::DeviceAssignment devices;
  if (assignment == nullptr || assignment->computation_devices_size() == 0) {
    devices.devices = {core_id};
    return devices;
  }
  devices.num_partitions = assignment->computation_devices_size();
  devices.num_replicas =
      assignment->computation_devices(0).replica_device_ids_size();
  devices.devices.resize(static_cast<size_t>(devices.num_replicas) *
                         devices.num_partitions);
  for (int c = 0; c < devices.num_partitions; ++c) {
    const auto& ids = assignment->computation_devices(c).replica_device_ids();
    for (int r = 0; r < devices.num_replicas && r < ids.size(); ++r) {
      devices.devices[r * devices.num_partitions + c] =
          static_cast<int>(ids[r]);
    }
  }
  return devices;
}

// The replica (and partition) that `core_id` runs in `assignment`.
absl::Status ResolveReplica(const std::string& role,
                            const xla::DeviceAssignmentProto* assignment,
                            int core_id, int num_replicas,
                            interpreter::ExecutionContext* context) {
  context->replica_id = 0;
  context->partition_id = 0;
  if (assignment == nullptr) {
    if (num_replicas == 1) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        role, ": the program was compiled for ", num_replicas,
        " replicas; execute needs a device_assignment to place this core."));
  }
  for (int c = 0; c < assignment->computation_devices_size(); ++c) {
    const auto& devices = assignment->computation_devices(c);
    if (devices.replica_device_ids_size() != num_replicas) {
      return absl::InvalidArgumentError(
          absl::StrCat(role, ": device_assignment computation ", c, " lists ",
                       devices.replica_device_ids_size(),
                       " replica devices but the program was compiled for ",
                       num_replicas, " replicas."));
    }
    for (int r = 0; r < devices.replica_device_ids_size(); ++r) {
      if (devices.replica_device_ids(r) == core_id) {
        context->replica_id = r;
        context->partition_id = c;
        return absl::OkStatus();
      }
    }
  }
  // A single-replica program runs as replica 0 wherever it is; a layer that
  // renumbers cores (e.g. a pod driver) need not rewrite its assignment.
  if (num_replicas == 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(role, ": core ", core_id,
                   " does not appear in the device_assignment, so its replica "
                   "id is unknown."));
}

}  // namespace

absl::StatusOr<BuiltOp> BuildCompile(
    const OpContext& ctx, const tpu_driver::CompileRequest& request) {
  const std::string role = absl::StrCat(ctx.Name(), " compile");
  if (!request.hlo_program().has_hlo_module()) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, ": hlo_program has no hlo_module."));
  }
  int64_t num_replicas =
      request.has_num_replicas() ? request.num_replicas() : 1;
  if (num_replicas < 1 || num_replicas > kMaxReplicas) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, ": num_replicas is ", num_replicas,
                     "; it must be in [1, ", kMaxReplicas, "]."));
  }
  auto module =
      std::make_shared<xla::HloModuleProto>(request.hlo_program().hlo_module());
  BuiltOp op;
  op.body = [ctx, role, module = std::move(module),
             replicas = static_cast<int>(num_replicas)]() {
    StartWithFaults(
        ctx, faults::OpKind::kCompile, /*core_id=*/-1, module->name(),
        [ctx, role, module, replicas](double) {
          ctx.worker->pool->Schedule([ctx, role, module, replicas]() {
            trace::Recorder* const recorder = ctx.worker->recorder;
            trace::ScopedSlice slice(
                recorder,
                recorder->on()
                    ? recorder->Begin(
                          trace::ClientTrack(ctx.session->client_id()),
                          absl::StrCat("compile ", module->name()), "compile",
                          trace::Args()
                              .Add("operation", ctx.Name())
                              .Add("replicas", replicas)
                              .members())
                    : 0);
            interpreter::CompileOptions options;
            options.num_replicas = replicas;
            options.tpu_numerics = ctx.worker->options.tpu_numerics;
            absl::StatusOr<std::unique_ptr<interpreter::Executable>>
                executable = interpreter::Executable::Compile(*module, options);
            if (!executable.ok()) {
              return ctx.Finish(absl::Status(
                  executable.status().code(),
                  absl::StrCat(role, ": ", executable.status().message())));
            }
            // After compiling, so that a malformed module (a constant
            // without its data) gets its own error first.
            if (const MemoryBudget* budget = MemoryBudget::Process()) {
              absl::Status fits = CheckValuesFitBudget(*module, *budget);
              if (!fits.ok()) {
                return ctx.Finish(absl::Status(
                    fits.code(), absl::StrCat(role, ": ", fits.message())));
              }
            }
            absl::StatusOr<std::shared_ptr<CompiledProgram>> program =
                MakeCompiledProgram(*std::move(executable), replicas, *module);
            if (!program.ok()) {
              return ctx.Finish(absl::InternalError(absl::StrCat(
                  role, ": the compiled program has an invalid program shape: ",
                  program.status().message())));
            }
            auto entry = MakeResponseEntry(ctx.wire_id, absl::OkStatus());
            *entry->mutable_compile()
                 ->mutable_metadata()
                 ->mutable_program_shape() =
                (*program)->executable->program_shape();
            absl::Status added = ctx.session->Add(ctx.op, *std::move(program));
            if (!added.ok()) return ctx.Finish(added);
            ctx.Finish(std::move(entry), nullptr, absl::OkStatus());
          });
        });
  };
  return op;
}

absl::StatusOr<BuiltOp> BuildLoad(
    const OpContext& ctx, const tpu_driver::LoadProgramRequest& request) {
  const std::string role = absl::StrCat(ctx.Name(), " load");
  absl::StatusOr<int> core = LocalCore(ctx, request.core_id(), role);
  if (!core.ok()) return core.status();
  BuiltOp op;
  absl::StatusOr<uint64_t> handle =
      UseHandle(ctx, request.compiled_program_handle(), role, &op);
  if (!handle.ok()) return handle.status();
  op.body = [ctx, role, handle = *handle,
             core_id = static_cast<int>(request.core_id())]() {
    auto compiled = ctx.session->GetCompiled(handle, role);
    const std::string program = compiled.ok() ? (*compiled)->name : "";
    StartWithFaults(ctx, faults::OpKind::kLoad, core_id, program,
                    [ctx, compiled, core_id](double) {
                      if (!compiled.ok()) return ctx.Finish(compiled.status());
                      auto loaded = std::make_shared<LoadedProgram>();
                      loaded->program = *compiled;
                      loaded->core_id = core_id;
                      ctx.Finish(ctx.session->Add(ctx.op, std::move(loaded)));
                    });
  };
  return op;
}

absl::StatusOr<BuiltOp> BuildUnload(
    const OpContext& ctx, const tpu_driver::UnloadProgramRequest& request) {
  const std::string role = absl::StrCat(ctx.Name(), " unload");
  BuiltOp op;
  absl::StatusOr<uint64_t> handle =
      UseHandle(ctx, request.loaded_program_handle(), role, &op);
  if (!handle.ok()) return handle.status();
  op.body = [ctx, role, handle = *handle]() {
    auto loaded = ctx.session->GetLoaded(handle, role);
    const int core_id = loaded.ok() ? (*loaded)->core_id : -1;
    const std::string program = loaded.ok() ? (*loaded)->program->name : "";
    StartWithFaults(
        ctx, faults::OpKind::kUnload, core_id, program,
        [ctx, role, handle](double) {
          ctx.Finish(ctx.session->TakeLoaded(handle, role).status());
        });
  };
  return op;
}

absl::StatusOr<BuiltOp> BuildExecute(
    const OpContext& ctx, const tpu_driver::ExecuteRequest& request) {
  const std::string role = absl::StrCat(ctx.Name(), " execute");
  if (request.output_handle_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        role,
        ": no output_handle; pass the buffer (an alloc_tuple handle for "
        "a tuple result) that receives the result."));
  }
  BuiltOp op;
  absl::StatusOr<uint64_t> program =
      UseHandle(ctx, request.loaded_program_handle(), role, &op);
  if (!program.ok()) return program.status();
  std::vector<uint64_t> inputs, outputs;
  for (int i = 0; i < request.input_handle_size(); ++i) {
    auto h = UseHandle(ctx, request.input_handle(i),
                       absl::StrCat(role, " input ", i), &op);
    if (!h.ok()) return h.status();
    inputs.push_back(*h);
  }
  for (int i = 0; i < request.output_handle_size(); ++i) {
    auto h = UseHandle(ctx, request.output_handle(i),
                       absl::StrCat(role, " output ", i), &op);
    if (!h.ok()) return h.status();
    outputs.push_back(*h);
  }
  std::shared_ptr<const xla::DeviceAssignmentProto> assignment;
  if (request.has_device_assignment()) {
    assignment = std::make_shared<const xla::DeviceAssignmentProto>(
        request.device_assignment());
  }
  op.body = [ctx, role, program = *program, inputs = std::move(inputs),
             outputs = std::move(outputs), assignment]() {
    auto loaded = ctx.session->GetLoaded(program, role);
    if (!loaded.ok()) return ctx.Finish(loaded.status());
    const int core_id = (*loaded)->core_id;
    std::shared_ptr<const CompiledProgram> compiled = (*loaded)->program;
    if (inputs.size() != compiled->parameter_shapes.size()) {
      return ctx.Finish(absl::InvalidArgumentError(absl::StrCat(
          role, ": the program takes ", compiled->parameter_shapes.size(),
          " parameters but ", inputs.size(), " input handles were passed.")));
    }
    // Resolve and check every buffer before the program is queued.
    auto resolve =
        [&](const std::vector<uint64_t>& handles, const char* kind,
            std::vector<std::shared_ptr<DeviceBuffer>>* out) -> absl::Status {
      for (size_t i = 0; i < handles.size(); ++i) {
        const std::string what = absl::StrCat(role, " ", kind, " ", i);
        auto buffer = ctx.session->GetBuffer(handles[i], what);
        if (!buffer.ok()) return buffer.status();
        if ((*buffer)->core_id() != core_id) {
          return absl::InvalidArgumentError(absl::StrCat(
              what, " is ", (*buffer)->Describe(),
              " but the program is loaded on core ", core_id, "."));
        }
        out->push_back(*std::move(buffer));
      }
      return absl::OkStatus();
    };
    std::vector<std::shared_ptr<DeviceBuffer>> in, out;
    absl::Status status = resolve(inputs, "input", &in);
    if (status.ok()) status = resolve(outputs, "output", &out);
    if (!status.ok()) return ctx.Finish(status);
    for (size_t i = 0; i < in.size() && status.ok(); ++i) {
      status = CheckCompatible(*in[i], compiled->parameter_shapes[i],
                               absl::StrCat(role, " input ", i));
    }
    const Shape& result = compiled->result_shape;
    // One output receives the whole result; alternatively one output per
    // element of a tuple result.
    const bool per_element = out.size() > 1;
    if (status.ok() && !per_element) {
      status = CheckCompatible(*out[0], result, absl::StrCat(role, " output"));
    } else if (status.ok()) {
      if (!result.IsTuple() ||
          static_cast<int64_t>(out.size()) != result.tuple_size()) {
        status = absl::InvalidArgumentError(absl::StrCat(
            role, ": ", out.size(), " output handles were passed for result ",
            result.ToString(),
            "; pass one (an alloc_tuple handle for a tuple result)."));
      }
      for (size_t i = 0; i < out.size() && status.ok(); ++i) {
        status = CheckCompatible(*out[i], result.tuple_shapes()[i],
                                 absl::StrCat(role, " output ", i));
      }
    }
    interpreter::ExecutionContext context;
    if (status.ok()) {
      status = ResolveReplica(role, assignment.get(), core_id,
                              compiled->num_replicas, &context);
    }
    if (!status.ok()) return ctx.Finish(status);
    context.device = ctx.worker->device;
    context.cancelled = ctx.session->cancelled();
    auto devices = std::make_shared<const interpreter::DeviceAssignment>(
        ToDevices(assignment.get(), core_id));
    const int local = ctx.worker->topology.LocalIndex(core_id);
    std::function<void()> run_on_core = [ctx, role, compiled, context, devices,
                                         core_id, in = std::move(in),
                                         out = std::move(out), per_element]() {
      // Fault rules meet the execute as its core starts it: a delay or hang
      // holds the core, as a slow or stuck program would.
      const std::optional<double> slow_factor =
          StartOnCore(ctx, faults::OpKind::kExecute, core_id, compiled->name);
      if (!slow_factor.has_value()) return;  // the fault finished it
      if (context.cancelled->load()) {
        return ctx.Finish(absl::CancelledError(
            absl::StrCat(role, ": the client was closed before it ran.")));
      }
      LaunchInfo info;
      info.core = core_id;
      info.client_id = ctx.session->client_id();
      info.program = compiled->name;
      info.fingerprint = compiled->fingerprint;
      info.assignment = devices->devices;
      info.cancelled = context.cancelled;
      // The launch lasts until this closure returns: the core is "running"
      // for the wait report, and its collectives meet the peers' launch.
      absl::StatusOr<std::unique_ptr<Launch>> launch =
          ctx.worker->collectives->BeginLaunch(std::move(info));
      if (!launch.ok()) {
        return ctx.Finish(
            absl::Status(launch.status().code(),
                         absl::StrCat(role, ": ", launch.status().message())));
      }
      // What the TPU did: a slice per program on the core's track, the
      // core's and client's busy time, and optionally per instruction.
      trace::Recorder* const recorder = ctx.worker->recorder;
      const uint32_t client_id = ctx.session->client_id();
      const int64_t started = recorder->NowMicros();
      trace::ScopedSlice slice(
          recorder,
          recorder->on()
              ? recorder->Begin(
                    trace::CoreTrack(core_id),
                    trace::Name(compiled->name, " #", (*launch)->number()),
                    "program",
                    trace::Args()
                        .Add("program", compiled->name)
                        .Add("launch", (*launch)->number())
                        .Add("client", client_id)
                        .AddOperation("operation", ctx.wire_id),
                    started)
              : 0);
      const bool profile = ctx.worker->options.profile_programs;
      const bool trace_instructions = recorder->instructions();
      std::optional<trace::InstructionTimer> timer;
      if (profile || trace_instructions) {
        timer.emplace(trace_instructions ? recorder : nullptr,
                      trace::CoreTrack(core_id), profile);
      }
      struct CountRun {
        ~CountRun() {
          ctx->worker->activity->ProgramRan(
              core, client, ctx->worker->recorder->NowMicros() - started);
        }
        const OpContext* ctx;
        int core;
        uint32_t client;
        int64_t started;
      } count_run{&ctx, core_id, client_id, started};
      FaultingCollectives collectives(ctx, launch->get(), core_id,
                                      compiled->name);
      interpreter::ExecutionContext run = context;
      run.assignment = devices.get();
      run.collectives = &collectives;
      if (timer.has_value()) run.observer = &*timer;
      std::vector<Literal> arguments;
      arguments.reserve(in.size());
      for (size_t i = 0; i < in.size(); ++i) {
        const std::string what = absl::StrCat(role, " input ", i);
        absl::StatusOr<Literal> argument;
        // A never-written input is read as zeros, which are allocated here.
        try {
          argument = ReadLiteral(*in[i], compiled->parameter_shapes[i], what);
        } catch (const std::bad_alloc& error) {
          argument = absl::ResourceExhaustedError(
              absl::StrCat(what, " (never written, read as zeros): ",
                           AllocationFailureStatus(error).message()));
        }
        if (!argument.ok()) return ctx.Finish(argument.status());
        arguments.push_back(*std::move(argument));
      }
      const absl::Time run_started = absl::Now();
      absl::StatusOr<Literal> value = compiled->executable->Execute(
          std::move(arguments), run, /*stats=*/nullptr);
      if (*slow_factor > 1) {
        // slow=FACTOR: the program takes FACTOR times as long as it did.
        faults::SleepUnlessCancelled(
            (absl::Now() - run_started) * (*slow_factor - 1),
            context.cancelled);
      }
      if (profile) {
        ctx.worker->profiles->AddRun(compiled->name, compiled->fingerprint,
                                     timer->samples());
      }
      if (!value.ok()) {
        return ctx.Finish(
            absl::Status(value.status().code(),
                         absl::StrCat(role, ": ", value.status().message())));
      }
      if (Shape(value->shape()) != compiled->result_shape) {
        return ctx.Finish(absl::InternalError(absl::StrCat(
            role, ": the interpreter returned ", value->shape().ToString(),
            " for a program whose result is ",
            compiled->result_shape.ToString(), ".")));
      }
      if (per_element) {
        for (size_t i = 0; i < out.size(); ++i) {
          WriteLiteral(*out[i], value->element(static_cast<int64_t>(i)));
        }
      } else {
        WriteLiteral(*out[0], *value);
      }
      ctx.Finish(absl::OkStatus());
    };
    // Fault rules may delay or hold an execute, and a launch barrier waits
    // for the assignment's other cores: neither may happen on the thread of
    // the client that started it.
    WorkQueue* core = ctx.worker->cores[local];
    const bool may_inline =
        compiled->runs_inline && devices->devices.size() == 1 &&
        (ctx.worker->faults == nullptr || ctx.worker->faults->empty());
    if (!may_inline || !core->TryRunInline(run_on_core)) {
      core->Schedule(std::move(run_on_core));
    }
  };
  return op;
}

}  // namespace tpu::emulator
