// Fault rules through a real tpu_emulator process: every action of the
// grammar (crash, drop_stream, hang, fail, hbm, skip, delay, slow) as a
// client sees it, Close and Reset cutting held operations short, bad rules
// stopping the worker from starting, and tpu_ctl faults add/list/clear.
// No assertion depends on elapsed time: delays and slowdowns are made long
// and observed through who waits for whom, then cut short by Close.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kAddOne[] = R"(
HloModule add_one
ENTRY e {
  p = s32[1] parameter(0)
  one = s32[1] constant({1})
  ROOT r = s32[1] add(p, one)
}
)";

// Two replicas that meet at one all-reduce named `s`.
constexpr char kMeeting[] = R"(
HloModule meeting
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}
ENTRY e {
  p = s32[1] parameter(0)
  ROOT s = s32[1] all-reduce(p), replica_groups={}, to_apply=add
}
)";

constexpr int64_t kHbmBytes = int64_t{1} << 20;

Literal S32(std::vector<int32_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Literal::FromVector<int32_t>(xla::S32, {n}, values);
}

class FaultsE2ETest : public ::testing::Test {
 protected:
  void StartWorker(std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {
        tools::RunfilePath("tools/tpu_emulator/tpu_emulator"),
        "--port=0",
        "--chips=1",
        "--cores_per_chip=2",
        "--compute_threads=2",
        absl::StrCat("--hbm_bytes_per_core=", kHbmBytes)};
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

  // A client whose executes warn after 300 ms and give up after 1 s.
  std::shared_ptr<client::TpuClient> ConnectImpatient() {
    client::ClientOptions options;
    options.execute_warn_interval = absl::Milliseconds(300);
    options.execute_max_time = absl::Seconds(1);
    options.warning_handler = [](absl::string_view) {};
    return Connect(options);
  }

  // add_one on core 0 through the client: {41} -> {42}.
  absl::StatusOr<Literal> AddOne(std::shared_ptr<client::TpuClient> client) {
    auto module = hlo::ParseHloModule(kAddOne);
    if (!module.ok()) return module.status();
    auto executable = client::TpuExecutable::Compile(*module, {}, client);
    if (!executable.ok()) return executable.status();
    auto input = client::TpuBuffer::FromLiteral(S32({41}), client, 0);
    if (!input.ok()) return input.status();
    auto result = (*executable)->Execute({input->get()});
    if (!result.ok()) return result.status();
    return (*result)[0]->ToLiteral();
  }

  // Both replicas of kMeeting (cores 0 and 1) through the client.
  absl::Status RunBothReplicas(std::shared_ptr<client::TpuClient> client) {
    auto module = hlo::ParseHloModule(kMeeting);
    if (!module.ok()) return module.status();
    client::CompileOptions options;
    options.num_replicas = 2;
    auto executable = client::TpuExecutable::Compile(*module, options, client);
    if (!executable.ok()) return executable.status();
    std::vector<std::unique_ptr<client::TpuBuffer>> inputs;
    std::vector<std::vector<client::TpuBuffer*>> arguments;
    for (int r = 0; r < 2; ++r) {
      auto input = client::TpuBuffer::FromLiteral(S32({r + 1}), client, r);
      if (!input.ok()) return input.status();
      inputs.push_back(*std::move(input));
      arguments.push_back({inputs.back().get()});
    }
    auto results = (*executable)->ExecutePerReplica(arguments);
    if (!results.ok()) return results.status();
    for (int r = 0; r < 2; ++r) {
      auto value = (*results)[r][0]->ToLiteral();
      if (!value.ok()) return value.status();
      if (!(*value == S32({3}))) {
        return absl::InternalError(
            absl::StrCat("replica ", r, " got ", value->ToString()));
      }
    }
    return absl::OkStatus();
  }

  // Launches `hlo` on `core` through the driver; with `replicas` = 2 the
  // program's replicas are on cores 0 and 1. Returns the execute's event.
  std::shared_ptr<driver::Event> Launch(client::TpuClient& client,
                                        const std::string& hlo, int core,
                                        int replicas) {
    if (launches_ == nullptr) {
      launches_ = std::make_unique<e2e::DriverLaunches>(client.driver());
    }
    return launches_->Launch(hlo, core, replicas);
  }

  void ReleaseDriverObjects() { launches_.reset(); }

  absl::StatusOr<tools::CommandResult> TpuCtl(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        tools::RunfilePath("tools/tpu_ctl/tpu_ctl"),
        absl::StrCat("--target=", worker_->address())};
    argv.insert(argv.end(), args.begin(), args.end());
    return tools::RunCommand(argv, absl::Seconds(30));
  }

  // Polls `tpu_ctl waits` until its text contains `wanted` (or gives up
  // after many tries): waits for a state, not for a time.
  std::string AwaitWaits(const std::string& wanted) {
    std::string last;
    for (int attempt = 0; attempt < 400; ++attempt) {
      auto result = TpuCtl({"waits"});
      if (result.ok()) last = result->out;
      if (absl::StrContains(last, wanted)) return last;
      absl::SleepFor(absl::Milliseconds(25));
    }
    ADD_FAILURE() << "tpu_ctl waits never showed \"" << wanted << "\"; last:\n"
                  << last;
    return last;
  }

  // Free HBM of each local core, from QuerySystemInfo.
  std::vector<int64_t> HbmAvailable(client::TpuClient& client) {
    std::vector<int64_t> available;
    auto info = client.driver()->QuerySystemInfo();
    EXPECT_TRUE(info.ok()) << info.status();
    if (!info.ok()) return available;
    for (const auto& core : info->local_core()) {
      available.push_back(core.hbm_bytes_available());
    }
    return available;
  }

  // A new client runs a program exactly and finds every core's HBM free.
  void ExpectServesAnew() {
    std::shared_ptr<client::TpuClient> fresh = Connect({});
    ASSERT_NE(fresh, nullptr);
    EXPECT_EQ(HbmAvailable(*fresh),
              (std::vector<int64_t>{kHbmBytes, kHbmBytes}));
    auto value = AddOne(fresh);
    ASSERT_TRUE(value.ok()) << value.status();
    EXPECT_EQ(*value, S32({42}));
  }

  std::unique_ptr<tools::ServerProcess> worker_;
  std::unique_ptr<e2e::DriverLaunches> launches_;
};

TEST_F(FaultsE2ETest, CrashIsALostWorker) {
  StartWorker({"--fault=execute crash"});
  std::shared_ptr<client::TpuClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  auto value = AddOne(client);
  EXPECT_EQ(value.status().code(), absl::StatusCode::kUnavailable)
      << value.status();
  EXPECT_THAT(value.status().message(), HasSubstr(worker_->address()));
  absl::StatusOr<int> exit_code = worker_->process().Wait(absl::Seconds(30));
  ASSERT_TRUE(exit_code.ok()) << exit_code.status();
  EXPECT_EQ(*exit_code, 3);
  EXPECT_THAT(worker_->Stderr(),
              HasSubstr("tpu_emulator: fault rule 1 (execute crash) crashed "
                        "the worker as operation "));
}

TEST_F(FaultsE2ETest, DropStreamFailsEveryPendingEventOfTheClient) {
  StartWorker({"--fault=execute drop_stream"});
  std::shared_ptr<client::TpuClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  std::shared_ptr<driver::Event> executed =
      Launch(*client, kAddOne, /*core=*/0, /*replicas=*/1);
  int32_t result = 0;
  driver::Event* after = executed.get();
  std::shared_ptr<driver::Event> read = client->driver()->TransferFromDevice(
      launches_->last_output(), &result, {after});
  for (const auto& event : {executed, read}) {
    absl::Status status = event->Await();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    EXPECT_THAT(status.message(), HasSubstr(worker_->address()));
    EXPECT_THAT(status.message(),
                HasSubstr("was dropped by fault rule 1 (execute "
                          "drop_stream) as operation "));
  }
  ReleaseDriverObjects();
  client.reset();
  // The rule still drops every execute's stream: clear it, then a new
  // client is served normally with all of its HBM.
  auto cleared = TpuCtl({"faults", "clear"});
  ASSERT_TRUE(cleared.ok());
  EXPECT_EQ(cleared->out, "cleared 1 fault rule(s)\n");
  ExpectServesAnew();
}

TEST_F(FaultsE2ETest, HangHitsTheClientDeadlineAndCloseReleasesIt) {
  StartWorker({"--fault=execute core=0 nth=1 hang"});
  std::shared_ptr<client::TpuClient> client = ConnectImpatient();
  ASSERT_NE(client, nullptr);
  auto value = AddOne(client);
  EXPECT_EQ(value.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(value.status().message(),
            "TPU program took more than 1 seconds to complete.");
  client.reset();  // Close: the held execute ends, its buffers go
  ExpectServesAnew();
  auto list = TpuCtl({"faults", "list"});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->out, "rule 1: execute core=0 nth=1 hang (matched 1)\n");
}

TEST_F(FaultsE2ETest, ResetReleasesAHeldTransfer) {
  StartWorker({"--fault=transfer_to core=1 hang"});
  std::shared_ptr<client::TpuClient> held = Connect({});
  ASSERT_NE(held, nullptr);
  driver::TpuDriver* driver = held->driver();
  std::unique_ptr<driver::BufferHandle> buffer =
      driver->Allocate(1, tpu_driver::MemoryRegion::HBM,
                       Shape::Array(xla::S32, {1}).ToProto(), {});
  static const int32_t kSeven = 7;
  std::shared_ptr<driver::Event> transfer =
      driver->TransferToDevice(&kSeven, buffer.get(), {});
  EXPECT_EQ(transfer->AwaitWithTimeout(absl::ZeroDuration()), std::nullopt);
  std::shared_ptr<client::TpuClient> resetter = Connect({});
  ASSERT_NE(resetter, nullptr);
  ASSERT_TRUE(resetter->driver()->Reset().ok());
  absl::Status status = transfer->Await();
  EXPECT_FALSE(status.ok());
  ASSERT_TRUE(TpuCtl({"faults", "clear"}).ok());
  buffer.reset();
  transfer.reset();
  held.reset();
  resetter.reset();
  ExpectServesAnew();
}

TEST_F(FaultsE2ETest, FailGivesTheExactStatus) {
  StartWorker({"--fault=execute fail=FAILED_PRECONDITION:the test said no",
               "--fault=compile program=meeting fail=INTERNAL"});
  std::shared_ptr<client::TpuClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  auto value = AddOne(client);
  EXPECT_EQ(value.status(), absl::FailedPreconditionError("the test said no"));
  absl::Status compile = RunBothReplicas(client);
  EXPECT_EQ(compile.code(), absl::StatusCode::kInternal) << compile;
  EXPECT_THAT(compile.message(),
              HasSubstr("compile failed: fault rule 2 (compile "
                        "program=meeting fail=INTERNAL)."));
  // The worker's log says the failures were asked for.
  EXPECT_THAT(worker_->Stderr(),
              HasSubstr("tpu_emulator: fault rule 1 (execute "
                        "fail=FAILED_PRECONDITION:the test said no) matched "
                        "operation "));
  EXPECT_THAT(worker_->Stderr(),
              HasSubstr("tpu_emulator: fault rule 2 (compile program=meeting "
                        "fail=INTERNAL) matched operation "));
}

TEST_F(FaultsE2ETest, HbmLimitsTheCoreFromThenOn) {
  StartWorker({"--fault=alloc core=0 nth=1 hbm=1KiB"});
  std::shared_ptr<client::TpuClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  driver::TpuDriver* driver = client->driver();
  std::unique_ptr<driver::BufferHandle> big =
      driver->Allocate(0, tpu_driver::MemoryRegion::HBM, 2048, {});
  absl::Status status = big->OnReady()->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(),
              HasSubstr("Out of HBM on core 0: requested 2048 bytes, 0 bytes "
                        "in use of 1024 bytes capacity (1024 bytes "
                        "available). Deallocate buffers or allocate less."));
  EXPECT_EQ(HbmAvailable(*client), (std::vector<int64_t>{1024, kHbmBytes}));
  std::unique_ptr<driver::BufferHandle> small =
      driver->Allocate(0, tpu_driver::MemoryRegion::HBM, 1000, {});
  EXPECT_TRUE(small->OnReady()->Await().ok());
  EXPECT_EQ(HbmAvailable(*client), (std::vector<int64_t>{24, kHbmBytes}));
  // Clearing the rules gives the core its capacity back.
  ASSERT_TRUE(TpuCtl({"faults", "clear"}).ok());
  EXPECT_EQ(HbmAvailable(*client),
            (std::vector<int64_t>{kHbmBytes - 1000, kHbmBytes}));
  big.reset();
  small.reset();
  client.reset();
  ExpectServesAnew();
}

TEST_F(FaultsE2ETest, SkipLeavesThePeerBlockedAndTheReportNamesIt) {
  StartWorker();
  auto added = TpuCtl({"faults", "add", "collective core=1 skip"});
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(added->exit_code, 0) << added->err;
  std::shared_ptr<client::TpuClient> client = ConnectImpatient();
  ASSERT_NE(client, nullptr);
  absl::Status status = RunBothReplicas(client);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  auto waits = TpuCtl({"waits"});
  ASSERT_TRUE(waits.ok());
  EXPECT_THAT(waits->out, HasSubstr("core 0 (host 0): waiting program "
                                    "meeting launch 0"));
  EXPECT_THAT(waits->out,
              HasSubstr("core 1 skipped all-reduce s (fault rule 1)"));
  client.reset();
  ASSERT_TRUE(TpuCtl({"faults", "clear"}).ok());
  std::shared_ptr<client::TpuClient> fresh = Connect({});
  ASSERT_NE(fresh, nullptr);
  EXPECT_TRUE(RunBothReplicas(fresh).ok());
}

// Core 0's first execute is delayed an hour, so core 1 is certain to reach
// the all-reduce first and wait there for core 0; Close cuts the delay
// short.
TEST_F(FaultsE2ETest, DelayMakesTheOtherCoreArriveFirst) {
  StartWorker({"--fault=execute core=0 nth=1 delay=1h"});
  std::shared_ptr<client::TpuClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  std::shared_ptr<driver::Event> zero = Launch(*client, kMeeting, 0, 2);
  std::shared_ptr<driver::Event> one = Launch(*client, kMeeting, 1, 2);
  const std::string waits =
      AwaitWaits("core 1 (host 0): waiting program meeting");
  EXPECT_THAT(waits, HasSubstr("waiting for core 0"));
  EXPECT_EQ(zero->AwaitWithTimeout(absl::ZeroDuration()), std::nullopt);
  EXPECT_EQ(one->AwaitWithTimeout(absl::ZeroDuration()), std::nullopt);
  ReleaseDriverObjects();
  zero.reset();
  one.reset();
  client.reset();
  std::shared_ptr<client::TpuClient> fresh = Connect({});
  ASSERT_NE(fresh, nullptr);
  EXPECT_TRUE(RunBothReplicas(fresh).ok());
}

// A program slowed a billion times stays running on core 0 while the same
// program on core 1 completes.
TEST_F(FaultsE2ETest, SlowKeepsTheProgramRunning) {
  StartWorker({"--fault=execute core=0 slow=1e9"});
  std::shared_ptr<client::TpuClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  std::shared_ptr<driver::Event> zero = Launch(*client, kAddOne, 0, 1);
  std::shared_ptr<driver::Event> one = Launch(*client, kAddOne, 1, 1);
  EXPECT_TRUE(one->Await().ok());
  AwaitWaits("core 0 (host 0): running program add_one");
  EXPECT_EQ(zero->AwaitWithTimeout(absl::ZeroDuration()), std::nullopt);
  ReleaseDriverObjects();
  zero.reset();
  one.reset();
  client.reset();
  ASSERT_TRUE(TpuCtl({"faults", "clear"}).ok());
  ExpectServesAnew();
}

TEST_F(FaultsE2ETest, TpuCtlAddsListsAndClearsRules) {
  StartWorker({"--fault=alloc core=1 nth=99 delay=1ms"});
  auto added = TpuCtl(
      {"faults", "add", "execute core=0 nth=1 fail=ABORTED:from tpu_ctl"});
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(added->exit_code, 0) << added->err;
  EXPECT_EQ(added->out,
            "added fault rule 2: execute core=0 nth=1 fail=ABORTED:from "
            "tpu_ctl\n");
  std::shared_ptr<client::TpuClient> client = Connect({});
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(AddOne(client).status(), absl::AbortedError("from tpu_ctl"));
  auto value = AddOne(client);  // nth=1: only the first
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, S32({42}));
  auto list = TpuCtl({"faults", "list"});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->out,
            "rule 1: alloc core=1 nth=99 delay=1ms (matched 0)\n"
            "rule 2: execute core=0 nth=1 fail=ABORTED:from tpu_ctl "
            "(matched 1)\n");
  auto refused = TpuCtl({"faults", "add", "execute core=0 falil=x"});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->exit_code, 2);
  EXPECT_THAT(refused->err,
              StartsWith("tpu_ctl: the worker refused the fault rule "
                         "'execute core=0 falil=x': column 16: expected a "
                         "filter (core=, "));
  auto cleared = TpuCtl({"faults", "clear"});
  ASSERT_TRUE(cleared.ok());
  EXPECT_EQ(cleared->out, "cleared 2 fault rule(s)\n");
  auto empty = TpuCtl({"faults", "list"});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->out, "no fault rules\n");
}

TEST_F(FaultsE2ETest, ABadRuleStopsTheWorkerFromStarting) {
  const std::string emulator =
      tools::RunfilePath("tools/tpu_emulator/tpu_emulator");
  auto bad = tools::RunCommand(
      {emulator, "--port=0", "--fault=execute hang", "--fault=execute skip"},
      absl::Seconds(30));
  ASSERT_TRUE(bad.ok()) << bad.status();
  EXPECT_EQ(bad->exit_code, 2);
  EXPECT_EQ(bad->err,
            "tpu_emulator: bad --fault='execute skip': column 9: skip applies "
            "to collective operations only (the core never arrives at the "
            "collective), but this rule's kind is execute; use kind "
            "collective\n");
  const std::string plan = absl::StrCat(tools::ScratchDir(), "/bad_plan.txt");
  {
    FILE* file = fopen(plan.c_str(), "w");
    ASSERT_NE(file, nullptr);
    fputs("# two rules\nexecute core=1 hang\nalloc hbm=lots\n", file);
    fclose(file);
  }
  auto bad_file = tools::RunCommand(
      {emulator, "--port=0", absl::StrCat("--fault_plan=", plan)},
      absl::Seconds(30));
  ASSERT_TRUE(bad_file.ok()) << bad_file.status();
  EXPECT_EQ(bad_file->exit_code, 2);
  EXPECT_EQ(bad_file->err,
            absl::StrCat("tpu_emulator: bad --fault_plan: ", plan,
                         ":3:11: expected a byte count after hbm= (e.g. "
                         "1048576, 64MiB, 1GiB) but found \"lots\"\n"));
}

}  // namespace
}  // namespace tpu
