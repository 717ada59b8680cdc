#include "client/tpu_executable.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/blocking_counter.h"
#include "client/execute_wait.h"

namespace tpu::client {
namespace {

bool IsComplete(driver::Event* event) {
  return event->AwaitWithTimeout(absl::ZeroDuration()).has_value();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TpuExecutable>> TpuExecutable::Compile(
    const xla::HloModuleProto& module, const CompileOptions& options,
    std::shared_ptr<TpuClient> client) {
  if (options.num_replicas < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a program needs at least one replica; num_replicas is %d",
        options.num_replicas));
  }
  std::optional<DeviceAssignment> assignment;
  if (options.device_assignment.has_value()) {
    if (options.device_assignment->replica_count() != options.num_replicas) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Mismatched number of replicas for device assignment and "
          "computation (%d vs %d).",
          options.device_assignment->replica_count(), options.num_replicas));
    }
    if (options.device_assignment->computation_count() != 1) {
      return absl::UnimplementedError(absl::StrFormat(
          "Only 1 computation per replica supported, %d requested.",
          options.device_assignment->computation_count()));
    }
    assignment = options.device_assignment;
  } else {
    absl::StatusOr<DeviceAssignment> default_assignment =
        client->GetDefaultDeviceAssignment(options.num_replicas,
                                           options.num_partitions);
    if (!default_assignment.ok()) return default_assignment.status();
    assignment = *std::move(default_assignment);
  }

  // Every device named must exist; only this host's are loaded.
  std::vector<std::shared_ptr<TpuDevice>> replica_devices;
  for (int r = 0; r < assignment->replica_count(); ++r) {
    absl::StatusOr<std::shared_ptr<TpuDevice>> device =
        client->LookupDevice((*assignment)(r, 0), "TpuExecutable::Compile");
    if (!device.ok()) return device.status();
    replica_devices.push_back(*std::move(device));
  }

  xla::HloProto hlo;
  *hlo.mutable_hlo_module() = module;
  driver::TpuDriver* driver = client->driver();
  std::unique_ptr<driver::CompiledProgramHandle> compiled =
      driver->CompileProgram(hlo, options.num_replicas, {});
  absl::StatusOr<xla::ProgramShapeProto> program_shape =
      compiled->program_shape();
  if (!program_shape.ok()) return program_shape.status();

  std::vector<Shape> parameter_shapes;
  for (int i = 0; i < program_shape->parameters_size(); ++i) {
    absl::StatusOr<Shape> shape =
        Shape::FromProto(program_shape->parameters(i));
    if (!shape.ok()) {
      return absl::InternalError(absl::StrFormat(
          "the compiler reported an invalid shape for parameter %d: %s", i,
          shape.status().message()));
    }
    parameter_shapes.push_back(*std::move(shape));
  }
  absl::StatusOr<Shape> result_shape =
      Shape::FromProto(program_shape->result());
  if (!result_shape.ok()) {
    return absl::InternalError(
        absl::StrFormat("the compiler reported an invalid result shape: %s",
                        result_shape.status().message()));
  }

  std::vector<LocalReplica> replicas;
  for (int r = 0; r < assignment->replica_count(); ++r) {
    const std::shared_ptr<TpuDevice>& device = replica_devices[r];
    if (device->host_id() != client->host_id()) continue;  // another host's
    LocalReplica replica;
    replica.replica = r;
    replica.device = device;
    // Load waits for the compilation implicitly.
    replica.program = driver->LoadProgram(device->id(), compiled.get(), {});
    replicas.push_back(std::move(replica));
  }
  if (replicas.empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "none of the %d replicas is placed on a device of this host (host id "
        "%d); device assignment: %s",
        assignment->replica_count(), client->host_id(),
        assignment->ToString()));
  }
  return std::make_unique<TpuExecutable>(
      std::move(client), *std::move(assignment), std::move(parameter_shapes),
      *std::move(result_shape), options.tuple_arguments, std::move(replicas));
}

TpuExecutable::TpuExecutable(std::shared_ptr<TpuClient> client,
                             DeviceAssignment assignment,
                             std::vector<Shape> parameter_shapes,
                             Shape result_shape, bool tuple_arguments,
                             std::vector<LocalReplica> replicas)
    : client_(std::move(client)),
      device_assignment_(std::move(assignment)),
      device_assignment_proto_(device_assignment_.ToProto()),
      parameter_shapes_(std::move(parameter_shapes)),
      result_shape_(std::move(result_shape)),
      tuple_arguments_(tuple_arguments) {
  absl::MutexLock lock(&mu_);
  for (LocalReplica& replica : replicas) {
    local_devices_.push_back(replica.device);
    local_replica_ids_.push_back(replica.replica);
    programs_.push_back(std::move(replica.program));
  }
  last_execution_.resize(programs_.size());
}

TpuExecutable::~TpuExecutable() { Delete(); }

void TpuExecutable::Delete() {
  absl::MutexLock lock(&mu_);
  deleted_ = true;
  for (size_t i = 0; i < programs_.size(); ++i) {
    if (programs_[i] == nullptr) continue;
    std::vector<driver::Event*> wait_for;
    if (last_execution_[i] != nullptr &&
        !IsComplete(last_execution_[i].get())) {
      wait_for.push_back(last_execution_[i].get());
    }
    client_->driver()->UnloadProgram(std::move(programs_[i]), wait_for);
    programs_[i] = nullptr;
    last_execution_[i] = nullptr;
  }
}

absl::Status TpuExecutable::CheckArguments(
    int local_index, absl::Span<TpuBuffer* const> arguments) const {
  const int replica = local_replica_ids_[local_index];
  const TpuDevice& device = *local_devices_[local_index];
  // With tuple_arguments the arguments become the elements of the single
  // tuple parameter.
  std::vector<Shape> expected = parameter_shapes_;
  if (tuple_arguments_) {
    if (parameter_shapes_.size() != 1 || !parameter_shapes_[0].IsTuple()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tuple_arguments needs an entry computation with one tuple "
          "parameter; this one takes %d parameters",
          parameter_shapes_.size()));
    }
    expected = parameter_shapes_[0].tuple_shapes();
  }
  if (arguments.size() != expected.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("replica %d got %d arguments but the program takes %d",
                        replica, arguments.size(), expected.size()));
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i] == nullptr || arguments[i]->IsDeleted()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "argument %d of replica %d is a deleted buffer", i, replica));
    }
    if (arguments[i]->device()->id() != device.id()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "argument %d of replica %d is on %s but the replica runs on %s; "
          "copy it there with CopyToDevice",
          i, replica, arguments[i]->device()->ToString(), device.ToString()));
    }
    if (arguments[i]->on_host_shape() != expected[i]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "argument %d of replica %d has shape %s but the program expects %s",
          i, replica, arguments[i]->on_host_shape().ToString(),
          expected[i].ToString()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TpuExecutable::Launched> TpuExecutable::Launch(
    int local_index, absl::Span<TpuBuffer* const> arguments) {
  const std::shared_ptr<TpuDevice>& device = local_devices_[local_index];
  Launched launched;
  std::vector<TpuBuffer*> inputs(arguments.begin(), arguments.end());
  if (tuple_arguments_) {
    absl::StatusOr<std::unique_ptr<TpuBuffer>> tuple =
        TpuBuffer::MakeTuple(arguments, client_, device->id());
    if (!tuple.ok()) return tuple.status();
    launched.tupled_arguments = *std::move(tuple);
    inputs = {launched.tupled_arguments.get()};
  }
  absl::StatusOr<std::unique_ptr<TpuBuffer>> result =
      TpuBuffer::AllocateBuffer(result_shape_, client_, device->id());
  if (!result.ok()) return result.status();
  launched.result = *std::move(result);

  // Hold the device buffers until the launch is scheduled; a concurrent
  // Delete of an argument then only drops its reference.
  std::vector<std::shared_ptr<DeviceBuffer>> input_buffers;
  std::vector<driver::BufferHandle*> input_handles;
  std::vector<std::shared_ptr<driver::Event>> wait_events;
  for (TpuBuffer* input : inputs) {
    std::shared_ptr<DeviceBuffer> buffer = input->device_buffer();
    if (buffer == nullptr) {
      return absl::InvalidArgumentError(
          "an argument was deleted while the program was being launched");
    }
    input_handles.push_back(buffer->handle());
    for (auto& e : buffer->definition_events()) wait_events.push_back(e);
    input_buffers.push_back(std::move(buffer));
  }
  std::shared_ptr<DeviceBuffer> output = launched.result->device_buffer();
  wait_events.push_back(output->handle()->OnReady());
  std::vector<driver::Event*> wait_for;
  for (const auto& e : wait_events) wait_for.push_back(e.get());

  {
    absl::MutexLock lock(&mu_);
    if (deleted_) {
      return absl::FailedPreconditionError(
          "Execute called on a deleted executable");
    }
    launched.done = client_->driver()->ExecuteProgram(
        programs_[local_index].get(), input_handles, {output->handle()},
        device_assignment_proto_, wait_for);
    last_execution_[local_index] = launched.done;
  }
  // Releasing any of these buffers while the program runs must wait for it.
  for (const auto& buffer : input_buffers) buffer->AddReadEvent(launched.done);
  output->AddReadEvent(launched.done);
  return launched;
}

absl::Status TpuExecutable::Await(const std::vector<Launched>& launched) const {
  std::vector<std::shared_ptr<driver::Event>> events;
  for (const Launched& l : launched) events.push_back(l.done);
  const TpuClient* client = client_.get();
  // Beside the reference's messages, the worker's wait report (when it has
  // one and a core waits in a collective) says which cores wait for whom:
  // the cause beside the symptom. One warning per line, so every line
  // carries the warning prefix.
  auto report_waits = [client]() {
    absl::StatusOr<std::string> report = client->driver()->DescribeWaits();
    if (!report.ok() || !absl::StrContains(*report, "waiting for core")) {
      return;
    }
    client->Warn("Wait report:");
    for (absl::string_view line :
         absl::StrSplit(*report, '\n', absl::SkipEmpty())) {
      client->Warn(line);
    }
  };
  auto warn_with_report = [client, &report_waits](absl::string_view message) {
    client->Warn(message);
    report_waits();
  };
  absl::Status status =
      AwaitExecution(events, client->options().execute_warn_interval,
                     client->options().execute_max_time, warn_with_report,
                     client->options().wait_interrupt_check,
                     client->options().wait_interrupt_interval);
  if (absl::IsDeadlineExceeded(status)) report_waits();
  return status;
}

absl::StatusOr<std::vector<std::unique_ptr<TpuBuffer>>> TpuExecutable::Unpack(
    std::unique_ptr<TpuBuffer> result) {
  if (result->on_host_shape().IsTuple()) return result->DestructureTuple();
  std::vector<std::unique_ptr<TpuBuffer>> outputs;
  outputs.push_back(std::move(result));
  return outputs;
}

absl::StatusOr<std::vector<std::unique_ptr<TpuBuffer>>> TpuExecutable::Execute(
    absl::Span<TpuBuffer* const> arguments) {
  if (num_replicas() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Attempted to execute computation with %d replicas using Execute().",
        num_replicas()));
  }
  if (num_partitions() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Attempted to execute computation with %d partitions using "
        "Execute().",
        num_partitions()));
  }
  absl::Status status = CheckArguments(0, arguments);
  if (!status.ok()) return status;
  absl::StatusOr<Launched> launched = Launch(0, arguments);
  if (!launched.ok()) return launched.status();
  std::vector<Launched> all;
  all.push_back(*std::move(launched));
  status = Await(all);
  if (!status.ok()) return status;
  return Unpack(std::move(all[0].result));
}

absl::StatusOr<std::vector<std::vector<std::unique_ptr<TpuBuffer>>>>
TpuExecutable::ExecutePerReplica(
    absl::Span<const std::vector<TpuBuffer*>> arguments) {
  const int num_local = static_cast<int>(local_devices_.size());
  if (static_cast<int>(arguments.size()) != num_local) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Attempted to execute with %d argument lists when local device "
        "count is %d (total replica count: %d, partition count: %d).",
        arguments.size(), num_local, num_replicas(), num_partitions()));
  }
  // Check everything first: a replica launched alone could wait forever in a
  // collective for one that was never launched.
  for (int i = 0; i < num_local; ++i) {
    absl::Status status = CheckArguments(i, arguments[i]);
    if (!status.ok()) return status;
  }
  absl::Status result_check = CheckBufferShape(result_shape_);
  if (!result_check.ok()) return result_check;

  // Launch in parallel: each launch allocates and issues driver calls, and
  // all cores should start as close together as possible.
  std::vector<absl::StatusOr<Launched>> launches(num_local);
  absl::BlockingCounter counter(num_local);
  for (int i = 0; i < num_local; ++i) {
    client_->thread_pool()->Schedule(
        [this, i, &arguments, &launches, &counter] {
          launches[i] = Launch(i, arguments[i]);
          counter.DecrementCount();
        });
  }
  counter.Wait();

  std::vector<Launched> launched;
  for (int i = 0; i < num_local; ++i) {
    if (!launches[i].ok()) return launches[i].status();
    launched.push_back(*std::move(launches[i]));
  }
  absl::Status status = Await(launched);
  if (!status.ok()) return status;

  std::vector<std::vector<std::unique_ptr<TpuBuffer>>> results;
  for (Launched& l : launched) {
    absl::StatusOr<std::vector<std::unique_ptr<TpuBuffer>>> outputs =
        Unpack(std::move(l.result));
    if (!outputs.ok()) return outputs.status();
    results.push_back(*std::move(outputs));
  }
  return results;
}

}  // namespace tpu::client
