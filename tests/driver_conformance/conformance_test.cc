// The driver conformance suite: the TpuDriver contract, checked the same way
// on every registered backend (backend.h), blocking and asynchronously.
//
// Blocking mode awaits every operation before issuing the next; async mode
// issues whole chains at once (ordering only by handles and wait_for) and
// learns outcomes through callbacks. Every wait is bounded.

#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "driver/completion_event.h"
#include "gtest/gtest.h"
#include "tests/driver_conformance/backend.h"
#include "tests/driver_conformance/hlo_programs.h"

namespace tpu {
namespace conformance {
namespace {

using tpu_driver::HBM;

enum class Mode { kBlocking, kAsync };

struct Param {
  Backend backend;
  Mode mode;
};

void PrintTo(const Param& param, std::ostream* os) {
  *os << param.backend.name
      << (param.mode == Mode::kBlocking ? " blocking" : " async");
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return absl::StrCat(
      info.param.backend.name, "_",
      info.param.mode == Mode::kBlocking ? "blocking" : "async");
}

std::vector<Param> AllParams() {
  std::vector<Param> params;
  for (const Backend& backend : RegisteredBackends()) {
    params.push_back({backend, Mode::kBlocking});
    params.push_back({backend, Mode::kAsync});
  }
  return params;
}

constexpr absl::Duration kWaitBound = absl::Seconds(60);

// `n` floats with pseudo-random bit patterns (NaNs, denormals and all), to
// check round trips bit for bit. xorshift: cheap enough for 64 MiB.
std::vector<float> RandomFloats(int64_t n, uint32_t seed) {
  std::vector<float> values(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& v : values) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    std::memcpy(&v, &x, 4);
  }
  return values;
}

std::vector<float> SmallFloats(int64_t n, float base) {
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = base + 0.25f * i;
  return values;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

xla::DeviceAssignmentProto OneReplicaOn(int32_t core) {
  xla::DeviceAssignmentProto assignment;
  assignment.set_replica_count(1);
  assignment.set_computation_count(1);
  assignment.add_computation_devices()->add_replica_device_ids(core);
  return assignment;
}

class DriverConformanceTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const Backend& backend = GetParam().backend;
    std::string test =
        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    test = test.substr(0, test.find('/'));
    auto skip = backend.unsupported.find(test);
    if (skip != backend.unsupported.end()) {
      GTEST_SKIP() << backend.name << " does not run " << test << ": "
                   << skip->second;
    }
    absl::StatusOr<std::unique_ptr<BackendInstance>> instance =
        backend.create();
    if (instance.status().code() == absl::StatusCode::kUnavailable) {
      GTEST_SKIP() << backend.name << " unavailable: " << instance.status();
    }
    ASSERT_TRUE(instance.ok()) << instance.status();
    instance_ = *std::move(instance);
    absl::StatusOr<std::unique_ptr<driver::TpuDriver>> driver =
        instance_->OpenDriver();
    ASSERT_TRUE(driver.ok()) << driver.status();
    driver_ = *std::move(driver);
    absl::StatusOr<tpu_driver::SystemInfo> info = driver_->QuerySystemInfo();
    ASSERT_TRUE(info.ok()) << info.status();
    info_ = *info;
    for (const auto& core : info_.local_core()) cores_.push_back(core.id());
    if (cores_.empty()) {
      for (const auto& chip : info_.tpu_chip()) {
        for (const auto& core : chip.core()) cores_.push_back(core.id());
      }
    }
    std::sort(cores_.begin(), cores_.end());
    ASSERT_FALSE(cores_.empty());
  }

  void TearDown() override {
    driver_.reset();
    instance_.reset();
  }

  bool async() const { return GetParam().mode == Mode::kAsync; }
  int32_t core(int i) const { return cores_[i % cores_.size()]; }

  // The event's status, bounded; in async mode learnt through a callback.
  absl::Status Wait(const std::shared_ptr<driver::Event>& event) {
    if (event == nullptr) return absl::InternalError("null event");
    if (!async()) {
      std::optional<absl::Status> status = event->AwaitWithTimeout(kWaitBound);
      if (!status) return absl::DeadlineExceededError("event never completed");
      return *status;
    }
    auto done = std::make_shared<absl::Notification>();
    auto result = std::make_shared<absl::Status>();
    event->AddCallback([done, result](absl::Status status) {
      *result = std::move(status);
      done->Notify();
    });
    if (!done->WaitForNotificationWithTimeout(kWaitBound)) {
      return absl::DeadlineExceededError("callback never ran");
    }
    return *result;
  }

  // Blocking mode: waits for `event` now and expects success. Async mode:
  // remembers it for Drain, so the next operation is issued at once.
  void Step(const std::shared_ptr<driver::Event>& event,
            const std::string& what) {
    if (async()) {
      steps_.emplace_back(event, what);
      return;
    }
    absl::Status status = Wait(event);
    EXPECT_TRUE(status.ok()) << what << ": " << status;
  }
  void Drain() {
    for (auto& [event, what] : steps_) {
      absl::Status status = Wait(event);
      EXPECT_TRUE(status.ok()) << what << ": " << status;
    }
    steps_.clear();
  }

  // Uploads `values` to a new f32 buffer on `core_id`.
  std::unique_ptr<driver::BufferHandle> Upload(
      int32_t core_id, const std::vector<float>& values) {
    auto buffer = driver_->Allocate(
        core_id, HBM, F32Array(static_cast<int64_t>(values.size())), {});
    Step(buffer->OnReady(), "allocate");
    Step(driver_->TransferToDevice(values.data(), buffer.get(), {}),
         "transfer to device");
    return buffer;
  }

  std::vector<float> Download(driver::BufferHandle* buffer) {
    std::vector<float> values(buffer->size_in_bytes() / sizeof(float));
    absl::Status status =
        Wait(driver_->TransferFromDevice(buffer, values.data(), {}));
    EXPECT_TRUE(status.ok()) << "transfer from device: " << status;
    return values;
  }

  int64_t HbmAvailable(driver::TpuDriver* driver, int32_t core_id) {
    absl::StatusOr<tpu_driver::SystemInfo> info = driver->QuerySystemInfo();
    EXPECT_TRUE(info.ok()) << info.status();
    if (!info.ok()) return -1;
    for (const auto& chip : info->tpu_chip()) {
      for (const auto& c : chip.core()) {
        if (c.id() == core_id) return c.hbm_bytes_available();
      }
    }
    return -1;
  }

  std::unique_ptr<BackendInstance> instance_;
  std::unique_ptr<driver::TpuDriver> driver_;
  tpu_driver::SystemInfo info_;
  std::vector<int32_t> cores_;
  std::vector<std::pair<std::shared_ptr<driver::Event>, std::string>> steps_;
};

TEST_P(DriverConformanceTest, QuerySystemInfoDescribesCoresAndHbm) {
  EXPECT_GE(info_.tpu_chip_size(), 1);
  EXPECT_GT(HbmAvailable(driver_.get(), core(0)), 0);
  EXPECT_GE(info_.cpu().num_cpu_cores(), 0);
}

TEST_P(DriverConformanceTest, AllocateBytesAndShapes) {
  auto bytes = driver_->Allocate(core(0), HBM, 1000, {});
  EXPECT_EQ(bytes->size_in_bytes(), 1000);
  EXPECT_FALSE(bytes->shape().has_value());
  auto shaped = driver_->Allocate(core(1), HBM, F32Array(6), {});
  EXPECT_EQ(shaped->size_in_bytes(), 24);
  ASSERT_TRUE(shaped->shape().has_value());
  EXPECT_EQ(shaped->shape()->dimensions(0), 6);
  EXPECT_TRUE(Wait(bytes->OnReady()).ok());
  EXPECT_TRUE(Wait(shaped->OnReady()).ok());
  EXPECT_TRUE(Wait(driver_->Deallocate(std::move(bytes), {})).ok());
  EXPECT_TRUE(Wait(driver_->Deallocate(std::move(shaped), {})).ok());
}

TEST_P(DriverConformanceTest, TuplesOfBuffers) {
  auto a = driver_->Allocate(core(0), HBM, F32Array(4), {});
  auto b = driver_->Allocate(core(0), HBM, F32Array(2), {});
  auto tuple = driver_->AllocateTuple(core(0), HBM, {a.get(), b.get()}, {});
  EXPECT_EQ(tuple->size_in_bytes(), 16);
  ASSERT_TRUE(tuple->shape().has_value());
  EXPECT_EQ(tuple->shape()->tuple_shapes_size(), 2);
  Step(tuple->OnReady(), "allocate tuple");
  auto empty = driver_->AllocateTuple(core(0), HBM, {}, {});
  Step(empty->OnReady(), "allocate empty tuple");
  // The tuple goes first: it does not own its children.
  auto gone = driver_->Deallocate(std::move(tuple), {});
  Step(gone, "deallocate tuple");
  Step(driver_->Deallocate(std::move(a), {gone.get()}), "deallocate child a");
  Step(driver_->Deallocate(std::move(b), {gone.get()}), "deallocate child b");
  Step(driver_->Deallocate(std::move(empty), {}), "deallocate empty tuple");
  Drain();
}

TEST_P(DriverConformanceTest, TupleChildOnAnotherCoreIsRejected) {
  if (cores_.size() < 2) GTEST_SKIP() << "needs two cores";
  auto a = driver_->Allocate(core(1), HBM, 16, {});
  auto tuple = driver_->AllocateTuple(core(0), HBM, {a.get()}, {});
  EXPECT_EQ(Wait(tuple->OnReady()).code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(DriverConformanceTest, TransferRoundTripIsBitExact) {
  const std::vector<float> values = RandomFloats(1 << 18, 1);  // 1 MiB
  auto buffer = Upload(core(0), values);
  std::vector<float> back(values.size());
  Step(driver_->TransferFromDevice(buffer.get(), back.data(), {}),
       "transfer from device");
  Drain();
  EXPECT_TRUE(SameBits(values, back));
}

TEST_P(DriverConformanceTest, SixtyFourMiBTransferIsOneMessageAndBitExact) {
  // One transfer each way: async mode would test nothing more, and fresh
  // 64 MiB buffers are slow to fault in on small test machines.
  if (async()) GTEST_SKIP() << "covered by the blocking variant";
  const std::vector<float> values = RandomFloats(16 << 20, 2);  // 64 MiB
  auto buffer = Upload(core(0), values);
  std::vector<float> back(values.size());
  Step(driver_->TransferFromDevice(buffer.get(), back.data(), {}),
       "transfer from device");
  Drain();
  EXPECT_TRUE(SameBits(values, back));
}

TEST_P(DriverConformanceTest, ManyTransfersInFlightAreEachBitExact) {
  // Issued without waiting, so several payloads share protocol messages;
  // sizes on both sides of every copy-or-reference threshold.
  const std::vector<int64_t> counts = {1, 25, 4096, 5000, 75000, 1 << 18, 7};
  std::vector<std::vector<float>> values;
  std::vector<std::unique_ptr<driver::BufferHandle>> buffers;
  for (size_t i = 0; i < counts.size(); ++i) {
    values.push_back(RandomFloats(counts[i], 10 + static_cast<int>(i)));
    buffers.push_back(driver_->Allocate(core(i), HBM, F32Array(counts[i]), {}));
  }
  std::vector<std::shared_ptr<driver::Event>> writes;
  for (size_t i = 0; i < counts.size(); ++i) {
    writes.push_back(
        driver_->TransferToDevice(values[i].data(), buffers[i].get(), {}));
  }
  std::vector<std::vector<float>> back;
  for (const auto& v : values) back.emplace_back(v.size(), -1.0f);
  std::vector<std::shared_ptr<driver::Event>> reads;
  for (size_t i = 0; i < counts.size(); ++i) {
    reads.push_back(driver_->TransferFromDevice(
        buffers[i].get(), back[i].data(), {writes[i].get()}));
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    ASSERT_TRUE(Wait(reads[i]).ok()) << "buffer " << i;
    EXPECT_TRUE(SameBits(values[i], back[i])) << "buffer " << i;
  }
}

TEST_P(DriverConformanceTest, NeverWrittenBufferReadsAsZeros) {
  const int64_t count = 3 << 18;  // 3 MiB: made off the worker's thread.
  auto buffer = driver_->Allocate(core(0), HBM, F32Array(count), {});
  std::vector<float> back(count, 5.0f);
  ASSERT_TRUE(
      Wait(driver_->TransferFromDevice(buffer.get(), back.data(), {})).ok());
  EXPECT_TRUE(SameBits(back, std::vector<float>(count, 0.0f)));
}

TEST_P(DriverConformanceTest, TransferFromReadsTheContentsOfItsTurn) {
  // A read that was ordered before an overwrite sees the old bytes even when
  // the overwrite completes while the read's response is still on its way.
  const std::vector<float> before = RandomFloats(1 << 16, 20);
  const std::vector<float> after = RandomFloats(1 << 16, 21);
  auto buffer = Upload(core(0), before);
  Drain();
  std::vector<float> first(before.size()), second(before.size());
  auto read_first = driver_->TransferFromDevice(buffer.get(), first.data(), {});
  auto overwrite =
      driver_->TransferToDevice(after.data(), buffer.get(), {read_first.get()});
  auto read_second = driver_->TransferFromDevice(buffer.get(), second.data(),
                                                 {overwrite.get()});
  ASSERT_TRUE(Wait(read_second).ok());
  ASSERT_TRUE(Wait(read_first).ok());
  EXPECT_TRUE(SameBits(first, before));
  EXPECT_TRUE(SameBits(second, after));
}

TEST_P(DriverConformanceTest, EmptyBufferRoundTrip) {
  auto buffer = driver_->Allocate(core(0), HBM, 0, {});
  Step(driver_->TransferToDevice(nullptr, buffer.get(), {}), "transfer to");
  Step(driver_->TransferFromDevice(buffer.get(), nullptr, {}), "transfer from");
  Drain();
}

TEST_P(DriverConformanceTest, DeviceToDeviceCopy) {
  const std::vector<float> values = RandomFloats(4096, 3);
  auto source = Upload(core(0), values);
  auto target = driver_->Allocate(core(1), HBM, F32Array(4096), {});
  Step(driver_->TransferFromDeviceToDevice(source.get(), target.get(), {}),
       "device to device");
  Drain();
  EXPECT_TRUE(SameBits(Download(target.get()), values));
}

TEST_P(DriverConformanceTest, CompileReportsTheProgramShape) {
  auto program = driver_->CompileProgram(AddAndTupleProgram(8), 1, {});
  absl::StatusOr<xla::ProgramShapeProto> shape = program->program_shape();
  ASSERT_TRUE(shape.ok()) << shape.status();
  ASSERT_EQ(shape->parameters_size(), 2);
  EXPECT_EQ(shape->parameters(0).element_type(), xla::F32);
  EXPECT_EQ(shape->parameters(1).dimensions(0), 8);
  EXPECT_EQ(shape->result().element_type(), xla::TUPLE);
  EXPECT_EQ(shape->result().tuple_shapes_size(), 2);
}

TEST_P(DriverConformanceTest, CompileErrorReachesTheHandle) {
  xla::HloProto broken = AddProgram(4);
  broken.mutable_hlo_module()->mutable_computations(0)->set_root_id(99);
  auto program = driver_->CompileProgram(broken, 1, {});
  EXPECT_FALSE(Wait(program->OnReady()).ok());
  EXPECT_FALSE(program->program_shape().ok());
  // Loading it fails too, naming the compile.
  auto loaded = driver_->LoadProgram(core(0), program.get(), {});
  absl::Status status = Wait(loaded->OnReady());
  EXPECT_FALSE(status.ok());
}

TEST_P(DriverConformanceTest, LoadExecuteUnload) {
  const int64_t n = 16;
  const std::vector<float> x = SmallFloats(n, 1.0f);
  const std::vector<float> y = SmallFloats(n, -3.5f);
  auto program = driver_->CompileProgram(AddProgram(n), 1, {});
  for (int replica_core : {0, 1}) {
    const int32_t c = core(replica_core);
    auto loaded = driver_->LoadProgram(c, program.get(), {});
    auto a = Upload(c, x);
    auto b = Upload(c, y);
    auto out = driver_->Allocate(c, HBM, F32Array(n), {});
    Step(driver_->ExecuteProgram(loaded.get(), {a.get(), b.get()}, {out.get()},
                                 OneReplicaOn(c), {}),
         "execute");
    Drain();
    std::vector<float> expected(n);
    for (int64_t i = 0; i < n; ++i) expected[i] = x[i] + y[i];
    EXPECT_TRUE(SameBits(Download(out.get()), expected));
    EXPECT_TRUE(Wait(driver_->UnloadProgram(std::move(loaded), {})).ok());
  }
}

TEST_P(DriverConformanceTest, ExecuteWithATupleResult) {
  const int64_t n = 8;
  const std::vector<float> x = SmallFloats(n, 10.0f);
  const std::vector<float> y = SmallFloats(n, 0.5f);
  auto program = driver_->CompileProgram(AddAndTupleProgram(n), 1, {});
  auto loaded = driver_->LoadProgram(core(0), program.get(), {});
  auto a = Upload(core(0), x);
  auto b = Upload(core(0), y);
  auto sum = driver_->Allocate(core(0), HBM, F32Array(n), {});
  auto copy = driver_->Allocate(core(0), HBM, F32Array(n), {});
  auto result =
      driver_->AllocateTuple(core(0), HBM, {sum.get(), copy.get()}, {});
  Step(driver_->ExecuteProgram(loaded.get(), {a.get(), b.get()}, {result.get()},
                               OneReplicaOn(core(0)), {}),
       "execute");
  Drain();
  std::vector<float> expected(n);
  for (int64_t i = 0; i < n; ++i) expected[i] = x[i] + y[i];
  EXPECT_TRUE(SameBits(Download(sum.get()), expected));
  EXPECT_TRUE(SameBits(Download(copy.get()), x));
}

TEST_P(DriverConformanceTest, FailedOperationFailsItsDependents) {
  // More than any core has: RESOURCE_EXHAUSTED.
  auto huge = driver_->Allocate(core(0), HBM,
                                std::numeric_limits<int64_t>::max() / 2, {});
  const std::string huge_id =
      dynamic_cast<driver::CompletionEvent*>(huge->OnReady().get())
          ->id()
          .ToString();
  auto small = driver_->Allocate(core(0), HBM, 64, {});
  // Issued before the failure is known (in async mode surely): the worker
  // fails it; otherwise the driver does, up front. Both name the allocation.
  auto transfer =
      driver_->TransferFromDeviceToDevice(huge.get(), small.get(), {});
  auto after = driver_->Allocate(core(0), HBM, 64, {transfer.get()});
  absl::Status alloc_status = Wait(huge->OnReady());
  EXPECT_EQ(alloc_status.code(), absl::StatusCode::kResourceExhausted)
      << alloc_status;
  for (const auto& event : {transfer, after->OnReady()}) {
    absl::Status status = Wait(event);
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), huge_id + " failed"))
        << status;
  }
}

TEST_P(DriverConformanceTest, HandlesOfAnotherDriverAreInvalidArgument) {
  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> other =
      instance_->OpenDriver();
  ASSERT_TRUE(other.ok()) << other.status();
  auto foreign = (*other)->Allocate(core(0), HBM, 16, {});
  ASSERT_TRUE(Wait(foreign->OnReady()).ok());
  std::vector<char> data(16);
  absl::Status status =
      Wait(driver_->TransferToDevice(data.data(), foreign.get(), {}));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  status = Wait(driver_->TransferFromDevice(foreign.get(), data.data(), {}));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  auto program = (*other)->CompileProgram(AddProgram(4), 1, {});
  auto loaded = driver_->LoadProgram(core(0), program.get(), {});
  EXPECT_EQ(Wait(loaded->OnReady()).code(), absl::StatusCode::kInvalidArgument);
  // The other driver's own use is unaffected.
  EXPECT_TRUE(
      Wait((*other)->TransferToDevice(data.data(), foreign.get(), {})).ok());
}

TEST_P(DriverConformanceTest, UnknownCoreIsInvalidArgument) {
  auto buffer = driver_->Allocate(100000, HBM, 16, {});
  absl::Status status = Wait(buffer->OnReady());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "100000")) << status;
}

TEST_P(DriverConformanceTest, TruncatedTransferIsDataLoss) {
  auto faults = std::make_shared<driver::FaultInjectionTransport::Faults>();
  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> faulty =
      instance_->OpenFaultyDriver(faults);
  if (faulty.status().code() == absl::StatusCode::kUnimplemented) {
    GTEST_SKIP() << faulty.status();
  }
  ASSERT_TRUE(faulty.ok()) << faulty.status();
  std::vector<float> values = RandomFloats(256, 4);
  auto buffer = (*faulty)->Allocate(core(0), HBM, F32Array(256), {});
  ASSERT_TRUE(
      Wait((*faulty)->TransferToDevice(values.data(), buffer.get(), {})).ok());
  faults->truncate_transfer_from = true;
  std::vector<float> back(256);
  absl::Status status =
      Wait((*faulty)->TransferFromDevice(buffer.get(), back.data(), {}));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "expected 1024 bytes"))
      << status;
}

TEST_P(DriverConformanceTest, BrokenStreamsFailEveryPendingEvent) {
  auto faults = std::make_shared<driver::FaultInjectionTransport::Faults>();
  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> faulty =
      instance_->OpenFaultyDriver(faults);
  if (faulty.status().code() == absl::StatusCode::kUnimplemented) {
    GTEST_SKIP() << faulty.status();
  }
  ASSERT_TRUE(faulty.ok()) << faulty.status();
  faults->drop_responses = true;  // Everything stays pending.
  std::vector<std::shared_ptr<driver::Event>> events;
  std::vector<std::unique_ptr<driver::BufferHandle>> buffers;
  for (int i = 0; i < 8; ++i) {
    buffers.push_back((*faulty)->Allocate(core(i), HBM, 64, {}));
    events.push_back(buffers.back()->OnReady());
  }
  faults->BreakStreams(absl::UnavailableError("connection reset"));
  for (const auto& event : events) {
    absl::Status status = Wait(event);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), "went away")) << status;
  }
}

TEST_P(DriverConformanceTest, WorkerGoingAwayFailsPendingEvents) {
  auto faults = std::make_shared<driver::FaultInjectionTransport::Faults>();
  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> faulty =
      instance_->OpenFaultyDriver(faults);
  if (faulty.status().code() == absl::StatusCode::kUnimplemented) {
    GTEST_SKIP() << faulty.status();
  }
  ASSERT_TRUE(faulty.ok()) << faulty.status();
  faults->drop_responses = true;
  auto buffer = (*faulty)->Allocate(core(0), HBM, 64, {});
  std::shared_ptr<driver::Event> ready = buffer->OnReady();
  if (!instance_->StopWorker()) GTEST_SKIP() << "cannot stop this worker";
  absl::Status status = Wait(ready);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), instance_->address()))
      << status;
  // New operations fail instead of hanging.
  auto later = (*faulty)->Allocate(core(0), HBM, 64, {});
  EXPECT_FALSE(Wait(later->OnReady()).ok());
  faulty->reset();
  driver_.reset();  // Its Close finds no worker: logged, not fatal.
}

TEST_P(DriverConformanceTest, DestructionClosesAndFreesHbm) {
  const int64_t before = HbmAvailable(driver_.get(), core(0));
  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> other =
      instance_->OpenDriver();
  ASSERT_TRUE(other.ok()) << other.status();
  const int64_t size = 1 << 20;
  auto buffer = (*other)->Allocate(core(0), HBM, size, {});
  ASSERT_TRUE(Wait(buffer->OnReady()).ok());
  EXPECT_EQ(HbmAvailable(driver_.get(), core(0)), before - size);
  buffer.reset();  // Never deallocated: Close must release it.
  other->reset();
  EXPECT_EQ(HbmAvailable(driver_.get(), core(0)), before);
}

TEST_P(DriverConformanceTest, ResetDropsStateAndRetiresTheDriver) {
  auto buffer = driver_->Allocate(core(0), HBM, 1 << 20, {});
  ASSERT_TRUE(Wait(buffer->OnReady()).ok());
  EXPECT_TRUE(driver_->Reset().ok());
  auto after = driver_->Allocate(core(0), HBM, 16, {});
  EXPECT_EQ(Wait(after->OnReady()).code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::unique_ptr<driver::TpuDriver>> fresh =
      instance_->OpenDriver();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const int64_t total = HbmAvailable(fresh->get(), core(0));
  auto again = (*fresh)->Allocate(core(0), HBM, 16, {});
  EXPECT_TRUE(Wait(again->OnReady()).ok());
  EXPECT_GT(total, 0);
}

TEST_P(DriverConformanceTest, ConcurrentClientsOfOneDriver) {
  const int kThreads = 4;
  const int kIterations = 20;
  auto program = driver_->CompileProgram(AddProgram(32), 1, {});
  ASSERT_TRUE(program->program_shape().ok());
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int32_t c = core(t);
      auto loaded = driver_->LoadProgram(c, program.get(), {});
      for (int i = 0; i < kIterations; ++i) {
        const std::vector<float> x = SmallFloats(32, t * 100.0f + i);
        const std::vector<float> y = SmallFloats(32, 1.0f);
        auto a = driver_->Allocate(c, HBM, F32Array(32), {});
        auto b = driver_->Allocate(c, HBM, F32Array(32), {});
        auto out = driver_->Allocate(c, HBM, F32Array(32), {});
        auto ta = driver_->TransferToDevice(x.data(), a.get(), {});
        auto tb = driver_->TransferToDevice(y.data(), b.get(), {});
        auto run = driver_->ExecuteProgram(loaded.get(), {a.get(), b.get()},
                                           {out.get()}, OneReplicaOn(c),
                                           {ta.get(), tb.get()});
        std::vector<float> back(32);
        // Naming `out` orders the read after out's allocation only: the
        // execute is an explicit dependency.
        auto read =
            driver_->TransferFromDevice(out.get(), back.data(), {run.get()});
        absl::Status status = Wait(read);
        EXPECT_TRUE(status.ok()) << status;
        bool ok = status.ok();
        for (auto* h : {&a, &b, &out}) {
          ok =
              Wait(driver_->Deallocate(std::move(*h), {read.get()})).ok() && ok;
        }
        std::vector<float> expected(32);
        for (int k = 0; k < 32; ++k) expected[k] = x[k] + y[k];
        if (ok && SameBits(back, expected)) ++good;
      }
      EXPECT_TRUE(Wait(driver_->UnloadProgram(std::move(loaded), {})).ok());
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(good.load(), kThreads * kIterations);
}

TEST_P(DriverConformanceTest, NullArgumentsAreInvalidArgument) {
  EXPECT_EQ(Wait(driver_->TransferToDevice(nullptr, nullptr, {})).code(),
            absl::StatusCode::kInvalidArgument);
  auto buffer = driver_->Allocate(core(0), HBM, 16, {});
  EXPECT_EQ(Wait(driver_->TransferToDevice(nullptr, buffer.get(), {})).code(),
            absl::StatusCode::kInvalidArgument);
  driver::Event* null_event = nullptr;
  auto waits_on_null = driver_->Allocate(core(0), HBM, 16, {null_event});
  EXPECT_EQ(Wait(waits_on_null->OnReady()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Wait(driver_->ExecuteProgram(nullptr, {}, {}, {}, {})).code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Backends, DriverConformanceTest,
                         ::testing::ValuesIn(AllParams()), ParamName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DriverConformanceTest);

}  // namespace
}  // namespace conformance
}  // namespace tpu
