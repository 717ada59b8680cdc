// `tpu_ctl trace` against one worker of a pod slice, through real
// tpu_emulator processes: two workers of four cores each (--pod_hosts=2,
// --pod_addresses) run one replicated program with an all-reduce across
// both; the trace that worker 0 returns holds both workers (a process each,
// named after it, their cores' program slices) and passes the format
// checker. With worker 1 dead, the trace still comes back, from worker 0,
// naming the missing worker.

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/tpu_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_executable.h"
#include "driver/driver_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hlo/literal.h"
#include "hlo/text/hlo_parser.h"
#include "tests/e2e/trace_check.h"
#include "tests/pod/loopback_slice.h"
#include "tools/lib/ports.h"
#include "tools/lib/subprocess.h"

namespace tpu {
namespace {

using ::testing::HasSubstr;
using tools::RunfilePath;
using tools::ScratchDir;
using tools::ServerProcess;

constexpr int kCoresPerWorker = 4;
constexpr int kReplicas = 2 * kCoresPerWorker;

constexpr char kSliceStep[] = R"(
HloModule slice_step
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}
ENTRY e {
  p = s32[2] parameter(0)
  ROOT sum = s32[2] all-reduce(p), replica_groups={}, to_apply=add
}
)";

Literal S32(std::vector<int64_t> dims, std::vector<int32_t> values) {
  return Literal::FromVector<int32_t>(xla::S32, std::move(dims), values);
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

class PodTraceE2ETest : public ::testing::Test {
 protected:
  static std::string Name() {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  static std::string Scratch(const std::string& file) {
    return absl::StrCat(ScratchDir(), "/", Name(), "_", file);
  }

  // Two workers of 2 chips x 2 cores, hosts 0 and 1 of one slice.
  void StartSlice() {
    auto slice = tests::StartLoopbackSlice(2, Name());
    ASSERT_TRUE(slice.ok()) << slice.status();
    slice_ = *std::move(slice);
  }

  // tpu_ctl against worker 0.
  tools::CommandResult TpuCtl(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        RunfilePath("tools/tpu_ctl/tpu_ctl"),
        absl::StrCat("--target=", slice_[0]->address())};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = tools::RunCommand(argv, absl::Seconds(60));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : tools::CommandResult();
  }

  // kSliceStep on all 8 cores of the slice: every replica gets the sum.
  void RunAcrossTheSlice() {
    auto client = client::TpuClient::Get(absl::StrCat(
        "grpc+pod://", slice_[0]->address(), ",", slice_[1]->address()));
    ASSERT_TRUE(client.ok()) << client.status();
    auto module = hlo::ParseHloModule(kSliceStep);
    ASSERT_TRUE(module.ok()) << module.status();
    client::CompileOptions options;
    options.num_replicas = kReplicas;
    auto executable = client::TpuExecutable::Compile(*module, options, *client);
    ASSERT_TRUE(executable.ok()) << executable.status();
    std::vector<std::unique_ptr<client::TpuBuffer>> inputs;
    std::vector<std::vector<client::TpuBuffer*>> arguments;
    for (int r = 0; r < kReplicas; ++r) {
      auto input = client::TpuBuffer::FromLiteral(S32({2}, {r, 1}), *client, r);
      ASSERT_TRUE(input.ok()) << input.status();
      inputs.push_back(*std::move(input));
      arguments.push_back({inputs.back().get()});
    }
    auto results = (*executable)->ExecutePerReplica(arguments);
    ASSERT_TRUE(results.ok()) << results.status();
    for (int r = 0; r < kReplicas; ++r) {
      auto value = (*results)[r][0]->ToLiteral();
      ASSERT_TRUE(value.ok()) << value.status();
      EXPECT_EQ(*value, S32({2}, {28, kReplicas})) << "replica " << r;
    }
  }

  // The process names of `events`, by pid.
  static std::map<double, std::string> ProcessNames(
      const std::vector<e2e::TraceEvent>& events) {
    std::map<double, std::string> names;
    for (const e2e::TraceEvent& e : events) {
      if (e.ph == "M" && e.name == "process_name") {
        EXPECT_EQ(names.count(e.pid), 0u) << "pid " << e.pid << " named twice";
        names[e.pid] = e2e::Str(e.args, "name");
      }
    }
    return names;
  }

  std::vector<std::unique_ptr<ServerProcess>> slice_;
};

TEST_F(PodTraceE2ETest, OneTraceHoldsEveryCoreOfBothWorkers) {
  StartSlice();
  tools::CommandResult started = TpuCtl({"trace", "start"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  EXPECT_EQ(started.err, "");
  RunAcrossTheSlice();
  const std::string json_path = Scratch("trace.json");
  const std::string svg_path = Scratch("trace.svg");
  tools::CommandResult stopped =
      TpuCtl({"trace", "stop", absl::StrCat("--out=", json_path),
              absl::StrCat("--svg=", svg_path)});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  // No worker is missing.
  EXPECT_EQ(stopped.err, "");

  const std::vector<e2e::TraceEvent> events =
      e2e::CheckTraceFormat(ReadFile(json_path));
  // One process per worker, named after it.
  const std::map<double, std::string> names = ProcessNames(events);
  EXPECT_EQ(names,
            (std::map<double, std::string>{
                {0, absl::StrCat("worker 0 (", slice_[0]->address(), ")")},
                {1, absl::StrCat("worker 1 (", slice_[1]->address(), ")")}}));
  // One program slice per core of both workers, on its worker's process,
  // on the track of its global core id.
  std::map<double, int> programs_per_core;
  std::map<std::pair<double, double>, std::string> core_track_names;
  for (const e2e::TraceEvent& e : events) {
    if (e.ph == "M" && e.name == "thread_name") {
      core_track_names[{e.pid, e.tid}] = e2e::Str(e.args, "name");
    }
    if (e.ph != "X" || e.cat != "program") continue;
    EXPECT_TRUE(absl::StartsWith(e.name, "slice_step #")) << e.name;
    EXPECT_EQ(e2e::Str(e.args, "program"), "slice_step");
    EXPECT_EQ(e.pid, static_cast<int>(e.tid) / kCoresPerWorker)
        << "core " << e.tid << " on the wrong worker's process";
    ++programs_per_core[e.tid];
  }
  std::map<double, int> expected;
  for (int core = 0; core < kReplicas; ++core) expected[core] = 1;
  EXPECT_EQ(programs_per_core, expected);
  EXPECT_EQ(core_track_names[std::make_pair(1.0, 5.0)], "core 5");
  EXPECT_EQ(core_track_names[std::make_pair(0.0, 2.0)], "core 2");
  // The SVG draws both workers' cores.
  const std::string svg = ReadFile(svg_path);
  EXPECT_THAT(svg, HasSubstr("core 0"));
  EXPECT_THAT(svg, HasSubstr("core 7"));
}

TEST_F(PodTraceE2ETest, DeadWorkerIsNamedAndTheOthersTraceComesBack) {
  StartSlice();
  tools::CommandResult started = TpuCtl({"trace", "start"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  slice_[1]->Kill();
  const std::string json_path = Scratch("trace.json");
  tools::CommandResult stopped =
      TpuCtl({"trace", "stop", absl::StrCat("--out=", json_path)});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  const std::string worker1 =
      absl::StrCat("worker 1 (", slice_[1]->address(), ")");
  EXPECT_THAT(stopped.err, HasSubstr(absl::StrCat("tpu_ctl: ", worker1,
                                                  " is missing from the trace: "
                                                  "UNAVAILABLE: ")));
  const std::vector<e2e::TraceEvent> events =
      e2e::CheckTraceFormat(ReadFile(json_path));
  const std::map<double, std::string> names = ProcessNames(events);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names.at(0), absl::StrCat("worker 0 (", slice_[0]->address(), ")"));
  EXPECT_TRUE(absl::StartsWith(
      names.at(1), absl::StrCat(worker1, ": no trace (UNAVAILABLE: ")))
      << names.at(1);
  // Worker 0's own tracks are there; worker 1 has none.
  std::set<double> pids_with_tracks;
  for (const e2e::TraceEvent& e : events) {
    if (e.ph == "M" && e.name == "thread_name") pids_with_tracks.insert(e.pid);
  }
  EXPECT_EQ(pids_with_tracks, std::set<double>{0});
}

}  // namespace
}  // namespace tpu
