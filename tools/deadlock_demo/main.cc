// deadlock_demo: the README's deadlock walkthrough as a program. Two
// replicated programs, step_a and step_b, each with one all-reduce over
// cores 0 and 1, are launched in opposite orders: core 0 runs step_a then
// step_b, core 1 runs step_b then step_a. Each core then waits in its first
// program's all-reduce for the other core, which waits in the other
// program's: a deadlock. The client warns at its warn interval and gives up
// at its deadline, as the reference client does.
//
//   deadlock_demo --target=grpc://HOST:PORT [--warn_interval=300ms]
//                 [--max_time=1s] [--hold]
//
// Everything goes to stdout, one line per event, so a run can be compared
// with another. With --hold it keeps its client (and so the deadlock) until
// SIGINT/SIGTERM, for `tpu_ctl waits` to look at. Exit code 1 when the
// programs did not complete (the point of the demo), 0 if they did, 2 for
// bad usage or a failed setup.

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/execute_wait.h"
#include "client/tpu_client.h"
#include "hlo/shape.h"
#include "hlo/text/hlo_parser.h"

ABSL_FLAG(std::string, target, "grpc://127.0.0.1:8470",
          "The worker, as a driver address.");
ABSL_FLAG(absl::Duration, warn_interval, absl::Milliseconds(300),
          "How often the client warns while the programs have not completed.");
ABSL_FLAG(absl::Duration, max_time, absl::Seconds(1),
          "When the client gives up with DEADLINE_EXCEEDED.");
ABSL_FLAG(bool, hold, false,
          "After giving up, keep the client open (the cores stay deadlocked) "
          "until SIGINT or SIGTERM.");

namespace tpu::tools {
namespace {

// A two-replica program whose all-reduce is named after it.
std::string Step(const std::string& name) {
  return absl::StrCat(
      "HloModule ", name, R"(
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}
ENTRY e {
  p = s32[1] parameter(0)
  ROOT ar_)",
      name.substr(name.size() - 1),
      R"( = s32[1] all-reduce(p), replica_groups={}, to_apply=add
}
)");
}

void Say(const std::string& line) {
  printf("%s\n", line.c_str());
  fflush(stdout);
}

int Setup(const std::string& what, const absl::Status& status) {
  fprintf(stderr, "deadlock_demo: %s failed: %s\n", what.c_str(),
          status.ToString().c_str());
  return 2;
}

int Run() {
  // SIGINT/SIGTERM are taken by sigwait below (--hold), in every thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string target = absl::GetFlag(FLAGS_target);
  client::ClientOptions options;
  options.execute_warn_interval = absl::GetFlag(FLAGS_warn_interval);
  options.execute_max_time = absl::GetFlag(FLAGS_max_time);
  auto client = client::TpuClient::Get(target, options);
  if (!client.ok())
    return Setup(absl::StrCat("connecting to ", target), client.status());
  driver::TpuDriver* driver = (*client)->driver();

  // Everything each launch needs exists before any launch, so each core's
  // queue holds its programs in exactly the order they are launched.
  const std::vector<std::string> names = {"step_a", "step_b"};
  std::vector<std::unique_ptr<driver::CompiledProgramHandle>> compiled;
  std::vector<std::unique_ptr<driver::LoadedProgramHandle>> loaded;  // [p][c]
  for (const std::string& name : names) {
    auto module = hlo::ParseHloModule(Step(name));
    if (!module.ok()) return Setup("parsing " + name, module.status());
    xla::HloProto proto;
    *proto.mutable_hlo_module() = *module;
    compiled.push_back(driver->CompileProgram(proto, 2, {}));
    for (int core = 0; core < 2; ++core) {
      loaded.push_back(driver->LoadProgram(core, compiled.back().get(), {}));
    }
  }
  const xla::ShapeProto shape = Shape::Array(xla::S32, {1}).ToProto();
  std::vector<std::unique_ptr<driver::BufferHandle>> inputs, outputs;
  static const int32_t kOne = 1;
  for (int i = 0; i < 4; ++i) {
    const int core = i % 2;
    inputs.push_back(
        driver->Allocate(core, tpu_driver::MemoryRegion::HBM, shape, {}));
    outputs.push_back(
        driver->Allocate(core, tpu_driver::MemoryRegion::HBM, shape, {}));
    absl::Status written =
        driver->TransferToDevice(&kOne, inputs.back().get(), {})->Await();
    if (!written.ok()) return Setup("writing an input", written);
  }
  for (const auto& program : loaded) {
    if (absl::Status s = program->OnReady()->Await(); !s.ok()) {
      return Setup("loading the programs", s);
    }
  }
  Say("compiled step_a and step_b: 2 replicas (cores 0 and 1), one "
      "all-reduce each");

  xla::DeviceAssignmentProto assignment;
  assignment.set_replica_count(2);
  assignment.set_computation_count(1);
  auto* devices = assignment.add_computation_devices();
  devices->add_replica_device_ids(0);
  devices->add_replica_device_ids(1);
  // (program, core) in launch order: the opposite orders.
  const std::vector<std::pair<int, int>> order = {
      {0, 0}, {1, 1}, {1, 0}, {0, 1}};
  std::vector<std::shared_ptr<driver::Event>> events;
  for (int i = 0; i < static_cast<int>(order.size()); ++i) {
    const auto [program, core] = order[i];
    events.push_back(driver->ExecuteProgram(
        loaded[program * 2 + core].get(), {inputs[i].get()}, {outputs[i].get()},
        assignment, {}));
  }
  Say("launched: core 0 runs step_a then step_b; core 1 runs step_b then "
      "step_a");

  absl::Status status = client::AwaitExecution(
      events, options.execute_warn_interval, options.execute_max_time,
      [](absl::string_view warning) {
        Say(absl::StrCat("warning: ", warning));
      });
  if (status.ok()) {
    Say("all four programs completed");
    return 0;
  }
  Say(absl::StrCat("error: ", status.ToString()));
  if (absl::GetFlag(FLAGS_hold)) {
    Say(
        absl::StrCat("holding the deadlocked cores until interrupted; look "
                     "with: tpu_ctl --target=",
                     target, " waits"));
    int received = 0;
    sigwait(&signals, &received);
    // Gone at once, as a user's program killed by Ctrl-C: the worker
    // releases the client when its connection breaks.
    fflush(stdout);
    _exit(1);
  }
  return 1;
}

}  // namespace
}  // namespace tpu::tools

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Launches two replicated programs on cores 0 and 1 in opposite orders "
      "and shows the client's warnings and deadline.\nUsage: deadlock_demo "
      "--target=grpc://HOST:PORT [--warn_interval=300ms] [--max_time=1s] "
      "[--hold]");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() > 1) {
    fprintf(stderr, "deadlock_demo: unexpected argument '%s'; see --help\n",
            args[1]);
    return 2;
  }
  return tpu::tools::Run();
}
