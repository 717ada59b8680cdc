// Compile, load and execute through the worker API, with the interpreter.

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "emulator/worker/test_programs.h"
#include "emulator/worker/test_requests.h"
#include "emulator/worker/worker.h"
#include "emulator/worker/worker_test_util.h"
#include "gtest/gtest.h"
#include "hlo/shape.h"

namespace tpu::emulator {
namespace {

using namespace test_requests;  // NOLINT: builders read best unqualified
using absl::StatusCode;

int C(StatusCode code) { return static_cast<int>(code); }

Shape F32(int64_t n) { return Shape::Array(xla::F32, {n}); }

class WorkerExecuteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WorkerOptions options;
    options.hbm_bytes_per_core = 1 << 20;
    options.unknown_handle_wait_ms = 200;
    options.compute_threads = 1;
    auto worker = Worker::Create(options);
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = *std::move(worker);
    client_ = Open();
    stream_ = std::make_unique<TestStream>(worker_.get());
  }
  void TearDown() override {
    stream_.reset();
    worker_.reset();
  }

  uint32_t Open() {
    auto r = worker_->Open(tpu_driver::OpenRequest());
    EXPECT_TRUE(r.ok());
    return r->client_id();
  }
  int64_t I(uint64_t op) { return Id(client_, op); }

  // Compiles AddF32(4) as op 1 and loads it on `core` as op 2.
  void LoadAdd(int core) {
    stream_->Send(
        {Compile(I(1), test_programs::AddF32(4)), Load(I(2), core, I(1))});
    auto compiled = stream_->Await(I(1));
    ASSERT_TRUE(compiled.has_value());
    ASSERT_EQ(compiled->status().code(), 0) << compiled->status().message();
    ASSERT_EQ(stream_->Code(I(2)), 0);
  }

  std::unique_ptr<Worker> worker_;
  uint32_t client_ = 0;
  std::unique_ptr<TestStream> stream_;
};

TEST_F(WorkerExecuteTest, AddEndToEnd) {
  LoadAdd(0);
  stream_->Send({AllocShape(I(3), 0, F32(4)), AllocShape(I(4), 0, F32(4)),
                 AllocShape(I(5), 0, F32(4)),
                 TransferTo(I(6), I(3), F32Bytes({1, 2, 3, 4})),
                 TransferTo(I(7), I(4), F32Bytes({10, 20, 30, 40.5f})),
                 Execute(I(8), I(2), {I(3), I(4)}, {I(5)}, 0, {I(6), I(7)}),
                 TransferFrom(I(9), I(5), {I(8)})});
  auto r = stream_->Await(I(9));
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(stream_->Code(I(8)), 0) << stream_->Await(I(8))->status().message();
  EXPECT_EQ(FromF32Bytes(r->transfer_from().data()),
            (std::vector<float>{11, 22, 33, 44.5f}));
}

TEST_F(WorkerExecuteTest, CompileResponseCarriesProgramShape) {
  stream_->Send({Compile(I(1), test_programs::AddAndMultiplyTuple(3))});
  auto r = stream_->Await(I(1));
  ASSERT_EQ(r->status().code(), 0) << r->status().message();
  const auto& shape = r->compile().metadata().program_shape();
  ASSERT_EQ(shape.parameters_size(), 2);
  EXPECT_EQ(*Shape::FromProto(shape.parameters(0)), F32(3));
  EXPECT_EQ(*Shape::FromProto(shape.result()), Shape::Tuple({F32(3), F32(3)}));
  EXPECT_TRUE(r->IsInitialized());
}

TEST_F(WorkerExecuteTest, TupleResultIntoTupleHandleOrPerElement) {
  stream_->Send({Compile(I(1), test_programs::AddAndMultiplyTuple(2)),
                 Load(I(2), 5, I(1)), AllocShape(I(3), 5, F32(2)),
                 AllocShape(I(4), 5, F32(2)), AllocShape(I(5), 5, F32(2)),
                 AllocShape(I(6), 5, F32(2)), AllocTuple(I(7), 5, {I(5), I(6)}),
                 TransferTo(I(8), I(3), F32Bytes({2, 3})),
                 TransferTo(I(9), I(4), F32Bytes({5, 7})),
                 Execute(I(10), I(2), {I(3), I(4)}, {I(7)}, 5, {I(8), I(9)}),
                 TransferFrom(I(11), I(5), {I(10)}),
                 TransferFrom(I(12), I(6), {I(10)})});
  ASSERT_EQ(stream_->Code(I(10)), 0)
      << stream_->Await(I(10))->status().message();
  EXPECT_EQ(FromF32Bytes(stream_->Await(I(11))->transfer_from().data()),
            (std::vector<float>{7, 10}));
  EXPECT_EQ(FromF32Bytes(stream_->Await(I(12))->transfer_from().data()),
            (std::vector<float>{10, 21}));
  // One output handle per element of the tuple works too.
  stream_->Send({AllocShape(I(13), 5, F32(2)), AllocShape(I(14), 5, F32(2)),
                 Execute(I(15), I(2), {I(4), I(4)}, {I(13), I(14)}, 5),
                 TransferFrom(I(16), I(14), {I(15)})});
  ASSERT_EQ(stream_->Code(I(15)), 0)
      << stream_->Await(I(15))->status().message();
  EXPECT_EQ(FromF32Bytes(stream_->Await(I(16))->transfer_from().data()),
            (std::vector<float>{25, 49}));
}

TEST_F(WorkerExecuteTest, TupleParameterFromAllocTuple) {
  stream_->Send({Compile(I(1), test_programs::SumTupleParameter(2)),
                 Load(I(2), 1, I(1)), AllocShape(I(3), 1, F32(2)),
                 AllocBytes(I(4), 1, 8),  // by bytes: matches by size
                 AllocTuple(I(5), 1, {I(3), I(4)}), AllocShape(I(6), 1, F32(2)),
                 TransferTo(I(7), I(3), F32Bytes({1, 2})),
                 TransferTo(I(8), I(4), F32Bytes({0.5f, 0.25f})),
                 Execute(I(9), I(2), {I(5)}, {I(6)}, 1, {I(7), I(8)}),
                 TransferFrom(I(10), I(6), {I(9)})});
  ASSERT_EQ(stream_->Code(I(9)), 0) << stream_->Await(I(9))->status().message();
  EXPECT_EQ(FromF32Bytes(stream_->Await(I(10))->transfer_from().data()),
            (std::vector<float>{1.5f, 2.25f}));
}

TEST_F(WorkerExecuteTest, ShapeMismatchesAreInvalidArgument) {
  LoadAdd(0);
  stream_->Send(
      {AllocShape(I(3), 0, F32(4)), AllocShape(I(4), 0, F32(3)),
       AllocShape(I(5), 0, F32(4)), AllocShape(I(6), 1, F32(4)),
       AllocShape(I(7), 0, Shape::Array(xla::S32, {4})),
       Execute(I(10), I(2), {I(3), I(4)}, {I(5)}, 0),    // f32[3] in
       Execute(I(11), I(2), {I(3)}, {I(5)}, 0),          // 1 of 2
       Execute(I(12), I(2), {I(3), I(3)}, {I(4)}, 0),    // f32[3] out
       Execute(I(13), I(2), {I(3), I(6)}, {I(5)}, 0),    // core 1
       Execute(I(14), I(2), {I(3), I(7)}, {I(5)}, 0),    // s32
       Execute(I(15), I(2), {I(3), I(3)}, {}, 0),        // no output
       Execute(I(16), I(3), {I(3), I(3)}, {I(5)}, 0)});  // not a program
  auto r = stream_->Await(I(10));
  EXPECT_EQ(r->status().code(), C(StatusCode::kInvalidArgument));
  EXPECT_NE(r->status().message().find("input 1"), std::string::npos)
      << r->status().message();
  EXPECT_NE(r->status().message().find("f32[3]"), std::string::npos);
  EXPECT_NE(r->status().message().find("f32[4]"), std::string::npos);
  for (int op : {11, 12, 13, 14, 15, 16}) {
    EXPECT_EQ(stream_->Code(I(op)), C(StatusCode::kInvalidArgument)) << op;
  }
  // The output buffer was left alone by every failed execution.
  stream_->Send({TransferFrom(I(17), I(5))});
  EXPECT_EQ(stream_->Await(I(17))->transfer_from().data(),
            std::string(16, '\0'));
}

TEST_F(WorkerExecuteTest, UnloadedProgramAndGarbageHlo) {
  LoadAdd(2);
  stream_->Send({Unload(I(3), I(2)), AllocShape(I(4), 2, F32(4)),
                 Execute(I(5), I(2), {I(4), I(4)}, {I(4)}, 2, {I(3)}),
                 Compile(I(6), test_programs::UnknownOpcode())});
  EXPECT_EQ(stream_->Code(I(3)), 0);
  EXPECT_EQ(stream_->Code(I(5)), C(StatusCode::kNotFound));
  auto bad = stream_->Await(I(6));
  EXPECT_EQ(bad->status().code(), C(StatusCode::kUnimplemented))
      << bad->status().message();
  EXPECT_NE(bad->status().message().find("frobnicate"), std::string::npos);
}

TEST_F(WorkerExecuteTest, DeviceAssignmentDecidesReplicaId) {
  const Shape u32 = Shape::Scalar(xla::U32);
  stream_->Send({Compile(I(1), test_programs::ReplicaId(), 2),
                 Load(I(2), 4, I(1)), Load(I(3), 6, I(1)),
                 AllocShape(I(4), 4, u32), AllocShape(I(5), 6, u32)});
  Entry on4 = Execute(I(6), I(2), {}, {I(4)}, 4);
  Entry on6 = Execute(I(7), I(3), {}, {I(5)}, 6);
  for (Entry* e : {&on4, &on6}) {
    auto* da = e->mutable_execute()->mutable_device_assignment();
    da->Clear();
    da->set_replica_count(2);
    da->set_computation_count(1);
    auto* devices = da->add_computation_devices();
    devices->add_replica_device_ids(6);  // replica 0 on core 6
    devices->add_replica_device_ids(4);  // replica 1 on core 4
  }
  Entry missing = Execute(I(8), I(2), {}, {I(4)}, 4);  // 1 x 1: wrong count
  stream_->Send({on4, on6, missing, TransferFrom(I(9), I(4), {I(6)}),
                 TransferFrom(I(10), I(5), {I(7)})});
  ASSERT_EQ(stream_->Code(I(6)), 0) << stream_->Await(I(6))->status().message();
  ASSERT_EQ(stream_->Code(I(7)), 0);
  EXPECT_EQ(stream_->Code(I(8)), C(StatusCode::kInvalidArgument));
  uint32_t r4 = 99, r6 = 99;
  std::memcpy(&r4, stream_->Await(I(9))->transfer_from().data().data(), 4);
  std::memcpy(&r6, stream_->Await(I(10))->transfer_from().data().data(), 4);
  EXPECT_EQ(r4, 1u);
  EXPECT_EQ(r6, 0u);
}

// A cheap program may run on the thread that submits it, but not when the
// launch barrier makes its launch wait for the assignment's other cores: those
// are launched by later entries of the same request, on the same thread.
TEST(WorkerLaunchBarrierTest,
     CheapProgramsOnSeveralCoresStillMeetAtTheBarrier) {
  WorkerOptions options;
  options.hbm_bytes_per_core = 1 << 20;
  options.compute_threads = 1;
  options.launch_barrier = true;
  auto worker = Worker::Create(options);
  ASSERT_TRUE(worker.ok()) << worker.status();
  auto opened = (*worker)->Open(tpu_driver::OpenRequest());
  ASSERT_TRUE(opened.ok());
  const uint32_t client = opened->client_id();
  auto I = [&](uint64_t op) { return Id(client, op); };
  TestStream stream(worker->get());
  const Shape u32 = Shape::Scalar(xla::U32);
  stream.Send({Compile(I(1), test_programs::ReplicaId(), 1),
               Load(I(2), 0, I(1)), Load(I(3), 1, I(1)),
               AllocShape(I(4), 0, u32), AllocShape(I(5), 1, u32)});
  ASSERT_EQ(stream.Code(I(2)), 0);
  ASSERT_EQ(stream.Code(I(3)), 0);
  // One replica on two partitions: core 0 and core 1 launch together.
  Entry on0 = Execute(I(6), I(2), {}, {I(4)}, 0);
  Entry on1 = Execute(I(7), I(3), {}, {I(5)}, 1);
  for (Entry* e : {&on0, &on1}) {
    auto* da = e->mutable_execute()->mutable_device_assignment();
    da->Clear();
    da->set_replica_count(1);
    da->set_computation_count(2);
    da->add_computation_devices()->add_replica_device_ids(0);
    da->add_computation_devices()->add_replica_device_ids(1);
  }
  stream.Send({on0, on1});
  EXPECT_EQ(stream.Code(I(6)), 0) << stream.Await(I(6))->status().message();
  EXPECT_EQ(stream.Code(I(7)), 0) << stream.Await(I(7))->status().message();
}

TEST_F(WorkerExecuteTest, CloseCancelsARunningProgram) {
  const Shape s32 = Shape::Scalar(xla::S32);
  stream_->Send({Compile(I(1), test_programs::InfiniteLoop()),
                 Load(I(2), 0, I(1)), AllocShape(I(3), 0, s32),
                 AllocShape(I(4), 0, s32),
                 Execute(I(5), I(2), {I(3)}, {I(4)}, 0)});
  ASSERT_EQ(stream_->Code(I(2)), 0);
  // The loop holds core 0: another client's program queues behind it, while
  // core 1 stays free.
  const uint32_t other = Open();
  auto O = [other](uint64_t op) { return Id(other, op); };
  TestStream other_stream(worker_.get());
  other_stream.Send({Compile(O(1), test_programs::AddF32(4)),
                     Load(O(2), 0, O(1)), Load(O(3), 1, O(1)),
                     AllocShape(O(4), 0, F32(4)), AllocShape(O(5), 1, F32(4)),
                     Execute(O(6), O(2), {O(4), O(4)}, {O(4)}, 0),
                     Execute(O(7), O(3), {O(5), O(5)}, {O(5)}, 1)});
  EXPECT_EQ(other_stream.Code(O(7)), 0);
  auto queued = other_stream.Await(O(6), absl::Milliseconds(100));
  EXPECT_FALSE(queued.has_value()) << queued->status().message();
  auto looping = stream_->Await(I(5), absl::ZeroDuration());
  EXPECT_FALSE(looping.has_value()) << looping->status().message();
  tpu_driver::CloseRequest close;
  close.set_client_id(client_);
  ASSERT_TRUE(worker_->Close(close).ok());
  auto cancelled = stream_->Await(I(5));
  ASSERT_TRUE(cancelled.has_value());
  EXPECT_EQ(cancelled->status().code(), C(StatusCode::kCancelled))
      << cancelled->status().message();
  EXPECT_EQ(other_stream.Code(O(6)), 0);
}

// Cores share a few OS threads (fibers, one per CPU at most): endless loops
// on seven of the eight cores must still leave the eighth its time slices,
// as OS threads would. On two CPUs, without time slices, the first two loops
// would hold both threads and the program on core 7 would never run.
TEST_F(WorkerExecuteTest, LoopsOnSevenCoresLeaveTheEighthServing) {
  const Shape s32 = Shape::Scalar(xla::S32);
  std::vector<tpu_driver::StreamRequest::Entry> loops = {
      Compile(I(1), test_programs::InfiniteLoop())};
  for (int core = 0; core < 7; ++core) {
    const uint64_t op = 10 + 10 * core;
    loops.push_back(Load(I(op), core, I(1)));
    loops.push_back(AllocShape(I(op + 1), core, s32));
    loops.push_back(Execute(I(op + 2), I(op), {I(op + 1)}, {I(op + 1)}, core));
  }
  stream_->Send(loops);
  ASSERT_EQ(stream_->Code(I(70)), 0);
  const uint32_t other = Open();
  auto O = [other](uint64_t op) { return Id(other, op); };
  TestStream other_stream(worker_.get());
  // Larger than the worker runs inline on the submitting thread, so that it
  // runs on core 7's fiber.
  constexpr int64_t kElements = 1 << 15;
  other_stream.Send({Compile(O(1), test_programs::AddF32(kElements)),
                     Load(O(2), 7, O(1)), AllocShape(O(3), 7, F32(kElements)),
                     Execute(O(4), O(2), {O(3), O(3)}, {O(3)}, 7)});
  EXPECT_EQ(other_stream.Code(O(4)), 0);
  for (int core = 0; core < 7; ++core) {
    EXPECT_FALSE(
        stream_->Await(I(12 + 10 * core), absl::ZeroDuration()).has_value())
        << "core " << core;
  }
  tpu_driver::CloseRequest close;
  close.set_client_id(client_);
  ASSERT_TRUE(worker_->Close(close).ok());
  for (int core = 0; core < 7; ++core) {
    EXPECT_EQ(stream_->Code(I(12 + 10 * core)), C(StatusCode::kCancelled))
        << "core " << core;
  }
}

TEST_F(WorkerExecuteTest, ResetCancelsARunningProgram) {
  const Shape s32 = Shape::Scalar(xla::S32);
  stream_->Send({Compile(I(1), test_programs::InfiniteLoop()),
                 Load(I(2), 3, I(1)), AllocShape(I(3), 3, s32),
                 TransferTo(I(4), I(3), S32Bytes(5)),
                 Execute(I(5), I(2), {I(3)}, {I(3)}, 3, {I(4)})});
  ASSERT_EQ(stream_->Code(I(4)), 0);
  EXPECT_FALSE(stream_->Await(I(5), absl::Milliseconds(50)).has_value());
  ASSERT_TRUE(worker_->Reset(tpu_driver::ResetRequest()).ok());
  EXPECT_EQ(stream_->Code(I(5)), C(StatusCode::kCancelled));
}

}  // namespace
}  // namespace tpu::emulator
