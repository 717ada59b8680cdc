#include "tools/tpu_run/run_module.h"

#include <filesystem>
#include <memory>
#include <system_error>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/compile_options.h"
#include "client/tpu_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_executable.h"
#include "hlo/text/hlo_printer.h"
#include "tools/tpu_run/module_file.h"
#include "tools/tpu_run/npy.h"
#include "tools/tpu_run/npy_literal.h"
#include "tools/tpu_run/random_literal.h"

namespace tpu {
namespace {

namespace fs = std::filesystem;

absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  return absl::Status(status.code(),
                      absl::StrCat(context, ": ", status.message()));
}

std::string ReplicaDir(const std::string& root, int replica) {
  return (fs::path(root) / absl::StrCat("replica_", replica)).string();
}

// The arguments of one replica, read from .npy files or made up.
absl::StatusOr<std::vector<Literal>> LoadArguments(
    const RunOptions& options, const std::vector<Shape>& parameters,
    int replica) {
  std::vector<Literal> arguments;
  const std::string dir = ReplicaDir(options.inputs_dir, replica);
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Shape& shape = parameters[i];
    if (!shape.IsArray()) {
      return absl::UnimplementedError(absl::StrFormat(
          "parameter %d of the entry computation is %s; tpu_run feeds array "
          "parameters only",
          i, shape.ToString()));
    }
    if (options.random_inputs) {
      absl::StatusOr<Literal> literal =
          RandomLiteral(shape, uint64_t{1000003} * replica + i);
      if (!literal.ok()) return literal.status();
      arguments.push_back(*std::move(literal));
      continue;
    }
    const std::string path =
        (fs::path(dir) / absl::StrCat("arg_", i, ".npy")).string();
    absl::StatusOr<NpyArray> array = ReadNpyFile(path);
    if (!array.ok()) {
      if (absl::IsNotFound(array.status())) {
        return absl::NotFoundError(absl::StrFormat(
            "%s: missing; parameter %d is %s (the program takes %d "
            "parameters)",
            path, i, shape.ToString(), parameters.size()));
      }
      return array.status();
    }
    absl::StatusOr<Literal> literal = LiteralFromNpy(*array, shape);
    if (!literal.ok()) return Annotate(literal.status(), path);
    arguments.push_back(*std::move(literal));
  }
  if (!options.random_inputs) {
    // A file beyond the last parameter means the inputs were made for a
    // different program.
    const std::string extra =
        (fs::path(dir) / absl::StrCat("arg_", parameters.size(), ".npy"))
            .string();
    std::error_code ec;
    if (fs::exists(extra, ec)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: exists but the program takes only %d parameters",
                          extra, parameters.size()));
    }
  }
  return arguments;
}

absl::Status WriteOutputs(const RunOptions& options, int replica,
                          const std::vector<Literal>& leaves,
                          std::ostream& out) {
  if (options.outputs_dir.empty()) {
    for (size_t j = 0; j < leaves.size(); ++j) {
      out << "replica " << replica << " out_" << j << ": "
          << leaves[j].ToString() << "\n";
    }
    return absl::OkStatus();
  }
  const std::string dir = ReplicaDir(options.outputs_dir, replica);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, ": cannot create directory: ", ec.message()));
  }
  for (size_t j = 0; j < leaves.size(); ++j) {
    const std::string path =
        (fs::path(dir) / absl::StrCat("out_", j, ".npy")).string();
    absl::StatusOr<NpyArray> array = NpyFromLiteral(leaves[j]);
    if (!array.ok()) return Annotate(array.status(), path);
    absl::Status status = WriteNpyFile(path, *array);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunModule(const RunOptions& options, std::ostream& out) {
  if (options.target.empty()) {
    return absl::InvalidArgumentError(
        "--target is required, e.g. --target=grpc://localhost:8470 or "
        "--target=local://");
  }
  if (options.module_path.empty()) {
    return absl::InvalidArgumentError(
        "--module is required: a binary HloProto or HloModuleProto (.pb) or "
        "HLO text");
  }
  if (options.replicas < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--replicas must be at least 1, got %d", options.replicas));
  }
  if (!options.inputs_dir.empty() && options.random_inputs) {
    return absl::InvalidArgumentError(
        "pass either --inputs_dir or --random_inputs, not both");
  }

  absl::StatusOr<xla::HloModuleProto> module =
      ReadModuleFile(options.module_path);
  if (!module.ok()) return module.status();
  if (options.dump_hlo) out << hlo::PrintHloModule(*module);

  absl::StatusOr<std::shared_ptr<client::TpuClient>> client =
      client::TpuClient::Get(options.target, options.client_options);
  if (!client.ok()) return client.status();  // names the address
  if ((*client)->local_device_count() < options.replicas) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--replicas=%d but %s has only %d TPU cores", options.replicas,
        options.target, (*client)->local_device_count()));
  }

  client::CompileOptions compile_options;
  compile_options.num_replicas = options.replicas;
  absl::StatusOr<std::unique_ptr<client::TpuExecutable>> executable =
      client::TpuExecutable::Compile(*module, compile_options, *client);
  if (!executable.ok()) {
    return Annotate(executable.status(),
                    absl::StrCat("compiling ", options.module_path));
  }
  const std::vector<Shape>& parameters = (*executable)->parameter_shapes();
  if (!parameters.empty() && options.inputs_dir.empty() &&
      !options.random_inputs) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the program takes %d parameters: pass --inputs_dir=DIR with "
        "DIR/replica_<r>/arg_<i>.npy, or --random_inputs",
        parameters.size()));
  }

  // Buffers per replica; replica r runs on the executable's local device r.
  const auto& devices = (*executable)->local_devices();
  std::vector<std::vector<std::unique_ptr<client::TpuBuffer>>> owned(
      devices.size());
  std::vector<std::vector<client::TpuBuffer*>> arguments(devices.size());
  for (size_t r = 0; r < devices.size(); ++r) {
    absl::StatusOr<std::vector<Literal>> literals =
        LoadArguments(options, parameters, static_cast<int>(r));
    if (!literals.ok()) return literals.status();
    for (size_t i = 0; i < literals->size(); ++i) {
      absl::StatusOr<std::unique_ptr<client::TpuBuffer>> buffer =
          client::TpuBuffer::FromLiteral((*literals)[i], *client,
                                         devices[r]->id());
      if (!buffer.ok()) {
        return Annotate(buffer.status(),
                        absl::StrFormat("replica %d argument %d", r, i));
      }
      arguments[r].push_back(buffer->get());
      owned[r].push_back(*std::move(buffer));
    }
  }

  std::vector<std::vector<std::unique_ptr<client::TpuBuffer>>> results;
  if (devices.size() == 1) {
    absl::StatusOr<std::vector<std::unique_ptr<client::TpuBuffer>>> result =
        (*executable)->Execute(arguments[0]);
    if (!result.ok()) return Annotate(result.status(), "execution failed");
    results.push_back(*std::move(result));
  } else {
    absl::StatusOr<std::vector<std::vector<std::unique_ptr<client::TpuBuffer>>>>
        result = (*executable)->ExecutePerReplica(arguments);
    if (!result.ok()) return Annotate(result.status(), "execution failed");
    results = *std::move(result);
  }

  for (size_t r = 0; r < results.size(); ++r) {
    for (auto& buffer : results[r]) {
      absl::Status status = buffer->CopyToHostAsync();
      if (!status.ok()) return status;
    }
  }
  for (size_t r = 0; r < results.size(); ++r) {
    std::vector<Literal> leaves;
    for (auto& buffer : results[r]) {
      absl::StatusOr<Literal> literal = buffer->ToLiteral();
      if (!literal.ok()) {
        return Annotate(literal.status(),
                        absl::StrFormat("reading results of replica %d", r));
      }
      for (Literal& leaf : literal->Leaves()) leaves.push_back(std::move(leaf));
    }
    absl::Status status =
        WriteOutputs(options, static_cast<int>(r), leaves, out);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace tpu
