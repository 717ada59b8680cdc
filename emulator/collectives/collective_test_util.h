#ifndef SOFTWARE_TPU_EMULATOR_COLLECTIVES_COLLECTIVE_TEST_UTIL_H_
#define SOFTWARE_TPU_EMULATOR_COLLECTIVES_COLLECTIVE_TEST_UTIL_H_

// Test helpers: compile HLO text for N replicas and run one launch per core,
// each on its own thread, meeting at a CollectiveHub.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "emulator/collectives/collective_hub.h"
#include "emulator/interpreter/executable.h"
#include "gtest/gtest.h"
#include "hlo/text/hlo_parser.h"

namespace tpu::emulator::testing_util {

using interpreter::CompileOptions;
using interpreter::DeviceAssignment;
using interpreter::Executable;
using interpreter::ExecutionContext;

inline std::unique_ptr<Executable> Compile(const std::string& text,
                                           int replicas) {
  absl::StatusOr<xla::HloModuleProto> module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  CompileOptions options;
  options.num_replicas = replicas;
  absl::StatusOr<std::unique_ptr<Executable>> executable =
      Executable::Compile(*module, options);
  EXPECT_TRUE(executable.ok()) << executable.status();
  return executable.ok() ? *std::move(executable) : nullptr;
}

inline CollectiveHubOptions HubOptions(int cores) {
  CollectiveHubOptions options;
  for (int c = 0; c < cores; ++c) options.cores.push_back(c);
  options.report_waits_after = absl::ZeroDuration();
  return options;
}

// Runs one launch of `executable` as `replica` on core `core`.
inline absl::StatusOr<Literal> RunLaunch(
    const Executable& executable, CollectiveHub& hub, int core, int replica,
    const std::vector<int>& devices, std::vector<Literal> arguments,
    const std::string& program = "p",
    const std::atomic<bool>* cancelled = nullptr) {
  LaunchInfo info;
  info.core = core;
  info.client_id = 1;
  info.program = program;
  info.fingerprint = program;
  info.assignment = devices;
  info.cancelled = cancelled;
  absl::StatusOr<std::unique_ptr<Launch>> launch = hub.BeginLaunch(info);
  if (!launch.ok()) return launch.status();
  DeviceAssignment assignment;
  assignment.num_replicas = static_cast<int>(devices.size());
  assignment.devices = devices;
  ExecutionContext context;
  context.replica_id = replica;
  context.assignment = &assignment;
  context.collectives = launch->get();
  context.cancelled = cancelled;
  return executable.Execute(std::move(arguments), context, nullptr);
}

// Runs every replica on its own thread (core r plays replica r); returns
// the results in replica order.
inline std::vector<Literal> RunReplicated(const std::string& text, int replicas,
                                          const std::vector<Literal>& inputs) {
  std::unique_ptr<Executable> executable = Compile(text, replicas);
  if (executable == nullptr) return {};
  CollectiveHub hub(HubOptions(replicas));
  std::vector<int> devices;
  for (int r = 0; r < replicas; ++r) devices.push_back(r);
  std::vector<absl::StatusOr<Literal>> results(replicas, Literal());
  std::vector<std::thread> threads;
  // Start in reverse order: arrival order must not matter.
  for (int r = replicas - 1; r >= 0; --r) {
    threads.emplace_back([&, r] {
      results[r] = RunLaunch(*executable, hub, r, r, devices, {inputs[r]});
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<Literal> out;
  for (auto& result : results) {
    EXPECT_TRUE(result.ok()) << result.status();
    out.push_back(result.ok() ? *std::move(result) : Literal());
  }
  return out;
}

inline Literal S32(std::vector<int64_t> dims, std::vector<int32_t> values) {
  return Literal::FromVector<int32_t>(xla::S32, std::move(dims),
                                      absl::MakeConstSpan(values));
}

inline std::vector<int32_t> Ints(const Literal& literal) {
  auto data = literal.data<int32_t>();
  return std::vector<int32_t>(data.begin(), data.end());
}

// An s32 `add` computation, for reductions.
inline constexpr char kAdd[] = R"(
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}
)";

// A module with `add` and `body` as its entry computation.
inline std::string ModuleWithAdd(const std::string& body) {
  return absl::StrCat("HloModule m\n", kAdd, "\nENTRY e {\n", body, "\n}\n");
}

}  // namespace tpu::emulator::testing_util

#endif  // SOFTWARE_TPU_EMULATOR_COLLECTIVES_COLLECTIVE_TEST_UTIL_H_
