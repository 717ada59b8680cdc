// Replicated programs with collectives through a real tpu_emulator process:
// exact values over grpc://, a hang that the client's deadline reports with
// the worker's wait report, tpu_ctl's view of the same hang, and the launch
// barrier that turns it into FAILED_PRECONDITION.

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/tpu_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_executable.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hlo/literal.h"
#include "hlo/text/hlo_parser.h"
#include "tests/e2e/driver_launches.h"
#include "tools/lib/subprocess.h"

namespace tpu {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kAllReduceAndGather[] = R"(
HloModule replicated_step
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}
ENTRY e {
  p = s32[2] parameter(0)
  sum = s32[2] all-reduce(p), replica_groups={}, to_apply=add
  id = u32[] replica-id()
  ids = s32[] convert(id)
  one = s32[1] reshape(ids)
  gathered = s32[8] all-gather(one), dimensions={0}, replica_groups={}
  ROOT t = (s32[2], s32[8]) tuple(sum, gathered)
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

class CollectivesE2ETest : public ::testing::Test {
 protected:
  void StartWorker(std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {
        tools::RunfilePath("tools/tpu_emulator/tpu_emulator"), "--port=0",
        "--chips=4", "--cores_per_chip=2", "--compute_threads=2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const std::string name =
        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    auto worker = tools::ServerProcess::Start(argv, tools::ScratchDir(), name);
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = *std::move(worker);
  }

  std::shared_ptr<client::TpuClient> Connect(client::ClientOptions options) {
    auto client = client::TpuClient::Get(
        absl::StrCat("grpc://", worker_->address()), options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *client : nullptr;
  }

  // Launches one replica of a two-replica `program` (replicas on cores 0
  // and 1) on `core` only, through the driver: the core then waits in its
  // all-reduce for the other one.
  std::shared_ptr<driver::Event> LaunchOneReplica(client::TpuClient& client,
                                                  const std::string& program,
                                                  int core = 0) {
    if (launches_ == nullptr) {
      launches_ = std::make_unique<e2e::DriverLaunches>(client.driver());
    }
    return launches_->Launch(program, core, /*replicas=*/2);
  }

  // Runs both replicas of `program` through the client (cores 0 and 1).
  absl::Status RunBothReplicas(std::shared_ptr<client::TpuClient> client,
                               const std::string& program) {
    auto module = hlo::ParseHloModule(program);
    if (!module.ok()) return module.status();
    client::CompileOptions options;
    options.num_replicas = 2;
    auto executable = client::TpuExecutable::Compile(*module, options, client);
    if (!executable.ok()) return executable.status();
    std::vector<std::unique_ptr<client::TpuBuffer>> inputs;
    std::vector<std::vector<client::TpuBuffer*>> arguments;
    for (int r = 0; r < 2; ++r) {
      auto input = client::TpuBuffer::FromLiteral(S32({1}, {r}), client, r);
      if (!input.ok()) return input.status();
      inputs.push_back(*std::move(input));
      arguments.push_back({inputs.back().get()});
    }
    return (*executable)->ExecutePerReplica(arguments).status();
  }

  absl::StatusOr<tools::CommandResult> TpuCtl(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        tools::RunfilePath("tools/tpu_ctl/tpu_ctl"),
        absl::StrCat("--target=", worker_->address())};
    argv.insert(argv.end(), args.begin(), args.end());
    return tools::RunCommand(argv, absl::Seconds(30));
  }

  void ReleaseDriverObjects() { launches_.reset(); }

  std::unique_ptr<tools::ServerProcess> worker_;
  std::unique_ptr<e2e::DriverLaunches> launches_;
};

TEST_F(CollectivesE2ETest, EightReplicasReduceAndGatherExactly) {
  StartWorker();
  std::shared_ptr<client::TpuClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  auto module = hlo::ParseHloModule(kAllReduceAndGather);
  ASSERT_TRUE(module.ok()) << module.status();
  client::CompileOptions options;
  options.num_replicas = 8;
  auto executable = client::TpuExecutable::Compile(*module, options, client);
  ASSERT_TRUE(executable.ok()) << executable.status();
  for (int step = 0; step < 3; ++step) {  // back-to-back launches
    std::vector<std::unique_ptr<client::TpuBuffer>> inputs;
    std::vector<std::vector<client::TpuBuffer*>> arguments;
    for (int r = 0; r < 8; ++r) {
      auto input =
          client::TpuBuffer::FromLiteral(S32({2}, {r, step}), client, r);
      ASSERT_TRUE(input.ok()) << input.status();
      inputs.push_back(*std::move(input));
      arguments.push_back({inputs.back().get()});
    }
    auto results = (*executable)->ExecutePerReplica(arguments);
    ASSERT_TRUE(results.ok()) << results.status();
    for (int r = 0; r < 8; ++r) {
      auto sum = (*results)[r][0]->ToLiteral();
      auto gathered = (*results)[r][1]->ToLiteral();
      ASSERT_TRUE(sum.ok() && gathered.ok());
      EXPECT_EQ(*sum, S32({2}, {28, 8 * step})) << "replica " << r;
      EXPECT_EQ(*gathered, S32({8}, {0, 1, 2, 3, 4, 5, 6, 7}));
    }
  }
}

// Core 0 waits in program X for core 1; core 1 waits in program P for core
// 0: the client's deadline fires with the reference messages, the wait
// report beside them names the cycle, and tpu_ctl shows the same.
TEST_F(CollectivesE2ETest, HangIsReportedByTheClientAndByTpuCtl) {
  StartWorker({"--report_waits_after=200ms"});
  absl::Mutex mu;
  std::vector<std::string> warnings;
  client::ClientOptions options;
  options.execute_warn_interval = absl::Milliseconds(300);
  options.execute_max_time = absl::Seconds(1);
  options.warning_handler = [&](absl::string_view line) {
    absl::MutexLock lock(&mu);
    warnings.emplace_back(line);
  };
  std::shared_ptr<client::TpuClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  std::shared_ptr<driver::Event> stuck =
      LaunchOneReplica(*client, MeetingProgram("X"));

  absl::Status status = RunBothReplicas(client, MeetingProgram("P"));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_EQ(status.message(),
            "TPU program took more than 1 seconds to complete.");
  {
    absl::MutexLock lock(&mu);
    ASSERT_GE(warnings.size(), 2u);
    EXPECT_EQ(warnings[0],
              "TPU Execute is taking a long time. This might be due to a "
              "deadlock between multiple TPU cores or a very slow program.");
    // The report follows the warning, one warning per line.
    EXPECT_EQ(warnings[1], "Wait report:");
    EXPECT_THAT(
        warnings,
        Contains(HasSubstr("core 0 (host 0): waiting program X launch 0")));
    EXPECT_THAT(warnings,
                Contains("    core 1 waits in P launch 0 at all-reduce s "
                         "[s32[1]]: a different program"));
    EXPECT_EQ(warnings.back(),
              "deadlock: core 0 waits for core 1 waits for core 0");
  }

  auto text = TpuCtl({"waits"});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->exit_code, 0) << text->err;
  EXPECT_THAT(text->out, HasSubstr("deadlock: core 0 waits for core 1 waits "
                                   "for core 0"));
  auto json = TpuCtl({"waits", "--format=json", "--history=3"});
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->exit_code, 0) << json->err;
  EXPECT_THAT(json->out, HasSubstr("{\"core\": 0, \"host_id\": 0, \"state\": "
                                   "\"waiting\", \"program\": \"X\", "
                                   "\"launch\": 0"));
  EXPECT_THAT(json->out, HasSubstr("\"waiting_for\": [1]"));
  EXPECT_THAT(json->out, HasSubstr("\"cycles\": [[0, 1]]"));
  EXPECT_THAT(json->out, HasSubstr("\"kind\": \"all-reduce\", \"signature\": "
                                   "\"s32[1]\", \"group\": [0, 1], \"state\": "
                                   "\"waiting\""));
  // The worker logged the report once the wait passed 200 ms.
  EXPECT_THAT(worker_->Stderr(),
              HasSubstr("a collective has waited more than 200ms for its "
                        "peers:\ncore 0 (host 0): waiting program X"));
  // Closing the client releases both cores; the worker then serves anew.
  ReleaseDriverObjects();
  stuck.reset();
  client.reset();
  std::shared_ptr<client::TpuClient> fresh = Connect({});
  ASSERT_NE(fresh, nullptr);
  EXPECT_TRUE(RunBothReplicas(fresh, MeetingProgram("P")).ok());
  auto idle = TpuCtl({"waits"});
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle->out, "no core is running or waiting\n");
}

// Core 0 starts X and core 1 starts P, both for the same two-core
// assignment: with the launch barrier both fail at launch instead of
// hanging in their collectives.
TEST_F(CollectivesE2ETest, LaunchBarrierFailsMismatchedPrograms) {
  StartWorker({"--launch_barrier"});
  std::shared_ptr<client::TpuClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  std::shared_ptr<driver::Event> x =
      LaunchOneReplica(*client, MeetingProgram("X"), 0);
  std::shared_ptr<driver::Event> p =
      LaunchOneReplica(*client, MeetingProgram("P"), 1);
  for (const auto& event : {x, p}) {
    absl::Status status = event->Await();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_THAT(status.message(),
                HasSubstr("did not start the same program for the same "
                          "launch: core 0 started X, core 1 started P"));
  }
  // Matching launches still meet.
  EXPECT_TRUE(RunBothReplicas(client, MeetingProgram("P")).ok());
  ReleaseDriverObjects();
}

// ragged-all-to-all and send/recv between replicas through a real worker:
// replica 0 sends row 0 to itself and rows 1-2 to replica 1; replica 1
// sends row 0 to replica 0 (at row 1) and rows 2-3 to itself (at row 2);
// and replica 0 sends its whole input to replica 1, which receives it,
// while replica 0 receives nothing (zeros).
TEST_F(CollectivesE2ETest, RaggedAllToAllAndSendRecvBetweenReplicas) {
  constexpr char kProgram[] = R"(
HloModule ragged_and_send_recv
ENTRY e {
  input = s32[4] parameter(0)
  output = s32[4] parameter(1)
  input_offsets = s32[2] parameter(2)
  send_sizes = s32[2] parameter(3)
  output_offsets = s32[2] parameter(4)
  recv_sizes = s32[2] parameter(5)
  ra2a = s32[4] ragged-all-to-all(input, output, input_offsets, send_sizes,
      output_offsets, recv_sizes), replica_groups={{0,1}}
  tok = token[] after-all()
  send = (s32[4], u32[], token[]) send(input, tok),
      frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  recv = (s32[4], u32[], token[]) recv(tok),
      frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  send-done = token[] send-done(send)
  recv-done = (s32[4], token[]) recv-done(recv)
  received = s32[4] get-tuple-element(recv-done), index=0
  ROOT t = (s32[4], s32[4]) tuple(ra2a, received)
}
)";
  StartWorker();
  std::shared_ptr<client::TpuClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  auto module = hlo::ParseHloModule(kProgram);
  ASSERT_TRUE(module.ok()) << module.status();
  client::CompileOptions options;
  options.num_replicas = 2;
  auto executable = client::TpuExecutable::Compile(*module, options, client);
  ASSERT_TRUE(executable.ok()) << executable.status();
  const std::vector<std::vector<Literal>> values = {
      {S32({4}, {1, 2, 3, 4}), S32({4}, {-1, -1, -1, -1}), S32({2}, {0, 1}),
       S32({2}, {1, 2}), S32({2}, {0, 0}), S32({2}, {1, 1})},
      {S32({4}, {5, 6, 7, 8}), S32({4}, {-1, -1, -1, -1}), S32({2}, {0, 2}),
       S32({2}, {1, 2}), S32({2}, {1, 2}), S32({2}, {2, 2})},
  };
  std::vector<std::unique_ptr<client::TpuBuffer>> inputs;
  std::vector<std::vector<client::TpuBuffer*>> arguments(2);
  for (int r = 0; r < 2; ++r) {
    for (const Literal& value : values[r]) {
      auto input = client::TpuBuffer::FromLiteral(value, client, r);
      ASSERT_TRUE(input.ok()) << input.status();
      inputs.push_back(*std::move(input));
      arguments[r].push_back(inputs.back().get());
    }
  }
  auto results = (*executable)->ExecutePerReplica(arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  auto ragged0 = (*results)[0][0]->ToLiteral();
  auto ragged1 = (*results)[1][0]->ToLiteral();
  auto received0 = (*results)[0][1]->ToLiteral();
  auto received1 = (*results)[1][1]->ToLiteral();
  ASSERT_TRUE(ragged0.ok() && ragged1.ok() && received0.ok() && received1.ok());
  EXPECT_EQ(*ragged0, S32({4}, {1, 5, -1, -1}));
  EXPECT_EQ(*ragged1, S32({4}, {2, 3, 7, 8}));
  EXPECT_EQ(*received0, S32({4}, {0, 0, 0, 0}));
  EXPECT_EQ(*received1, S32({4}, {1, 2, 3, 4}));
}

}  // namespace
}  // namespace tpu
