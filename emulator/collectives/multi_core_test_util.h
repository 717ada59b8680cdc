#ifndef SOFTWARE_TPU_EMULATOR_COLLECTIVES_MULTI_CORE_TEST_UTIL_H_
#define SOFTWARE_TPU_EMULATOR_COLLECTIVES_MULTI_CORE_TEST_UTIL_H_

// Test helper: run every (replica, partition) of a program on a core of its
// own (core = replica * partitions + partition), each on its own thread,
// meeting at one CollectiveHub, with per-core arguments.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "emulator/collectives/collective_hub.h"
#include "emulator/interpreter/executable.h"
#include "hlo/text/hlo_parser.h"

namespace tpu::emulator::testing_util {

// Compiles `text` for `replicas` replicas; the compile error, if any.
inline absl::StatusOr<std::unique_ptr<interpreter::Executable>> CompileFor(
    const std::string& text, int replicas) {
  absl::StatusOr<xla::HloModuleProto> module = hlo::ParseHloModule(text);
  if (!module.ok()) return module.status();
  interpreter::CompileOptions options;
  options.num_replicas = replicas;
  return interpreter::Executable::Compile(*module, options);
}

// Runs one launch per core (cores started in reverse order: arrival order
// must not matter) and returns each core's result, in core order.
inline std::vector<absl::StatusOr<Literal>> RunOnCores(
    const interpreter::Executable& executable, int replicas, int partitions,
    const std::vector<std::vector<Literal>>& arguments) {
  const int cores = replicas * partitions;
  CollectiveHubOptions options;
  for (int c = 0; c < cores; ++c) options.cores.push_back(c);
  options.report_waits_after = absl::ZeroDuration();
  CollectiveHub hub(options);
  interpreter::DeviceAssignment assignment;
  assignment.num_replicas = replicas;
  assignment.num_partitions = partitions;
  for (int c = 0; c < cores; ++c) assignment.devices.push_back(c);
  std::vector<absl::StatusOr<Literal>> results(cores, Literal());
  std::vector<std::thread> threads;
  for (int core = cores - 1; core >= 0; --core) {
    threads.emplace_back([&, core] {
      LaunchInfo info;
      info.core = core;
      info.client_id = 1;
      info.program = "p";
      info.fingerprint = "p";
      info.assignment = assignment.devices;
      absl::StatusOr<std::unique_ptr<Launch>> launch = hub.BeginLaunch(info);
      if (!launch.ok()) {
        results[core] = launch.status();
        return;
      }
      interpreter::ExecutionContext context;
      context.replica_id = core / partitions;
      context.partition_id = core % partitions;
      context.assignment = &assignment;
      context.collectives = launch->get();
      std::vector<Literal> args = core < static_cast<int>(arguments.size())
                                      ? arguments[core]
                                      : std::vector<Literal>();
      results[core] = executable.Execute(std::move(args), context, nullptr);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace tpu::emulator::testing_util

#endif  // SOFTWARE_TPU_EMULATOR_COLLECTIVES_MULTI_CORE_TEST_UTIL_H_
