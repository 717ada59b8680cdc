#include "tools/tpu_run/run_module.h"

#include <algorithm>
#include <chrono>
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
#include "tools/tpu_run/npz.h"
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

// Rebuilds a literal of `shape` from its array leaves in order.
Literal AssembleLeaves(const Shape& shape, std::vector<Literal>& leaves,
                       size_t& next) {
  if (!shape.IsTuple()) return std::move(leaves[next++]);
  std::vector<Literal> elements;
  for (const Shape& element : shape.tuple_shapes()) {
    elements.push_back(AssembleLeaves(element, leaves, next));
  }
  return Literal::Tuple(std::move(elements));
}

// A tuple parameter from `<dir>/arg_<i>.npz` or `<dir>/arg_<i>/arr_<j>.npy`,
// leaf j (in order, nested tuples flattened) from member or file arr_<j>.
absl::StatusOr<Literal> LoadTupleArgument(const std::string& dir, size_t i,
                                          const Shape& shape) {
  const std::vector<Shape> leaf_shapes = shape.Leaves();
  const fs::path npz = fs::path(dir) / absl::StrCat("arg_", i, ".npz");
  const fs::path folder = fs::path(dir) / absl::StrCat("arg_", i);
  std::error_code ec;
  std::vector<NpyArray> arrays;
  std::string source;
  if (fs::exists(npz, ec)) {
    source = npz.string();
    absl::StatusOr<std::vector<NpzMember>> members = ReadNpzFile(source);
    if (!members.ok()) return members.status();
    for (size_t j = 0; j < leaf_shapes.size(); ++j) {
      const std::string name = absl::StrCat("arr_", j);
      auto it =
          std::find_if(members->begin(), members->end(),
                       [&](const NpzMember& m) { return m.name == name; });
      if (it == members->end()) {
        return absl::NotFoundError(absl::StrFormat(
            "%s: no member %s; parameter %d is %s with %d leaves (save them "
            "with numpy.savez(path, *leaves))",
            source, name, i, shape.ToString(), leaf_shapes.size()));
      }
      arrays.push_back(std::move(it->array));
    }
    if (members->size() != leaf_shapes.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: has %d arrays but parameter %d (%s) has %d leaves", source,
          members->size(), i, shape.ToString(), leaf_shapes.size()));
    }
  } else if (fs::is_directory(folder, ec)) {
    source = folder.string();
    for (size_t j = 0; j < leaf_shapes.size(); ++j) {
      absl::StatusOr<NpyArray> array =
          ReadNpyFile((folder / absl::StrCat("arr_", j, ".npy")).string());
      if (!array.ok()) return array.status();
      arrays.push_back(*std::move(array));
    }
  } else {
    return absl::NotFoundError(absl::StrFormat(
        "%s or %s/: missing; parameter %d is the tuple %s (give its %d "
        "leaves as arr_<j> members of the .npz or arr_<j>.npy files)",
        npz.string(), folder.string(), i, shape.ToString(),
        leaf_shapes.size()));
  }
  std::vector<Literal> leaves;
  for (size_t j = 0; j < leaf_shapes.size(); ++j) {
    absl::StatusOr<Literal> leaf = LiteralFromNpy(arrays[j], leaf_shapes[j]);
    if (!leaf.ok()) {
      return Annotate(leaf.status(), absl::StrCat(source, " leaf arr_", j));
    }
    leaves.push_back(*std::move(leaf));
  }
  size_t next = 0;
  return AssembleLeaves(shape, leaves, next);
}

absl::StatusOr<Literal> LoadArrayArgument(const std::string& dir, size_t i,
                                          const Shape& shape,
                                          size_t parameter_count) {
  const std::string path =
      (fs::path(dir) / absl::StrCat("arg_", i, ".npy")).string();
  absl::StatusOr<NpyArray> array = ReadNpyFile(path);
  if (!array.ok()) {
    if (absl::IsNotFound(array.status())) {
      return absl::NotFoundError(absl::StrFormat(
          "%s: missing; parameter %d is %s (the program takes %d "
          "parameters)",
          path, i, shape.ToString(), parameter_count));
    }
    return array.status();
  }
  absl::StatusOr<Literal> literal = LiteralFromNpy(*array, shape);
  if (!literal.ok()) return Annotate(literal.status(), path);
  return literal;
}

// A file or folder for a parameter past the last one means the inputs were
// made for a different program.
absl::Status CheckNoExtraInput(const std::string& dir, size_t count) {
  for (const std::string& name :
       {absl::StrCat("arg_", count, ".npy"),
        absl::StrCat("arg_", count, ".npz"), absl::StrCat("arg_", count)}) {
    const std::string extra = (fs::path(dir) / name).string();
    std::error_code ec;
    if (fs::exists(extra, ec)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: exists but the program takes only %d parameters", extra, count));
    }
  }
  return absl::OkStatus();
}

// The arguments of one replica, read from files or made up.
absl::StatusOr<std::vector<Literal>> LoadArguments(
    const RunOptions& options, const std::vector<Shape>& parameters,
    int replica) {
  std::vector<Literal> arguments;
  const std::string dir = ReplicaDir(options.inputs_dir, replica);
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Shape& shape = parameters[i];
    bool has_token = false;
    shape.ForEachLeaf([&](const Shape& leaf, const ShapeIndex&) {
      has_token |= leaf.IsToken();
    });
    if (has_token) {
      return absl::UnimplementedError(absl::StrFormat(
          "parameter %d of the entry computation is %s; a TPU buffer holds "
          "arrays and tuples of arrays, not tokens",
          i, shape.ToString()));
    }
    absl::StatusOr<Literal> literal =
        options.random_inputs
            ? RandomLiteral(shape, uint64_t{1000003} * replica + i)
        : shape.IsTuple() ? LoadTupleArgument(dir, i, shape)
                          : LoadArrayArgument(dir, i, shape, parameters.size());
    if (!literal.ok()) return literal.status();
    arguments.push_back(*std::move(literal));
  }
  if (!options.random_inputs) {
    if (absl::Status s = CheckNoExtraInput(dir, parameters.size()); !s.ok()) {
      return s;
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

using ReplicaResults =
    std::vector<std::vector<std::unique_ptr<client::TpuBuffer>>>;

// One execution of every replica (replica r on the executable's device r),
// waited for.
absl::StatusOr<ReplicaResults> ExecuteOnce(
    client::TpuExecutable& executable,
    const std::vector<std::vector<client::TpuBuffer*>>& arguments) {
  ReplicaResults results;
  if (arguments.size() == 1) {
    absl::StatusOr<std::vector<std::unique_ptr<client::TpuBuffer>>> result =
        executable.Execute(arguments[0]);
    if (!result.ok()) return Annotate(result.status(), "execution failed");
    results.push_back(*std::move(result));
    return results;
  }
  absl::StatusOr<ReplicaResults> result =
      executable.ExecutePerReplica(arguments);
  if (!result.ok()) return Annotate(result.status(), "execution failed");
  return result;
}

}  // namespace

std::string StepTimes(std::vector<double> step_ms) {
  std::sort(step_ms.begin(), step_ms.end());
  const size_t n = step_ms.size();
  const double median =
      n % 2 == 1 ? step_ms[n / 2] : (step_ms[n / 2 - 1] + step_ms[n / 2]) / 2;
  return absl::StrFormat(
      "step time over %d runs after a warm-up: min %.3f ms, median %.3f ms, "
      "max %.3f ms",
      n, step_ms.front(), median, step_ms.back());
}

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
  if (options.repeat < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--repeat must be at least 0, got %d", options.repeat));
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

  absl::StatusOr<ReplicaResults> results = ExecuteOnce(**executable, arguments);
  if (!results.ok()) return results.status();
  if (options.repeat > 0) {
    // The run above was the warm-up; time `repeat` more.
    std::vector<double> step_ms;
    for (int step = 0; step < options.repeat; ++step) {
      const auto start = std::chrono::steady_clock::now();
      results = ExecuteOnce(**executable, arguments);
      if (!results.ok()) return results.status();
      step_ms.push_back(std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count());
    }
    out << StepTimes(step_ms) << "\n";
  }

  for (size_t r = 0; r < results->size(); ++r) {
    for (auto& buffer : (*results)[r]) {
      absl::Status status = buffer->CopyToHostAsync();
      if (!status.ok()) return status;
    }
  }
  for (size_t r = 0; r < results->size(); ++r) {
    std::vector<Literal> leaves;
    for (auto& buffer : (*results)[r]) {
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
