// What the emulated TPU did, seen through a real tpu_emulator process: the
// timeline of a replicated run checked against the trace-event format, the
// trace of a deadlock (tpu_emulator --trace_out, written on SIGTERM), the
// wait-for graph as DOT, stats after a known sequence of operations, and
// per-program profiles.

#include <signal.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/tpu_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_executable.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "hlo/literal.h"
#include "hlo/text/hlo_parser.h"
#include "proto/control.pb.h"
#include "tests/e2e/driver_launches.h"
#include "tests/e2e/trace_check.h"
#include "tools/lib/subprocess.h"
#include "tools/tpu_ctl/xml_check.h"

namespace tpu {
namespace {

using e2e::CheckTraceFormat;
using e2e::Str;
using e2e::TraceEvent;
using ::testing::HasSubstr;

constexpr int kReplicas = 4;

constexpr char kReplicatedStep[] = R"(
HloModule replicated_step
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}
ENTRY e {
  p = s32[2] parameter(0)
  doubled = s32[2] add(p, p)
  sum = s32[2] all-reduce(doubled), replica_groups={}, to_apply=add
  ROOT neg = s32[2] negate(sum)
}
)";

// Two replicas that meet at one all-reduce; `name` tells programs apart.
std::string MeetingProgram(const std::string& name) {
  return absl::StrCat("HloModule ", name, R"(
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}
ENTRY e {
  p = s32[1] parameter(0)
  ROOT s = s32[1] all-reduce(p), replica_groups={}, to_apply=add
}
)");
}

Literal S32(std::vector<int64_t> dims, std::vector<int32_t> values) {
  return Literal::FromVector<int32_t>(xla::S32, std::move(dims), values);
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

class TraceE2ETest : public ::testing::Test {
 protected:
  void StartWorker(std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {
        tools::RunfilePath("tools/tpu_emulator/tpu_emulator"), "--port=0",
        "--chips=4", "--cores_per_chip=2", "--compute_threads=2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto worker =
        tools::ServerProcess::Start(argv, tools::ScratchDir(), TestName());
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = *std::move(worker);
  }

  static std::string TestName() {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  static std::string Scratch(const std::string& file) {
    return absl::StrCat(tools::ScratchDir(), "/", TestName(), "_", file);
  }

  std::shared_ptr<client::TpuClient> Connect() {
    auto client = client::TpuClient::Get(
        absl::StrCat("grpc://", worker_->address()), client::ClientOptions());
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *client : nullptr;
  }

  tools::CommandResult TpuCtl(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        tools::RunfilePath("tools/tpu_ctl/tpu_ctl"),
        absl::StrCat("--target=", worker_->address())};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = tools::RunCommand(argv, absl::Seconds(30));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : tools::CommandResult();
  }

  // `launches` runs of kReplicatedStep on cores 0..kReplicas-1.
  void RunReplicated(std::shared_ptr<client::TpuClient> client, int launches) {
    auto module = hlo::ParseHloModule(kReplicatedStep);
    ASSERT_TRUE(module.ok()) << module.status();
    client::CompileOptions options;
    options.num_replicas = kReplicas;
    auto executable = client::TpuExecutable::Compile(*module, options, client);
    ASSERT_TRUE(executable.ok()) << executable.status();
    for (int launch = 0; launch < launches; ++launch) {
      std::vector<std::unique_ptr<client::TpuBuffer>> inputs;
      std::vector<std::vector<client::TpuBuffer*>> arguments;
      for (int r = 0; r < kReplicas; ++r) {
        auto input =
            client::TpuBuffer::FromLiteral(S32({2}, {r, launch}), client, r);
        ASSERT_TRUE(input.ok()) << input.status();
        inputs.push_back(*std::move(input));
        arguments.push_back({inputs.back().get()});
      }
      auto results = (*executable)->ExecutePerReplica(arguments);
      ASSERT_TRUE(results.ok()) << results.status();
      for (int r = 0; r < kReplicas; ++r) {
        auto value = (*results)[r][0]->ToLiteral();
        ASSERT_TRUE(value.ok());
        // -(2 * sum of r) = -12, -(2 * 4 * launch).
        EXPECT_EQ(*value, S32({2}, {-12, -8 * launch}));
      }
    }
  }

  std::unique_ptr<tools::ServerProcess> worker_;
};

TEST_F(TraceE2ETest, ReplicatedRunTraceIsValidAndComplete) {
  StartWorker();
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  tools::CommandResult started =
      TpuCtl({"trace", "start", "--trace_instructions"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  RunReplicated(client, 2);
  const std::string json_path = Scratch("trace.json");
  const std::string svg_path = Scratch("trace.svg");
  tools::CommandResult stopped =
      TpuCtl({"trace", "stop", absl::StrCat("--out=", json_path),
              absl::StrCat("--svg=", svg_path)});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_THAT(stopped.out, HasSubstr(absl::StrCat("wrote ", json_path)));

  const std::vector<TraceEvent> events = CheckTraceFormat(ReadFile(json_path));
  // One program slice per core and launch, named after the module.
  std::map<std::pair<double, std::string>, int> programs;
  std::set<double> cores_with_waits_or_exchanges, cores_with_instructions;
  int compiles = 0, transfers_to = 0, transfers_from = 0;
  std::map<double, std::string> track_names;
  for (const TraceEvent& e : events) {
    if (e.ph == "M" && e.name == "thread_name") {
      track_names[e.tid] = Str(e.args, "name");
    }
    if (e.ph != "X") continue;
    if (e.cat == "program") ++programs[{e.tid, e.name}];
    if (e.cat == "collective exchange") {
      EXPECT_EQ(e.name, "sum");
      EXPECT_EQ(Str(e.args, "kind"), "all-reduce");
      cores_with_waits_or_exchanges.insert(e.tid);
    }
    if (e.cat == "instruction") {
      cores_with_instructions.insert(e.tid);
      EXPECT_THAT(std::vector<std::string>({"doubled", "sum", "neg"}),
                  ::testing::Contains(e.name));
    }
    if (e.cat == "compile") {
      ++compiles;
      EXPECT_EQ(e.name, "compile replicated_step");
    }
    if (e.cat == "transfer" && Str(e.args, "direction") == "host to device") {
      ++transfers_to;
      EXPECT_EQ(e.args.fields().at("bytes").number_value(), 8);
    }
    if (e.cat == "transfer" && Str(e.args, "direction") == "device to host") {
      ++transfers_from;
    }
  }
  for (int core = 0; core < kReplicas; ++core) {
    for (int launch = 0; launch < 2; ++launch) {
      EXPECT_EQ((programs[{core, absl::StrCat("replicated_step #", launch)}]),
                1)
          << "core " << core << " launch " << launch;
    }
    EXPECT_TRUE(cores_with_waits_or_exchanges.count(core)) << core;
    EXPECT_TRUE(cores_with_instructions.count(core)) << core;
    EXPECT_EQ(track_names[core], absl::StrCat("core ", core));
  }
  EXPECT_EQ(programs.size(), 2u * kReplicas);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(transfers_to, 2 * kReplicas);
  EXPECT_EQ(transfers_from, 2 * kReplicas);

  // The picture: well-formed, one row per core plus the client's rows.
  const std::string svg = ReadFile(svg_path);
  EXPECT_TRUE(tools::CheckWellFormedXml(svg).ok())
      << tools::CheckWellFormedXml(svg);
  for (int core = 0; core < kReplicas; ++core) {
    EXPECT_EQ(Count(svg, absl::StrCat("data-track=\"core ", core, "\"")), 1);
  }
  EXPECT_GE(Count(svg, "<g class=\"row\""), kReplicas + 1);
  EXPECT_THAT(svg, HasSubstr("data-track=\"client "));

  // The JSON converts to the same picture offline.
  const std::string again = Scratch("again.svg");
  tools::CommandResult converted =
      TpuCtl({"trace", "svg", absl::StrCat("--in=", json_path),
              absl::StrCat("--svg=", again)});
  ASSERT_EQ(converted.exit_code, 0) << converted.err;
  EXPECT_EQ(ReadFile(again), svg);
  // Stopping twice says how to start.
  tools::CommandResult twice =
      TpuCtl({"trace", "stop", absl::StrCat("--out=", json_path)});
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_THAT(twice.err, HasSubstr("no trace is being recorded; start one"));
}

// Core 0 waits in X for core 1, core 1 waits in P for core 0: the DOT names
// both, and the trace written on SIGTERM shows both cores' waits.
TEST_F(TraceE2ETest, DeadlockTraceAndPictureShowBothWaits) {
  const std::string json_path = Scratch("deadlock.json");
  StartWorker({absl::StrCat("--trace_out=", json_path)});
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  e2e::DriverLaunches launches(client->driver());
  std::vector<std::shared_ptr<driver::Event>> events;
  for (const auto& [program, core] :
       {std::pair<std::string, int>{"X", 0}, {"P", 1}}) {
    events.push_back(launches.Launch(MeetingProgram(program), core, 2));
  }
  // Until both wait (bounded; no timing is asserted).
  tools::CommandResult dot;
  for (int attempt = 0; attempt < 600; ++attempt) {
    dot = TpuCtl({"waits", "--format=dot"});
    if (dot.out.find("deadlock:") != std::string::npos) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(dot.exit_code, 0) << dot.err;
  EXPECT_THAT(dot.out, HasSubstr("core0 [label=\"core 0\\nwaiting in X #0\""));
  EXPECT_THAT(dot.out, HasSubstr("core1 [label=\"core 1\\nwaiting in P #0\""));
  EXPECT_THAT(dot.out, HasSubstr("core0 -> core1 [label=\"X #0\\nall-reduce "
                                 "s\", color=red"));
  EXPECT_THAT(dot.out, HasSubstr("core1 -> core0 [label=\"P #0\\nall-reduce "
                                 "s\", color=red"));
  EXPECT_THAT(dot.out, HasSubstr("deadlock: core 0 -> core 1 -> core 0"));
  // Kept beside the trace (the README's pictures are drawn from these).
  std::ofstream(Scratch("waits.dot")) << dot.out;

  // SIGTERM: the worker writes the trace as it shuts down.
  EXPECT_EQ(worker_->process().Stop(SIGTERM, absl::Seconds(30)), 0);
  const std::vector<TraceEvent> trace = CheckTraceFormat(ReadFile(json_path));
  std::map<double, std::vector<std::string>> waits, programs;
  for (const TraceEvent& e : trace) {
    if (e.ph != "X") continue;
    if (e.cat == "collective wait") {
      waits[e.tid].push_back(absl::StrCat(Str(e.args, "program"), " ", e.name));
    }
    if (e.cat == "program") programs[e.tid].push_back(e.name);
  }
  EXPECT_THAT(waits[0], ::testing::ElementsAre("X s wait"));
  EXPECT_THAT(waits[1], ::testing::ElementsAre("P s wait"));
  EXPECT_THAT(programs[0], ::testing::ElementsAre("X #0"));
  EXPECT_THAT(programs[1], ::testing::ElementsAre("P #0"));
  events.clear();
  launches.Release();
}

// Known operations, exact counts.
TEST_F(TraceE2ETest, StatsCountWhatWasDone) {
  StartWorker({"--hbm_bytes_per_core=1048576"});
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  driver::TpuDriver* driver = client->driver();
  const xla::ShapeProto shape = Shape::Array(xla::S32, {4}).ToProto();
  std::vector<std::unique_ptr<driver::BufferHandle>> buffers;
  for (int core : {0, 0, 0, 1}) {
    buffers.push_back(
        driver->Allocate(core, tpu_driver::MemoryRegion::HBM, shape, {}));
  }
  auto module = hlo::ParseHloModule(R"(
HloModule negate_it
ENTRY e {
  p = s32[4] parameter(0)
  ROOT n = s32[4] negate(p)
})");
  ASSERT_TRUE(module.ok());
  xla::HloProto proto;
  *proto.mutable_hlo_module() = *module;
  auto program = driver->CompileProgram(proto, 1, {});
  auto on_core0 = driver->LoadProgram(0, program.get(), {});
  static const int32_t kValues[4] = {1, 2, 3, 4};
  std::shared_ptr<driver::Event> written =
      driver->TransferToDevice(kValues, buffers[0].get(), {});
  std::shared_ptr<driver::Event> last = written;
  for (int run = 0; run < 3; ++run) {
    last = driver->ExecuteProgram(on_core0.get(), {buffers[0].get()},
                                  {buffers[1].get()}, {}, {last.get()});
  }
  ASSERT_TRUE(last->Await().ok());
  ASSERT_TRUE(driver->Deallocate(std::move(buffers[2]), {})->Await().ok());

  tools::CommandResult json = TpuCtl({"stats", "--format=json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  tpu_emulator::WorkerStats stats;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(json.out, &stats).ok())
      << json.out;
  ASSERT_EQ(stats.cores_size(), 8);
  const tpu_emulator::CoreStats& core0 = stats.cores(0);
  EXPECT_EQ(core0.core(), 0);
  EXPECT_EQ(core0.hbm_in_use(), 2 * 16);
  EXPECT_EQ(core0.hbm_capacity(), 1048576);
  EXPECT_EQ(core0.live_buffers(), 2);
  EXPECT_EQ(core0.programs_loaded(), 1);
  EXPECT_EQ(core0.programs_run(), 3);
  EXPECT_EQ(core0.state(), tpu_emulator::CoreWait::IDLE);
  EXPECT_EQ(core0.queue_depth(), 0);
  const tpu_emulator::CoreStats& core1 = stats.cores(1);
  EXPECT_EQ(core1.hbm_in_use(), 16);
  EXPECT_EQ(core1.live_buffers(), 1);
  EXPECT_EQ(core1.programs_loaded(), 0);
  EXPECT_EQ(core1.programs_run(), 0);
  EXPECT_EQ(stats.cores(2).live_buffers(), 0);
  ASSERT_EQ(stats.clients_size(), 1);
  const tpu_emulator::ClientStats& mine = stats.clients(0);
  EXPECT_EQ(mine.hbm_in_use(), 3 * 16);
  EXPECT_EQ(mine.live_buffers(), 3);
  EXPECT_EQ(mine.programs_compiled(), 1);
  EXPECT_EQ(mine.programs_loaded(), 1);
  EXPECT_EQ(mine.programs_run(), 3);
  EXPECT_EQ(mine.busy_micros(), core0.busy_micros());
  EXPECT_GT(stats.host_rss_bytes(), 0);
  EXPECT_FALSE(stats.tracing());

  tools::CommandResult text = TpuCtl({"stats"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("1 client\n"));
  EXPECT_THAT(text.out, HasSubstr("\n0      idle         0          32 B/1.0 "
                                  "MiB        2       1       3 "));
  tools::CommandResult top = TpuCtl({"top", "--iterations=2"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_EQ(Count(top.out, "tpu_ctl top "), 2);
  EXPECT_EQ(Count(top.out, "\n0      idle "), 2);
  buffers.clear();
}

TEST_F(TraceE2ETest, ProfileListsTheProgramsInstructions) {
  StartWorker({"--profile_programs"});
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  RunReplicated(client, 3);
  tools::CommandResult profile = TpuCtl({"profile", "replicated_step"});
  ASSERT_EQ(profile.exit_code, 0) << profile.err;
  EXPECT_THAT(profile.out, HasSubstr("program replicated_step ("));
  // Three launches on four cores: every instruction ran 12 times.
  EXPECT_THAT(profile.out, HasSubstr(" 12 runs, "));
  for (const char* row : {"doubled                      add                 "
                          "      12",
                          "sum                          all-reduce          "
                          "      12",
                          "neg                          negate              "
                          "      12"}) {
    EXPECT_THAT(profile.out, HasSubstr(row));
  }
  // Bytes: operands plus result, 8 + 8 + 8 for add per run.
  EXPECT_THAT(profile.out, HasSubstr("   288 B\n"));
  tools::CommandResult absent = TpuCtl({"profile", "no_such_program"});
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_THAT(absent.err, HasSubstr("no profile of program 'no_such_program'"));
}

}  // namespace
}  // namespace tpu
