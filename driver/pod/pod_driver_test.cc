#include "driver/pod/pod_driver.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "driver/driver_registry.h"
#include "driver/testing/fake_driver.h"
#include "driver/testing/manual_event.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

using ::testing::ElementsAre;
using testing::FakeCluster;
using testing::FakeProgram;
using testing::FakeWorker;
using testing::FakeWorkerOptions;
using ::testing::HasSubstr;
using testing::ManualEvent;
using ::testing::UnorderedElementsAre;

constexpr auto HBM = tpu_driver::HBM;

// Opens the pod's workers on `cluster`'s fakes.
PodDriverOptions PodOptions(const FakeCluster& cluster) {
  PodDriverOptions options;
  options.open_worker = cluster.OpenWorker();
  options.shutdown_timeout = absl::Seconds(5);
  return options;
}

// Two lone fake workers of two single-core chips each: pod cores 0,1 are
// worker 0's cores 0,1 and pod cores 2,3 are worker 1's cores 0,1.
class PodDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w0_ = cluster_.Add({});
    w1_ = cluster_.Add({});
    Open();
  }
  void Open() {
    auto driver = PodDriver::Open(Config(), PodOptions(cluster_));
    ASSERT_TRUE(driver.ok()) << driver.status();
    driver_ = *std::move(driver);
  }
  tpu_driver::TpuDriverConfig Config() {
    tpu_driver::TpuDriverConfig config;
    config.set_worker(cluster_.pod_address());
    return config;
  }

  // Allocates `bytes` on `core`, writes `fill` + i, waits for both.
  std::unique_ptr<BufferHandle> Filled(int32_t core, int64_t bytes,
                                       uint8_t fill) {
    auto buffer = driver_->Allocate(core, HBM, bytes, {});
    auto data = std::make_shared<std::vector<uint8_t>>(bytes);
    for (int64_t i = 0; i < bytes; ++i) (*data)[i] = fill + i;
    auto event = driver_->TransferToDevice(data->data(), buffer.get(), {});
    EXPECT_TRUE(event->Await().ok());
    return buffer;
  }
  std::vector<uint8_t> Read(BufferHandle* buffer) {
    std::vector<uint8_t> out(buffer->size_in_bytes(), 0xEE);
    absl::Status status =
        driver_->TransferFromDevice(buffer, out.data(), {})->Await();
    EXPECT_TRUE(status.ok()) << status;
    return out;
  }

  FakeCluster cluster_;
  std::shared_ptr<FakeWorker> w0_, w1_;
  std::unique_ptr<PodDriver> driver_;
};

TEST(PodAddressTest, ParsesWorkersAndAddsTheGrpcScheme) {
  auto workers = ParsePodAddress("grpc+pod://a:1, b:2,local://?chips=2");
  ASSERT_TRUE(workers.ok());
  EXPECT_THAT(*workers,
              ElementsAre("grpc://a:1", "grpc://b:2", "local://?chips=2"));
}

TEST(PodAddressTest, RejectsBadAddresses) {
  EXPECT_THAT(ParsePodAddress("grpc://a:1").status().message(),
              HasSubstr("is not a grpc+pod:// address"));
  EXPECT_THAT(ParsePodAddress("grpc+pod://").status().message(),
              HasSubstr("names no workers"));
  auto empty = ParsePodAddress("grpc+pod://a:1,,b:2");
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("Worker 1 of"));
}

TEST(PodAddressTest, RegisteredInTheDriverRegistry) {
  EXPECT_THAT(DriverRegistry::Prefixes(), ::testing::Contains("grpc+pod://"));
  // Through the registry, a worker that cannot be opened is named.
  auto driver = DriverRegistry::Open("grpc+pod://nosuchscheme://x");
  EXPECT_FALSE(driver.ok());
  EXPECT_THAT(driver.status().message(),
              HasSubstr("Could not open worker 0 (nosuchscheme://x)"));
}

TEST_F(PodDriverTest, OpeningNamesTheWorkerThatFails) {
  tpu_driver::TpuDriverConfig config;
  config.set_worker("grpc+pod://fake0,fake7");
  auto driver = PodDriver::Open(config, PodOptions(cluster_));
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(driver.status().message(),
              HasSubstr("Could not open worker 1 (grpc://fake7)"));
}

TEST_F(PodDriverTest, SystemInfoIsOneHostWithAllCores) {
  auto info = driver_->QuerySystemInfo();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->core_count(), 4);
  EXPECT_EQ(info->chip_count(), 4);
  EXPECT_EQ(info->host_count(), 1);
  EXPECT_EQ(info->host_id(), 0);
  ASSERT_EQ(info->local_core_size(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(info->local_core(i).id(), i);
  EXPECT_EQ(w0_->drivers_open(), 1);
  EXPECT_EQ(w1_->drivers_open(), 1);
}

int64_t Available(TpuDriver* driver, int32_t core) {
  auto info = driver->QuerySystemInfo();
  EXPECT_TRUE(info.ok());
  return info->local_core(core).hbm_bytes_available();
}

TEST_F(PodDriverTest, SystemInfoReportsLiveHbm) {
  const int64_t before = Available(driver_.get(), 3);
  auto buffer = driver_->Allocate(3, HBM, 100, {});
  ASSERT_TRUE(buffer->OnReady()->Await().ok());
  EXPECT_EQ(Available(driver_.get(), 3), before - 100);
  EXPECT_EQ(Available(driver_.get(), 1), before);
  auto info = driver_->QuerySystemInfo();
  EXPECT_EQ(info->tpu_chip(3).core(0).hbm_bytes_available(), before - 100);
  // A lost worker keeps its last figures; the pod stays describable.
  w1_->Disappear();
  info = driver_->QuerySystemInfo();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->local_core_size(), 4);
}

TEST_F(PodDriverTest, BuffersRoundTripOnEveryCore) {
  for (int32_t core = 0; core < 4; ++core) {
    auto buffer = Filled(core, 64, static_cast<uint8_t>(10 * core));
    std::vector<uint8_t> out = Read(buffer.get());
    for (int i = 0; i < 64; ++i) ASSERT_EQ(out[i], 10 * core + i);
    EXPECT_TRUE(driver_->Deallocate(std::move(buffer), {})->Await().ok());
  }
  // Routed to the worker serving each core.
  EXPECT_EQ(w0_->issued("Allocate"), 2);
  EXPECT_EQ(w1_->issued("Allocate"), 2);
  EXPECT_EQ(w0_->live_buffers(), 0);
  EXPECT_EQ(w1_->live_buffers(), 0);
  EXPECT_EQ(driver_->WorkerResourcesForTesting(), 0);
}

TEST_F(PodDriverTest, ShapedAllocationsAndTuples) {
  xla::ShapeProto shape;
  shape.set_element_type(xla::F32);
  shape.add_dimensions(3);
  auto a = driver_->Allocate(3, HBM, shape, {});
  auto b = driver_->Allocate(3, HBM, shape, {});
  EXPECT_EQ(a->size_in_bytes(), 12);
  ASSERT_TRUE(a->shape().has_value());
  std::vector<BufferHandle*> children = {a.get(), b.get()};
  auto tuple = driver_->AllocateTuple(3, HBM, children, {});
  EXPECT_EQ(tuple->size_in_bytes(), 16);
  ASSERT_TRUE(tuple->shape().has_value());
  EXPECT_EQ(tuple->shape()->element_type(), xla::TUPLE);
  EXPECT_EQ(tuple->shape()->tuple_shapes_size(), 2);
  EXPECT_TRUE(tuple->OnReady()->Await().ok());
  EXPECT_EQ(w1_->issued("AllocateTuple"), 1);
  EXPECT_TRUE(driver_->Deallocate(std::move(tuple), {})->Await().ok());
  EXPECT_TRUE(driver_->Deallocate(std::move(a), {})->Await().ok());
  EXPECT_TRUE(driver_->Deallocate(std::move(b), {})->Await().ok());
  EXPECT_EQ(w1_->live_buffers(), 0);
}

TEST_F(PodDriverTest, TupleChildrenMustBeOnTheTuplesWorker) {
  auto child = driver_->Allocate(0, HBM, 8, {});
  std::vector<BufferHandle*> children = {child.get()};
  auto tuple = driver_->AllocateTuple(2, HBM, children, {});
  absl::Status status = tuple->OnReady()->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("Tuple child 0 (buffer " +
                        std::to_string(
                            static_cast<PodBufferHandle*>(child.get())->id()) +
                        ") is on core 0 of worker 0 (grpc://fake0)"));
}

TEST_F(PodDriverTest, UnknownCoreIsInvalidArgument) {
  auto buffer = driver_->Allocate(4, HBM, 8, {});
  absl::Status status = buffer->OnReady()->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("Core 4 does not exist: the pod has 4 cores (0-3)"));
  // Using the failed buffer fails naming its allocation, and runs nothing.
  std::vector<uint8_t> out(8);
  status = driver_->TransferFromDevice(buffer.get(), out.data(), {})->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("(Allocate), which failed"));
  EXPECT_EQ(
      w0_->issued("TransferFromDevice") + w1_->issued("TransferFromDevice"), 0);
}

TEST_F(PodDriverTest, CopyInsideAWorkerUsesTheWorkersCopy) {
  auto src = Filled(0, 32, 7);
  auto dst = driver_->Allocate(1, HBM, 32, {});
  ASSERT_TRUE(driver_->TransferFromDeviceToDevice(src.get(), dst.get(), {})
                  ->Await()
                  .ok());
  EXPECT_EQ(w0_->issued("TransferFromDeviceToDevice"), 1);
  EXPECT_EQ(Read(dst.get()), Read(src.get()));
  EXPECT_EQ(driver_->BounceBytesForTesting(), 0);
}

TEST_F(PodDriverTest, CopyAcrossWorkersBouncesThroughHostMemory) {
  auto src = Filled(1, 4096, 3);
  auto dst = driver_->Allocate(2, HBM, 4096, {});
  auto event = driver_->TransferFromDeviceToDevice(src.get(), dst.get(), {});
  ASSERT_TRUE(event->Await().ok());
  EXPECT_EQ(w0_->issued("TransferFromDevice"), 1);
  EXPECT_EQ(w1_->issued("TransferToDevice"), 1);
  std::vector<uint8_t> out = Read(dst.get());
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(out[i], static_cast<uint8_t>(3 + i));
  EXPECT_EQ(driver_->BounceBytesForTesting(), 0);
}

TEST_F(PodDriverTest, CopyAcrossWorkersFreesHostMemoryOnEveryErrorPath) {
  auto src = Filled(0, 1024, 1);
  auto dst = driver_->Allocate(3, HBM, 1024, {});
  ASSERT_TRUE(dst->OnReady()->Await().ok());

  // The read out of the source fails: the write never happens.
  w0_->FailNext("TransferFromDevice", absl::DataLossError("bad read"));
  absl::Status status =
      driver_->TransferFromDeviceToDevice(src.get(), dst.get(), {})->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("worker 0 (grpc://fake0): bad read"));
  EXPECT_EQ(w1_->issued("TransferToDevice"), 0);
  EXPECT_EQ(driver_->BounceBytesForTesting(), 0);

  // The write into the destination fails.
  w1_->FailNext("TransferToDevice", absl::InternalError("bad write"));
  status =
      driver_->TransferFromDeviceToDevice(src.get(), dst.get(), {})->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(),
              HasSubstr("worker 1 (grpc://fake1): bad write"));
  EXPECT_EQ(driver_->BounceBytesForTesting(), 0);

  // The destination's allocation failed: the copy does not run.
  w1_->FailNext("Allocate", absl::ResourceExhaustedError("full"));
  auto bad = driver_->Allocate(2, HBM, 1024, {});
  status =
      driver_->TransferFromDeviceToDevice(src.get(), bad.get(), {})->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("(Allocate), which failed"));
  EXPECT_EQ(driver_->BounceBytesForTesting(), 0);

  // Sizes differ: refused up front.
  auto small = driver_->Allocate(2, HBM, 16, {});
  status =
      driver_->TransferFromDeviceToDevice(src.get(), small.get(), {})->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("the sizes differ"));
  EXPECT_EQ(driver_->BounceBytesForTesting(), 0);
}

TEST_F(PodDriverTest, CopyFromABufferThatFailedUpFrontNamesItsAllocation) {
  auto bad = driver_->Allocate(99, HBM, 8, {});
  auto dst = driver_->Allocate(3, HBM, 8, {});
  absl::Status status =
      driver_->TransferFromDeviceToDevice(bad.get(), dst.get(), {})->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("Core 99 does not exist"));
  EXPECT_THAT(status.message(), HasSubstr("(Allocate), which failed"));
}

TEST_F(PodDriverTest, CompileOnceAndExecuteOnCoresOfDifferentWorkers) {
  constexpr int64_t kBytes = 16;
  auto compiled =
      driver_->CompileProgram(FakeProgram("add_one", kBytes), 2, {});
  auto shape = compiled->program_shape();
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->parameters(0).dimensions(0), kBytes);
  EXPECT_EQ(w0_->issued("CompileProgram"), 1);
  EXPECT_EQ(w1_->issued("CompileProgram"), 1);

  // Replica 0 on pod core 1 (worker 0), replica 1 on pod core 2 (worker 1).
  xla::DeviceAssignmentProto assignment;
  assignment.set_replica_count(2);
  assignment.set_computation_count(1);
  auto* devices = assignment.add_computation_devices();
  devices->add_replica_device_ids(1);
  devices->add_replica_device_ids(2);

  const int32_t cores[2] = {1, 2};
  std::vector<std::unique_ptr<BufferHandle>> inputs, outputs;
  std::vector<std::shared_ptr<Event>> runs;
  std::vector<std::unique_ptr<LoadedProgramHandle>> loaded;
  for (int r = 0; r < 2; ++r) {
    loaded.push_back(driver_->LoadProgram(cores[r], compiled.get(), {}));
    inputs.push_back(Filled(cores[r], kBytes, static_cast<uint8_t>(100 * r)));
    outputs.push_back(driver_->Allocate(cores[r], HBM, kBytes, {}));
    std::vector<BufferHandle*> in = {inputs.back().get()};
    std::vector<BufferHandle*> out = {outputs.back().get()};
    runs.push_back(
        driver_->ExecuteProgram(loaded.back().get(), in, out, assignment, {}));
  }
  for (auto& run : runs) ASSERT_TRUE(run->Await().ok()) << run->Await();
  for (int r = 0; r < 2; ++r) {
    std::vector<uint8_t> out = Read(outputs[r].get());
    for (int i = 0; i < kBytes; ++i) {
      ASSERT_EQ(out[i], static_cast<uint8_t>(100 * r + i + 1)) << r << " " << i;
    }
  }
  // Each worker got the assignment in its own core ids; the other worker's
  // core got an id past its own.
  auto a0 = w0_->last_assignment(1);
  ASSERT_TRUE(a0.has_value());
  EXPECT_THAT(a0->computation_devices(0).replica_device_ids(),
              ElementsAre(1, 2));
  auto a1 = w1_->last_assignment(0);
  ASSERT_TRUE(a1.has_value());
  EXPECT_THAT(a1->computation_devices(0).replica_device_ids(),
              ElementsAre(2, 0));
  for (auto& program : loaded) {
    EXPECT_TRUE(driver_->UnloadProgram(std::move(program), {})->Await().ok());
  }
  EXPECT_EQ(w0_->live_loaded_programs(), 0);
  EXPECT_EQ(w1_->live_loaded_programs(), 0);
}

TEST_F(PodDriverTest, CompileErrorFailsTheHandleAndTheLoads) {
  auto compiled =
      driver_->CompileProgram(FakeProgram("fail_compile", 4), 1, {});
  auto shape = compiled->program_shape();
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(shape.status().message(),
              HasSubstr("the program does not compile"));
  auto loaded = driver_->LoadProgram(0, compiled.get(), {});
  absl::Status status = loaded->OnReady()->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("(CompileProgram), which failed"));
  EXPECT_EQ(w0_->issued("LoadProgram"), 0);
}

TEST_F(PodDriverTest, CombinedCompileReportsTheFirstErrorNotTheLastStatus) {
  // Worker 0 fails, worker 1 (completing later) succeeds.
  w0_->FailNext("CompileProgram", absl::InternalError("first"));
  auto compiled = driver_->CompileProgram(FakeProgram("p", 4), 1, {});
  absl::Status status = compiled->OnReady()->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("worker 0 (grpc://fake0): first"));
}

TEST_F(PodDriverTest, ExecuteFailureAndMisplacedBuffers) {
  auto compiled =
      driver_->CompileProgram(FakeProgram("fail_execute", 4), 1, {});
  auto loaded = driver_->LoadProgram(2, compiled.get(), {});
  auto in = Filled(2, 4, 0);
  auto out = driver_->Allocate(2, HBM, 4, {});
  xla::DeviceAssignmentProto assignment;
  assignment.add_computation_devices()->add_replica_device_ids(2);
  std::vector<BufferHandle*> ins = {in.get()}, outs = {out.get()};
  auto run = driver_->ExecuteProgram(loaded.get(), ins, outs, assignment, {});
  absl::Status status = run->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(),
              HasSubstr("worker 1 (grpc://fake1): fake: the program failed"));
  // A dependent of the failed execution does not run.
  std::vector<uint8_t> host(4);
  Event* after[] = {run.get()};
  status = driver_->TransferFromDevice(out.get(), host.data(), after)->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("(ExecuteProgram), which failed"));

  auto elsewhere = Filled(0, 4, 0);
  std::vector<BufferHandle*> wrong = {elsewhere.get()};
  status = driver_->ExecuteProgram(loaded.get(), wrong, outs, assignment, {})
               ->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("is on core 0 of worker 0 (grpc://fake0), but the "
                        "program is loaded on core 2 of worker 1"));
}

TEST_F(PodDriverTest, UnknownHandleIsInvalidArgumentAsTheReference) {
  auto buffer = Filled(1, 8, 0);
  const int64_t id = static_cast<PodBufferHandle*>(buffer.get())->id();
  // A transfer held back by a foreign event, and a deallocation racing
  // ahead of it (they are not ordered).
  ManualEvent gate;
  Event* wait[] = {&gate};
  std::vector<uint8_t> out(8);
  auto transfer = driver_->TransferFromDevice(buffer.get(), out.data(), wait);
  ASSERT_TRUE(driver_->Deallocate(std::move(buffer), {})->Await().ok());
  gate.Complete(absl::OkStatus());
  absl::Status status = transfer->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), absl::StrCat("Handle ", id, " does not exist."));
}

TEST_F(PodDriverTest, ForeignHandlesAreRejected) {
  FakeCluster other;
  other.Add({});
  tpu_driver::TpuDriverConfig config;
  config.set_worker(other.pod_address());
  auto other_driver = PodDriver::Open(config, PodOptions(other));
  ASSERT_TRUE(other_driver.ok());
  auto foreign = (*other_driver)->Allocate(0, HBM, 8, {});
  std::vector<uint8_t> out(8);
  absl::Status status =
      driver_->TransferFromDevice(foreign.get(), out.data(), {})->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("not a buffer of this grpc+pod://"));
  // Their events are fine as dependencies, though.
  auto local = Filled(0, 8, 0);
  Event* wait[] = {foreign->OnReady().get()};
  EXPECT_TRUE(
      driver_->TransferFromDevice(local.get(), out.data(), wait)->Await().ok());
}

TEST_F(PodDriverTest, FailuresPropagateWithTheWorkersCodeAndName) {
  FakeWorkerOptions tiny;
  tiny.hbm_bytes_per_core = 100;
  FakeCluster cluster;
  auto worker = cluster.Add(tiny);
  tpu_driver::TpuDriverConfig config;
  config.set_worker(cluster.pod_address());
  auto driver = PodDriver::Open(config, PodOptions(cluster));
  ASSERT_TRUE(driver.ok());
  auto big = (*driver)->Allocate(1, HBM, 101, {});
  std::vector<uint8_t> data(101);
  auto write = (*driver)->TransferToDevice(data.data(), big.get(), {});
  Event* wait[] = {write.get()};
  auto read = (*driver)->TransferFromDevice(big.get(), data.data(), wait);
  absl::Status status = big->OnReady()->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(),
              HasSubstr("worker 0 (grpc://fake0): fake fake0: requested 101 "
                        "bytes, in use 0, capacity 100"));
  EXPECT_EQ(read->Await().code(), absl::StatusCode::kResourceExhausted);
  // Whichever path reports it (directly or through the write), the
  // allocation is named as where the failure began.
  EXPECT_THAT(read->Await().message(),
              HasSubstr(absl::StrCat(
                  "operation ", static_cast<PodBufferHandle*>(big.get())->id(),
                  " (Allocate)")));
  EXPECT_THAT(read->Await().message(),
              HasSubstr("failed: worker 0 (grpc://fake0): fake fake0: "
                        "requested 101"));
  EXPECT_EQ(worker->issued("TransferToDevice"), 0);
  // Deallocating the failed buffer reports the failure; nothing leaks.
  EXPECT_EQ((*driver)->Deallocate(std::move(big), {})->Await().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*driver)->WorkerResourcesForTesting(), 0);
}

TEST_F(PodDriverTest, DeallocateStillReleasesWhenADependencyFailed) {
  auto buffer = Filled(3, 8, 0);
  w1_->FailNext("TransferFromDevice", absl::InternalError("oops"));
  std::vector<uint8_t> out(8);
  auto read = driver_->TransferFromDevice(buffer.get(), out.data(), {});
  Event* wait[] = {read.get()};
  absl::Status status = driver_->Deallocate(std::move(buffer), wait)->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(w1_->live_buffers(), 0);
  EXPECT_EQ(driver_->WorkerResourcesForTesting(), 0);
}

TEST_F(PodDriverTest, LostWorkerFailsItsOperationsWhileOthersKeepWorking) {
  auto on0 = Filled(0, 8, 1);
  auto on1 = Filled(2, 8, 2);
  auto compiled = driver_->CompileProgram(FakeProgram("p", 8), 1, {});
  ASSERT_TRUE(compiled->OnReady()->Await().ok());

  // An operation in flight on worker 1 when it disappears.
  w1_->Hold();
  std::vector<uint8_t> out(8);
  auto in_flight = driver_->TransferFromDevice(on1.get(), out.data(), {});
  Event* wait[] = {in_flight.get()};
  auto dependent = driver_->TransferFromDevice(on1.get(), out.data(), wait);
  ASSERT_TRUE(w1_->AwaitHeld(1, absl::Seconds(10)));
  EXPECT_EQ(w1_->held(), 1);
  w1_->Disappear();
  absl::Status status = in_flight->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(
      status.message(),
      HasSubstr("worker 1 (grpc://fake1): fake fake1: connection lost"));
  EXPECT_EQ(dependent->Await().code(), absl::StatusCode::kUnavailable);

  // What is routed to worker 1 now fails at once, without reaching it.
  const int64_t issued = w1_->issued("Allocate");
  auto fresh = driver_->Allocate(3, HBM, 8, {});
  status = fresh->OnReady()->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(),
              HasSubstr("worker 1 (grpc://fake1) is unavailable"));
  EXPECT_EQ(w1_->issued("Allocate"), issued);
  auto load1 = driver_->LoadProgram(2, compiled.get(), {});
  EXPECT_EQ(load1->OnReady()->Await().code(), absl::StatusCode::kUnavailable);

  // Worker 0 keeps working, compiles included.
  EXPECT_EQ(Read(on0.get())[0], 1);
  auto copy = driver_->Allocate(1, HBM, 8, {});
  EXPECT_TRUE(driver_->TransferFromDeviceToDevice(on0.get(), copy.get(), {})
                  ->Await()
                  .ok());
  auto compiled2 = driver_->CompileProgram(FakeProgram("q", 8), 1, {});
  EXPECT_TRUE(compiled2->OnReady()->Await().ok());
  auto load0 = driver_->LoadProgram(0, compiled2.get(), {});
  EXPECT_TRUE(load0->OnReady()->Await().ok());
  // Copies to the lost worker fail UNAVAILABLE and free their host memory.
  status =
      driver_->TransferFromDeviceToDevice(on0.get(), on1.get(), {})->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(driver_->BounceBytesForTesting(), 0);
  // Destruction does not wait on the lost worker.
  driver_.reset();
  EXPECT_EQ(w0_->live_buffers(), 0);
  EXPECT_EQ(w0_->live_loaded_programs(), 0);
}

TEST_F(PodDriverTest, DestructionReleasesEveryWorkerResource) {
  auto a = Filled(0, 8, 0);
  auto b = Filled(3, 8, 0);
  std::vector<BufferHandle*> children = {b.get()};
  auto tuple = driver_->AllocateTuple(3, HBM, children, {});
  auto compiled = driver_->CompileProgram(FakeProgram("p", 8), 1, {});
  auto l0 = driver_->LoadProgram(1, compiled.get(), {});
  auto l1 = driver_->LoadProgram(2, compiled.get(), {});
  ASSERT_TRUE(l1->OnReady()->Await().ok());
  ASSERT_TRUE(tuple->OnReady()->Await().ok());
  EXPECT_EQ(w1_->live_buffers(), 2);
  EXPECT_EQ(w0_->live_loaded_programs(), 1);
  driver_.reset();
  EXPECT_EQ(w0_->live_buffers(), 0);
  EXPECT_EQ(w1_->live_buffers(), 0);
  EXPECT_EQ(w0_->live_loaded_programs(), 0);
  EXPECT_EQ(w1_->live_loaded_programs(), 0);
  EXPECT_EQ(w0_->drivers_open(), 0);
  EXPECT_EQ(w1_->drivers_open(), 0);
  // Handles outliving the driver stay safe to query.
  EXPECT_TRUE(compiled->program_shape().ok());
  EXPECT_TRUE(l0->OnReady()->Await().ok());
}

TEST_F(PodDriverTest, DestructionCancelsWhatHasNotStartedAndBoundsTheWait) {
  FakeCluster cluster;
  auto worker = cluster.Add({});
  PodDriverOptions options = PodOptions(cluster);
  options.shutdown_timeout = absl::Milliseconds(50);
  tpu_driver::TpuDriverConfig config;
  config.set_worker(cluster.pod_address());
  auto driver = PodDriver::Open(config, options);
  ASSERT_TRUE(driver.ok());
  auto buffer = (*driver)->Allocate(0, HBM, 8, {});
  ASSERT_TRUE(buffer->OnReady()->Await().ok());
  worker->Hold();  // Never released: the worker hangs.
  std::vector<uint8_t> out(8);
  auto stuck = (*driver)->TransferFromDevice(buffer.get(), out.data(), {});
  Event* wait[] = {stuck.get()};
  auto pending = (*driver)->TransferFromDevice(buffer.get(), out.data(), wait);
  ASSERT_TRUE(worker->AwaitHeld(1, absl::Seconds(10)));
  driver->reset();
  EXPECT_EQ(stuck->Await().code(), absl::StatusCode::kCancelled);
  absl::Status status = pending->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(worker->issued("TransferFromDevice"), 1);
  EXPECT_EQ(worker->drivers_open(), 0);
}

TEST_F(PodDriverTest, ResetResetsEveryWorkerAndRetiresTheDriver) {
  auto buffer = Filled(0, 8, 0);
  EXPECT_TRUE(driver_->Reset().ok());
  EXPECT_EQ(w0_->resets(), 1);
  EXPECT_EQ(w1_->resets(), 1);
  absl::Status status = driver_->Allocate(2, HBM, 8, {})->OnReady()->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("was reset"));
  EXPECT_EQ(driver_->WorkerResourcesForTesting(), 0);
}

TEST_F(PodDriverTest, LongChainsComplete) {
  auto buffer = Filled(2, 8, 0);
  std::vector<uint8_t> data(8, 5);
  std::shared_ptr<Event> last = buffer->OnReady();
  for (int i = 0; i < 20000; ++i) {
    Event* wait[] = {last.get()};
    last = driver_->TransferToDevice(data.data(), buffer.get(), wait);
  }
  EXPECT_TRUE(last->Await().ok());
  EXPECT_EQ(w1_->issued("TransferToDevice"), 20001);
  EXPECT_EQ(driver_->LiveOpsForTesting(), 0);
}

TEST_F(PodDriverTest, ConcurrentUsersOnEveryCore) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int32_t core = 0; core < 4; ++core) {
    threads.emplace_back([this, core, &failures] {
      for (int i = 0; i < 50; ++i) {
        auto buffer = driver_->Allocate(core, HBM, 16, {});
        std::vector<uint8_t> in(16, static_cast<uint8_t>(core * 50 + i));
        std::vector<uint8_t> out(16);
        auto write = driver_->TransferToDevice(in.data(), buffer.get(), {});
        Event* wait[] = {write.get()};
        auto read = driver_->TransferFromDevice(buffer.get(), out.data(), wait);
        Event* wait2[] = {read.get()};
        auto free = driver_->Deallocate(std::move(buffer), wait2);
        if (!free->Await().ok() || out != in) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(w0_->live_buffers() + w1_->live_buffers(), 0);
}

TEST(PodSliceTest, SliceHostsAreMergedByCoordinates) {
  FakeCluster cluster;
  FakeWorkerOptions host;
  host.pod_hosts = 2;
  host.host_id = 1;
  auto h1 = cluster.Add(host);
  host.host_id = 0;
  auto h0 = cluster.Add(host);
  tpu_driver::TpuDriverConfig config;
  config.set_worker(cluster.pod_address());
  auto driver = PodDriver::Open(config, PodOptions(cluster));
  ASSERT_TRUE(driver.ok()) << driver.status();
  auto info = (*driver)->QuerySystemInfo();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->chip_count(), 4);
  EXPECT_EQ(info->core_count(), 4);
  // Pod core 3 is slice core 3, on host 1 = the first listed worker.
  auto buffer = (*driver)->Allocate(3, HBM, 8, {});
  ASSERT_TRUE(buffer->OnReady()->Await().ok());
  EXPECT_EQ(h1->issued("Allocate"), 1);
  EXPECT_EQ(h0->issued("Allocate"), 0);
  // Slice workers get slice core ids in device assignments.
  auto compiled = (*driver)->CompileProgram(FakeProgram("p", 8), 2, {});
  auto loaded = (*driver)->LoadProgram(3, compiled.get(), {});
  auto out = (*driver)->Allocate(3, HBM, 8, {});
  xla::DeviceAssignmentProto assignment;
  auto* devices = assignment.add_computation_devices();
  devices->add_replica_device_ids(0);
  devices->add_replica_device_ids(3);
  std::vector<BufferHandle*> ins = {buffer.get()}, outs = {out.get()};
  ASSERT_TRUE((*driver)
                  ->ExecuteProgram(loaded.get(), ins, outs, assignment, {})
                  ->Await()
                  .ok());
  auto got = h1->last_assignment(3);
  ASSERT_TRUE(got.has_value());
  EXPECT_THAT(got->computation_devices(0).replica_device_ids(),
              ElementsAre(0, 3));
}

}  // namespace
}  // namespace tpu::driver
