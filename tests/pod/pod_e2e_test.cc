// grpc+pod:// end to end: several real tpu_emulator processes on loopback
// ports, one pod driver over them, used through TpuClient (as users do) and
// through the TpuDriver API (for exact statuses), plus tpu_run.

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/tpu_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_executable.h"
#include "driver/driver_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hlo/literal.h"
#include "hlo/text/hlo_parser.h"
#include "tools/lib/subprocess.h"
#include "tools/tpu_run/npy.h"

namespace tpu {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using tools::RunfilePath;
using tools::ScratchDir;
using tools::ServerProcess;

constexpr auto HBM = tpu_driver::HBM;
constexpr absl::Duration kBound = absl::Seconds(60);

// Replicated, without collectives: out = 2x + 1.
constexpr absl::string_view kTwiceXPlusOne = R"(
HloModule twice_x_plus_one

ENTRY main {
  x = f32[4] parameter(0)
  sum = f32[4] add(x, x)
  one = f32[] constant(1)
  ones = f32[4] broadcast(one), dimensions={}
  ROOT out = f32[4] add(sum, ones)
}
)";

std::string Emulator() {
  return RunfilePath("tools/tpu_emulator/tpu_emulator");
}

// Starts `count` workers with `flags` (plus per-worker `--host_id=i` when
// `slice`). Fails the test if any cannot start.
std::vector<std::unique_ptr<ServerProcess>> StartWorkers(
    const std::string& name, int count, std::vector<std::string> flags,
    bool slice = false) {
  std::vector<std::unique_ptr<ServerProcess>> workers;
  for (int i = 0; i < count; ++i) {
    std::vector<std::string> argv = {Emulator(), "--port=0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    if (slice) {
      argv.push_back(absl::StrCat("--pod_hosts=", count));
      argv.push_back(absl::StrCat("--host_id=", i));
    }
    auto worker =
        ServerProcess::Start(argv, ScratchDir(), absl::StrCat(name, "_", i));
    EXPECT_TRUE(worker.ok()) << worker.status();
    if (worker.ok()) workers.push_back(*std::move(worker));
  }
  return workers;
}

std::string PodAddress(
    const std::vector<std::unique_ptr<ServerProcess>>& workers) {
  std::vector<std::string> addresses;
  for (const auto& worker : workers) addresses.push_back(worker->address());
  return absl::StrCat("grpc+pod://", absl::StrJoin(addresses, ","));
}

Literal F32(std::vector<float> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Literal::FromVector<float>(xla::F32, {n}, values);
}

absl::Status Await(const std::shared_ptr<driver::Event>& event) {
  std::optional<absl::Status> status = event->AwaitWithTimeout(kBound);
  if (!status.has_value()) return absl::DeadlineExceededError("never done");
  return *status;
}

// The free HBM of the first `cores` cores of `driver`.
std::vector<int64_t> FreeHbm(driver::TpuDriver* driver, int cores) {
  std::vector<int64_t> free;
  absl::StatusOr<tpu_driver::SystemInfo> info = driver->QuerySystemInfo();
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return free;
  for (int i = 0; i < cores && i < info->local_core_size(); ++i) {
    free.push_back(info->local_core(i).hbm_bytes_available());
  }
  return free;
}

// Three lone workers of two single-core chips: pod cores 2k and 2k+1 are
// served by worker k.
class PodE2ETest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto workers =
        StartWorkers("lone", 3,
                     {"--chips=2", "--cores_per_chip=1",
                      absl::StrCat("--hbm_bytes_per_core=", 64 << 20)});
    workers_ =
        new std::vector<std::unique_ptr<ServerProcess>>(std::move(workers));
  }
  static void TearDownTestSuite() {
    delete workers_;
    workers_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(workers_->size(), 3u); }

  std::string Address() const { return PodAddress(*workers_); }
  std::shared_ptr<client::TpuClient> Connect() {
    auto client = client::TpuClient::Get(Address());
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *client : nullptr;
  }
  std::unique_ptr<driver::TpuDriver> OpenDriver() {
    auto driver = driver::DriverRegistry::Open(Address());
    EXPECT_TRUE(driver.ok()) << driver.status();
    return driver.ok() ? *std::move(driver) : nullptr;
  }

  static std::vector<std::unique_ptr<ServerProcess>>* workers_;
};

std::vector<std::unique_ptr<ServerProcess>>* PodE2ETest::workers_ = nullptr;

TEST_F(PodE2ETest, ClientSeesEveryCoreOfEveryWorkerAsOneHost) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(client->device_count(), 6);
  EXPECT_EQ(client->local_device_count(), 6);
  EXPECT_EQ(client->host_id(), 0);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(client->devices()[i]->id(), i);
  // Plain workers: every worker's chips are kept (their coordinates repeat).
  auto driver = OpenDriver();
  ASSERT_NE(driver, nullptr);
  auto info = driver->QuerySystemInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->chip_count(), 6);
  EXPECT_EQ(info->core_count(), 6);
  EXPECT_EQ(info->host_count(), 1);
  EXPECT_EQ(info->local_core(5).hbm_bytes_available(), 64 << 20);
}

TEST_F(PodE2ETest, BuffersRoundTripOnEveryCore) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  for (int device = 0; device < 6; ++device) {
    Literal literal = F32({1.5f * device, -0.0f, 3e-39f, 1e30f + device});
    auto buffer = client::TpuBuffer::FromLiteral(literal, client, device);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    auto back = (*buffer)->ToLiteral();
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, literal) << "device " << device;
  }
}

TEST_F(PodE2ETest, CopiesInsideAWorkerAndAcrossWorkers) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  Literal literal = F32({1, -2, 3.25f, 1e-40f});
  auto src = client::TpuBuffer::FromLiteral(literal, client, 2);
  ASSERT_TRUE(src.ok()) << src.status();
  for (int target : {3, 0, 5}) {  // Same worker, then the two others.
    auto copy = (*src)->CopyToDevice(target);
    ASSERT_TRUE(copy.ok()) << copy.status();
    EXPECT_EQ((*copy)->device()->id(), target);
    auto back = (*copy)->ToLiteral();
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, literal) << "to device " << target;
  }
}

TEST_F(PodE2ETest, CompileOnceAndRunReplicasOnEveryWorker) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  auto module = hlo::ParseHloModule(kTwiceXPlusOne);
  ASSERT_TRUE(module.ok()) << module.status();
  client::CompileOptions options;
  options.num_replicas = 6;
  auto executable = client::TpuExecutable::Compile(*module, options, client);
  ASSERT_TRUE(executable.ok()) << executable.status();
  std::vector<std::unique_ptr<client::TpuBuffer>> inputs;
  std::vector<std::vector<client::TpuBuffer*>> arguments;
  for (int r = 0; r < 6; ++r) {
    const int device = (*executable)->local_devices()[r]->id();
    auto input = client::TpuBuffer::FromLiteral(
        F32({float(r), -1.0f * r, 0.5f, 10}), client, device);
    ASSERT_TRUE(input.ok()) << input.status();
    inputs.push_back(*std::move(input));
    arguments.push_back({inputs.back().get()});
  }
  auto results = (*executable)->ExecutePerReplica(arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 6u);
  for (int r = 0; r < 6; ++r) {
    auto out = (*results)[r][0]->ToLiteral();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(*out, F32({2.0f * r + 1, 1.0f - 2.0f * r, 2.0f, 21.0f}))
        << "replica " << r;
  }
}

TEST_F(PodE2ETest, FailuresPropagateToDependentsNamingTheWorker) {
  auto driver = OpenDriver();
  ASSERT_NE(driver, nullptr);
  // More than a core of worker 1 has.
  auto huge = driver->Allocate(3, HBM, int64_t{128} << 20, {});
  std::vector<char> data(16);
  auto write = driver->TransferToDevice(data.data(), huge.get(), {});
  absl::Status status = Await(huge->OnReady());
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(absl::StrCat("worker 1 (grpc://",
                                     (*workers_)[1]->address(), ")")));
  status = Await(write);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("(Allocate), which failed"));
  // The client sees the same failure.
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  auto too_big = client::TpuBuffer::AllocateBuffer(
      Shape::Array(xla::F32, {int64_t{32} << 20}), client, 4);
  if (too_big.ok())
    status = (*too_big)->BlockHostUntilReady();
  else
    status = too_big.status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
}

TEST(PodE2ESliceTest, SliceHostsAreDeduplicatedAndServeTheirCores) {
  auto workers = StartWorkers("slice", 2, {"--chips=2", "--cores_per_chip=1"},
                              /*slice=*/true);
  ASSERT_EQ(workers.size(), 2u);
  // Listed in reverse host order: chips still go to the host serving them.
  const std::string address = absl::StrCat("grpc+pod://", workers[1]->address(),
                                           ",", workers[0]->address());
  auto driver = driver::DriverRegistry::Open(address);
  ASSERT_TRUE(driver.ok()) << driver.status();
  auto info = (*driver)->QuerySystemInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->chip_count(), 4);  // Each host reports all 4 chips.
  EXPECT_EQ(info->core_count(), 4);
  EXPECT_EQ(info->host_count(), 1);
  driver->reset();

  auto client = client::TpuClient::Get(address);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_EQ((*client)->device_count(), 4);
  auto module = hlo::ParseHloModule(kTwiceXPlusOne);
  ASSERT_TRUE(module.ok());
  client::CompileOptions options;
  options.num_replicas = 4;
  auto executable = client::TpuExecutable::Compile(*module, options, *client);
  ASSERT_TRUE(executable.ok()) << executable.status();
  std::vector<std::unique_ptr<client::TpuBuffer>> inputs;
  std::vector<std::vector<client::TpuBuffer*>> arguments;
  for (int r = 0; r < 4; ++r) {
    auto input =
        client::TpuBuffer::FromLiteral(F32({float(r), 1, 2, 3}), *client,
                                       (*executable)->local_devices()[r]->id());
    ASSERT_TRUE(input.ok()) << input.status();
    inputs.push_back(*std::move(input));
    arguments.push_back({inputs.back().get()});
  }
  auto results = (*executable)->ExecutePerReplica(arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(*(*results)[r][0]->ToLiteral(), F32({2.0f * r + 1, 3, 5, 7}))
        << "replica " << r;
  }
}

TEST(PodE2EKillTest, KilledWorkerFailsItsOperationsWhileOthersKeepWorking) {
  auto workers = StartWorkers("kill", 3, {"--chips=1", "--cores_per_chip=2"});
  ASSERT_EQ(workers.size(), 3u);
  const std::string address = PodAddress(workers);
  auto opened = driver::DriverRegistry::Open(address);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<driver::TpuDriver> driver = *std::move(opened);
  // What the workers that stay up have free before this test uses them.
  const std::vector<int64_t> free_before = FreeHbm(driver.get(), 4);
  // One buffer per core, written.
  std::vector<std::unique_ptr<driver::BufferHandle>> buffers;
  std::vector<float> data = {1, 2, 3, 4};
  for (int core = 0; core < 6; ++core) {
    buffers.push_back(driver->Allocate(core, HBM, 16, {}));
    ASSERT_TRUE(
        Await(driver->TransferToDevice(data.data(), buffers.back().get(), {}))
            .ok());
  }
  // Work in flight on worker 2 (cores 4, 5) when it dies.
  std::vector<std::vector<float>> reads(40, std::vector<float>(4));
  std::vector<std::shared_ptr<driver::Event>> in_flight;
  for (int i = 0; i < 40; ++i) {
    in_flight.push_back(driver->TransferFromDevice(buffers[4 + i % 2].get(),
                                                   reads[i].data(), {}));
  }
  workers[2]->Kill();
  const std::string dead =
      absl::StrCat("worker 2 (grpc://", workers[2]->address(), ")");
  // New work routed to the dead worker fails UNAVAILABLE, naming it.
  auto after =
      driver->TransferFromDevice(buffers[5].get(), reads[0].data(), {});
  absl::Status status = Await(after);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(dead));
  // Work in flight when it died either finished first or failed the same
  // way; none is left pending.
  for (auto& event : in_flight) {
    absl::Status s = Await(event);
    EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kUnavailable) << s;
    if (!s.ok()) {
      EXPECT_THAT(std::string(s.message()), HasSubstr(dead)) << s;
    }
  }
  // From then on the pod knows the worker is gone: what is routed to it
  // fails at once, with the reason, without waiting for any connection
  // timeout.
  status =
      Await(driver->TransferFromDevice(buffers[4].get(), reads[1].data(), {}));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(absl::StrCat(dead, " is unavailable")));
  // The other workers keep working: transfers, copies, programs.
  std::vector<float> back(4);
  ASSERT_TRUE(
      Await(driver->TransferFromDevice(buffers[3].get(), back.data(), {}))
          .ok());
  EXPECT_EQ(back, data);
  ASSERT_TRUE(Await(driver->TransferFromDeviceToDevice(buffers[0].get(),
                                                       buffers[2].get(), {}))
                  .ok());
  auto module = hlo::ParseHloModule(kTwiceXPlusOne);
  ASSERT_TRUE(module.ok());
  xla::HloProto proto;
  *proto.mutable_hlo_module() = *module;
  auto compiled = driver->CompileProgram(proto, 1, {});
  auto loaded = driver->LoadProgram(1, compiled.get(), {});
  xla::ShapeProto f32x4;
  f32x4.set_element_type(xla::F32);
  f32x4.add_dimensions(4);
  auto out = driver->Allocate(1, HBM, f32x4, {});
  xla::DeviceAssignmentProto assignment;
  assignment.set_replica_count(1);
  assignment.set_computation_count(1);
  assignment.add_computation_devices()->add_replica_device_ids(1);
  status = Await(driver->ExecuteProgram(loaded.get(), {buffers[1].get()},
                                        {out.get()}, assignment, {}));
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_TRUE(
      Await(driver->TransferFromDevice(out.get(), back.data(), {})).ok());
  EXPECT_EQ(back, (std::vector<float>{3, 5, 7, 9}));
  // Loading on the dead worker's core fails UNAVAILABLE, not forever.
  auto dead_load = driver->LoadProgram(4, compiled.get(), {});
  EXPECT_EQ(Await(dead_load->OnReady()).code(), absl::StatusCode::kUnavailable);
  // Destruction completes every event it gave out, including one still in
  // flight on a live worker, and releases everything the live workers hold
  // for it, skipping the dead one.
  std::shared_ptr<driver::Event> last =
      driver->TransferFromDevice(buffers[2].get(), back.data(), {});
  driver.reset();
  std::optional<absl::Status> last_status =
      last->AwaitWithTimeout(absl::ZeroDuration());
  ASSERT_TRUE(last_status.has_value());
  EXPECT_TRUE(last_status->ok() ||
              last_status->code() == absl::StatusCode::kCancelled)
      << *last_status;
  // The live workers serve a new pod, with all their HBM free again.
  auto live = driver::DriverRegistry::Open(absl::StrCat(
      "grpc+pod://", workers[0]->address(), ",", workers[1]->address()));
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ(FreeHbm(live->get(), 4), free_before);
  auto fresh = (*live)->Allocate(3, HBM, 16, {});
  ASSERT_TRUE(
      Await((*live)->TransferToDevice(data.data(), fresh.get(), {})).ok());
  ASSERT_TRUE(
      Await((*live)->TransferFromDevice(fresh.get(), back.data(), {})).ok());
  EXPECT_EQ(back, data);
}

// The "done when" of the pod driver: tpu_run runs a replicated module across
// three emulator processes with correct per-replica outputs.
TEST_F(PodE2ETest, TpuRunRunsAReplicatedModuleAcrossThreeWorkers) {
  const std::string dir = absl::StrCat(ScratchDir(), "/tpu_run");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string module = absl::StrCat(dir, "/module.hlo");
  std::ofstream(module) << kTwiceXPlusOne;
  for (int r = 0; r < 6; ++r) {
    NpyArray input;
    input.dtype = {'f', 4};
    input.shape = {4};
    std::vector<float> values = {float(r), -1.0f * r, 0.5f, 10};
    input.data.assign(reinterpret_cast<const char*>(values.data()), 16);
    fs::create_directories(absl::StrCat(dir, "/in/replica_", r));
    std::ofstream(absl::StrCat(dir, "/in/replica_", r, "/arg_0.npy"),
                  std::ios::binary)
        << SerializeNpy(input);
  }
  const std::string command = absl::StrCat(
      RunfilePath("tools/tpu_run/tpu_run"), " --target=", Address(),
      " --module=", module, " --replicas=6 --inputs_dir=", dir,
      "/in --outputs_dir=", dir, "/out --execute_max_time=60s > ", dir,
      "/stdout 2> ", dir, "/stderr");
  const int exit_code = std::system(command.c_str());
  std::ifstream err(absl::StrCat(dir, "/stderr"));
  std::string err_text((std::istreambuf_iterator<char>(err)),
                       std::istreambuf_iterator<char>());
  ASSERT_EQ(exit_code, 0) << err_text;
  for (int r = 0; r < 6; ++r) {
    auto out = ReadNpyFile(absl::StrCat(dir, "/out/replica_", r, "/out_0.npy"));
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<float> expected = {2.0f * r + 1, 1.0f - 2.0f * r, 2.0f, 21.0f};
    ASSERT_EQ(out->data.size(), 16u);
    EXPECT_EQ(std::memcmp(out->data.data(), expected.data(), 16), 0)
        << "replica " << r;
  }
}

}  // namespace
}  // namespace tpu
