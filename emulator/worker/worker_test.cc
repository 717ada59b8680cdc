// The worker through its transport-independent API: every request kind, the
// error statuses, client isolation and release. Execution tests live in
// worker_execute_test.cc.

#include "emulator/worker/worker.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "emulator/worker/test_requests.h"
#include "emulator/worker/worker_test_util.h"
#include "gtest/gtest.h"
#include "hlo/shape.h"

namespace tpu::emulator {
namespace {

using namespace test_requests;  // NOLINT: builders read best unqualified
using absl::StatusCode;

constexpr int64_t kHbm = 1 << 20;

int C(StatusCode code) { return static_cast<int>(code); }

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(WorkerOptions()); }

  void Start(WorkerOptions options) {
    options.hbm_bytes_per_core = kHbm;
    options.unknown_handle_wait_ms = 200;
    options.compute_threads = 1;
    streams_.clear();
    auto worker = Worker::Create(options);
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = *std::move(worker);
  }

  uint32_t Open() {
    auto r = worker_->Open(tpu_driver::OpenRequest());
    EXPECT_TRUE(r.ok());
    return r->client_id();
  }

  TestStream& NewStream() {
    streams_.push_back(std::make_unique<TestStream>(worker_.get()));
    return *streams_.back();
  }

  int64_t Available(int core) {
    auto info = worker_->QuerySystemInfo(tpu_driver::QuerySystemInfoRequest());
    EXPECT_TRUE(info.ok());
    for (const auto& c : info->system_info().local_core()) {
      if (c.id() == core) return c.hbm_bytes_available();
    }
    return -1;
  }

  void TearDown() override {
    streams_.clear();
    worker_.reset();
  }

  std::unique_ptr<Worker> worker_;
  std::vector<std::unique_ptr<TestStream>> streams_;
};

TEST_F(WorkerTest, OpenAssignsDistinctTwentyBitIds) {
  auto a = worker_->Open(tpu_driver::OpenRequest());
  auto b = worker_->Open(tpu_driver::OpenRequest());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->client_id(), 0u);
  EXPECT_NE(a->client_id(), b->client_id());
  EXPECT_LT(a->client_id(), 1u << 20);
  EXPECT_EQ(a->max_idle_time_seconds(), 3600);
}

TEST_F(WorkerTest, AllocTransferRoundTrip) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocShape(Id(c, 1), 0, Shape::Array(xla::F32, {4})),
          TransferTo(Id(c, 2), Id(c, 1), F32Bytes({1, 2, 3, 4})),
          TransferFrom(Id(c, 3), Id(c, 1), {Id(c, 2)})});
  auto r = s.Await(Id(c, 3));
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->status().code(), 0) << r->status().message();
  EXPECT_EQ(FromF32Bytes(r->transfer_from().data()),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(s.Code(Id(c, 1)), 0);
  EXPECT_EQ(s.Code(Id(c, 2)), 0);
  EXPECT_EQ(Available(0), kHbm - 16);
}

TEST_F(WorkerTest, OneRequestAnswersInOneBatch) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  std::vector<Entry> entries;
  for (int i = 1; i <= 50; ++i) entries.push_back(AllocBytes(Id(c, i), 1, 8));
  s.Send(std::move(entries));
  for (int i = 1; i <= 50; ++i) ASSERT_EQ(s.Code(Id(c, i)), 0);
  EXPECT_EQ(s.batches(), 1);
}

TEST_F(WorkerTest, NeverWrittenAndEmptyBuffersRead) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 0, 12), AllocBytes(Id(c, 2), 0, 0),
          TransferFrom(Id(c, 3), Id(c, 1)), TransferFrom(Id(c, 4), Id(c, 2))});
  auto zeros = s.Await(Id(c, 3));
  ASSERT_TRUE(zeros.has_value());
  EXPECT_EQ(zeros->transfer_from().data(), std::string(12, '\0'));
  auto empty = s.Await(Id(c, 4));
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->status().code(), 0);
  EXPECT_TRUE(empty->has_transfer_from());
  EXPECT_TRUE(empty->transfer_from().has_data());
  EXPECT_TRUE(empty->IsInitialized());
}

TEST_F(WorkerTest, TransferSizeMustMatchExactly) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocShape(Id(c, 1), 0, Shape::Array(xla::F32, {4})),
          TransferTo(Id(c, 2), Id(c, 1), std::string(12, 'x')),
          AllocBytes(Id(c, 3), 0, 8),
          TransferTo(Id(c, 4), Id(c, 3), std::string(9, 'x')),
          TransferTo(Id(c, 5), Id(c, 3), std::string(8, 'x'))});
  auto r = s.Await(Id(c, 2));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status().code(), C(StatusCode::kInvalidArgument));
  EXPECT_NE(r->status().message().find("12 bytes"), std::string::npos)
      << r->status().message();
  EXPECT_NE(r->status().message().find("exactly 16 bytes"), std::string::npos);
  EXPECT_EQ(s.Code(Id(c, 4)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 5)), 0);
}

TEST_F(WorkerTest, HbmExhaustionAndRelease) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 2, kHbm - 100), AllocBytes(Id(c, 2), 2, 101)});
  EXPECT_EQ(s.Code(Id(c, 1)), 0);
  auto r = s.Await(Id(c, 2));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status().code(), C(StatusCode::kResourceExhausted));
  const std::string& m = r->status().message();
  EXPECT_NE(m.find("requested 101 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find(absl::StrCat(kHbm - 100, " bytes in use")),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(absl::StrCat(kHbm, " bytes capacity")), std::string::npos);
  EXPECT_NE(m.find("core 2"), std::string::npos);
  EXPECT_EQ(Available(2), 100);
  EXPECT_EQ(Available(3), kHbm);
  s.Send({Dealloc(Id(c, 3), Id(c, 1))});
  EXPECT_EQ(s.Code(Id(c, 3)), 0);
  EXPECT_EQ(Available(2), kHbm);
  // A huge request is refused, never attempted.
  s.Send({AllocBytes(Id(c, 4), 2, int64_t{1} << 62)});
  EXPECT_EQ(s.Code(Id(c, 4)), C(StatusCode::kResourceExhausted));
}

TEST_F(WorkerTest, MalformedEntriesGetErrorsAndStreamGoesOn) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  Entry no_id = AllocBytes(0, 0, 4);
  no_id.clear_operation_id();
  xla::ShapeProto bad_shape = Shape::Array(xla::F32, {4}).ToProto();
  bad_shape.set_dimensions(0, -3);
  Entry bad_alloc = Base(Id(c, 5));
  bad_alloc.mutable_alloc()->set_core_id(0);
  *bad_alloc.mutable_alloc()->mutable_shape() = bad_shape;
  Entry no_size = Base(Id(c, 6));
  no_size.mutable_alloc()->set_core_id(0);
  Entry tuple_shape = AllocShape(
      Id(c, 7), 0,
      Shape::Tuple({Shape::Scalar(xla::F32), Shape::Scalar(xla::F32)}));
  s.Send({Base(Id(c, 1)),               // empty oneof
          no_id,                        // no operation id
          AllocBytes(Id(c, 2), 8, 4),   // core 8 does not exist
          AllocBytes(Id(c, 3), -1, 4),  // negative core
          AllocBytes(Id(c, 4), 0, -5),  // negative size
          bad_alloc, no_size, tuple_shape,
          AllocBytes(Id(c, 9), 0, 4)});  // and the stream still works
  EXPECT_EQ(s.Code(Id(c, 1)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(0), C(StatusCode::kInvalidArgument));
  auto core = s.Await(Id(c, 2));
  EXPECT_EQ(core->status().code(), C(StatusCode::kInvalidArgument));
  EXPECT_NE(core->status().message().find("cores 0..7"), std::string::npos)
      << core->status().message();
  EXPECT_EQ(s.Code(Id(c, 3)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 4)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 5)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 6)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 7)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 9)), 0);
}

TEST_F(WorkerTest, UnknownHandleIsNotFoundAfterBoundedWait) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({TransferFrom(Id(c, 50), Id(c, 40))});
  auto r = s.Await(Id(c, 50));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status().code(), C(StatusCode::kNotFound));
  EXPECT_NE(r->status().message().find("operation 40 (client"),
            std::string::npos)
      << r->status().message();
  // Deallocated handles are NOT_FOUND too.
  s.Send({AllocBytes(Id(c, 51), 0, 4), Dealloc(Id(c, 52), Id(c, 51)),
          TransferFrom(Id(c, 53), Id(c, 51), {Id(c, 52)}),
          Dealloc(Id(c, 54), Id(c, 51), {Id(c, 52)})});
  EXPECT_EQ(s.Code(Id(c, 53)), C(StatusCode::kNotFound));
  EXPECT_EQ(s.Code(Id(c, 54)), C(StatusCode::kNotFound));
  // A wait_for_id that never arrives, likewise.
  s.Send({AllocBytes(Id(c, 70), 0, 4, {Id(c, 60)})});
  EXPECT_EQ(s.Code(Id(c, 70)), C(StatusCode::kNotFound));
}

TEST_F(WorkerTest, OutOfOrderAcrossStreams) {
  const uint32_t c = Open();
  TestStream& a = NewStream();
  TestStream& b = NewStream();
  // Stream b names handle 1 and waits for op 2 before either arrived on a.
  b.Send({TransferFrom(Id(c, 3), Id(c, 1), {Id(c, 2)})});
  EXPECT_FALSE(b.Await(Id(c, 3), absl::Milliseconds(20)).has_value());
  a.Send({AllocBytes(Id(c, 1), 1, 4),
          TransferTo(Id(c, 2), Id(c, 1), std::string("abcd"))});
  auto r = b.Await(Id(c, 3));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status().code(), 0) << r->status().message();
  EXPECT_EQ(r->transfer_from().data(), "abcd");
}

TEST_F(WorkerTest, FailedDependencyIsNamed) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 99, 4),
          TransferTo(Id(c, 2), Id(c, 1), std::string("abcd")),
          AllocBytes(Id(c, 3), 0, 4, {Id(c, 2)})});
  auto r = s.Await(Id(c, 2));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status().code(), C(StatusCode::kInvalidArgument));
  EXPECT_NE(r->status().message().find(
                absl::StrCat("operation 1 (client ", c, ") failed")),
            std::string::npos)
      << r->status().message();
  auto r3 = s.Await(Id(c, 3));
  EXPECT_NE(r3->status().message().find(
                absl::StrCat("operation 2 (client ", c, ") failed")),
            std::string::npos)
      << r3->status().message();
}

TEST_F(WorkerTest, WaitForZeroIsIgnoredAndDuplicatesRejected) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 0, 4, {0})});
  EXPECT_EQ(s.Code(Id(c, 1)), 0);
  s.Send({AllocBytes(Id(c, 1), 0, 4)});
  // The duplicate gets its own error response for the same id.
  for (int i = 0; i < 100 && s.ResponsesFor(Id(c, 1)) < 2; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(s.ResponsesFor(Id(c, 1)), 2);
  EXPECT_EQ(Available(0), kHbm - 4);
}

TEST_F(WorkerTest, ClientsAreIsolated) {
  const uint32_t a = Open();
  const uint32_t b = Open();
  TestStream& s = NewStream();
  TestStream& sb = NewStream();
  s.Send({AllocBytes(Id(a, 1), 0, 4),
          TransferTo(Id(a, 2), Id(a, 1), std::string("aaaa"))});
  ASSERT_EQ(s.Code(Id(a, 2)), 0);
  // Another client's handles are not its own.
  sb.Send({TransferFrom(Id(b, 1), Id(a, 1)), Dealloc(Id(b, 2), Id(a, 1)),
           AllocBytes(Id(b, 3), 0, 4, {Id(a, 2)})});
  auto r = sb.Await(Id(b, 1));
  EXPECT_EQ(r->status().code(), C(StatusCode::kInvalidArgument));
  EXPECT_NE(r->status().message().find(absl::StrCat("belongs to client ", a)),
            std::string::npos)
      << r->status().message();
  EXPECT_EQ(sb.Code(Id(b, 2)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(sb.Code(Id(b, 3)), C(StatusCode::kInvalidArgument));
  // Nor is another client's stream: a stream acts for the client it first
  // carried, so a's entry on b's stream does not reach a's buffer.
  sb.Send({Dealloc(Id(a, 4), Id(a, 1))});
  auto refused = sb.Await(Id(a, 4));
  EXPECT_EQ(refused->status().code(), C(StatusCode::kPermissionDenied));
  EXPECT_EQ(refused->status().message(),
            absl::StrCat("operation 4 (client ", a,
                         "): this stream belongs to client ", b,
                         "; a StreamExecute stream acts only for the client "
                         "whose id it first used. Open a stream of its own "
                         "for client ",
                         a, "."));
  s.Send({TransferFrom(Id(a, 3), Id(a, 1))});
  EXPECT_EQ(s.Await(Id(a, 3))->transfer_from().data(), "aaaa");
}

TEST_F(WorkerTest, CloseReleasesEverythingAndUnknownCloseSucceeds) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 0, 1000), AllocBytes(Id(c, 2), 1, 2000)});
  ASSERT_EQ(s.Code(Id(c, 2)), 0);
  EXPECT_EQ(Available(0), kHbm - 1000);
  tpu_driver::CloseRequest close;
  close.set_client_id(c);
  EXPECT_TRUE(worker_->Close(close).ok());
  EXPECT_EQ(Available(0), kHbm);
  EXPECT_EQ(Available(1), kHbm);
  s.Send({AllocBytes(Id(c, 3), 0, 4)});
  EXPECT_EQ(s.Code(Id(c, 3)), C(StatusCode::kFailedPrecondition));
  close.set_client_id(123456);
  EXPECT_TRUE(worker_->Close(close).ok());
  EXPECT_TRUE(worker_->Close(close).ok());
}

TEST_F(WorkerTest, CloseFailsWaitingOperations) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 5), 0, 4, {Id(c, 4)})});  // waits for op 4
  tpu_driver::CloseRequest close;
  close.set_client_id(c);
  ASSERT_TRUE(worker_->Close(close).ok());
  EXPECT_EQ(s.Code(Id(c, 5)), C(StatusCode::kCancelled));
}

TEST_F(WorkerTest, ResetReleasesAllClients) {
  const uint32_t a = Open();
  const uint32_t b = Open();
  TestStream& s = NewStream();
  TestStream& sb = NewStream();
  s.Send({AllocBytes(Id(a, 1), 0, 100)});
  sb.Send({AllocBytes(Id(b, 1), 0, 200)});
  ASSERT_EQ(s.Code(Id(a, 1)), 0);
  ASSERT_EQ(sb.Code(Id(b, 1)), 0);
  EXPECT_EQ(Available(0), kHbm - 300);
  ASSERT_TRUE(worker_->Reset(tpu_driver::ResetRequest()).ok());
  EXPECT_EQ(Available(0), kHbm);
  s.Send({AllocBytes(Id(a, 2), 0, 4)});
  EXPECT_EQ(s.Code(Id(a, 2)), C(StatusCode::kFailedPrecondition));
  const uint32_t fresh = Open();
  EXPECT_NE(fresh, a);
  EXPECT_NE(fresh, b);
}

TEST_F(WorkerTest, AbortedStreamReleasesItsClient) {
  const uint32_t a = Open();
  const uint32_t b = Open();
  TestStream& s = NewStream();
  TestStream& other = NewStream();
  s.Send({AllocBytes(Id(a, 1), 0, 100)});
  other.Send({AllocBytes(Id(b, 1), 0, 200)});
  ASSERT_EQ(s.Code(Id(a, 1)), 0);
  ASSERT_EQ(other.Code(Id(b, 1)), 0);
  s.stream()->Abort();
  EXPECT_EQ(Available(0), kHbm - 200);
  TestStream& again = NewStream();
  again.Send({AllocBytes(Id(a, 2), 0, 4)});
  other.Send({AllocBytes(Id(b, 2), 0, 4)});
  EXPECT_EQ(again.Code(Id(a, 2)), C(StatusCode::kFailedPrecondition));
  EXPECT_EQ(other.Code(Id(b, 2)), 0);
}

TEST_F(WorkerTest, IdleClientIsReleased) {
  WorkerOptions options;
  options.max_idle_time_seconds = 1;
  Start(options);
  const uint32_t c = Open();
  {
    TestStream s(worker_.get());
    s.Send({AllocBytes(Id(c, 1), 0, 100)});
    ASSERT_EQ(s.Code(Id(c, 1)), 0);
  }  // the stream ends: the client is now idle
  EXPECT_EQ(Available(0), kHbm - 100);
  bool released = false;
  for (int i = 0; i < 300 && !released; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    released = Available(0) == kHbm;
  }
  EXPECT_TRUE(released);
}

TEST_F(WorkerTest, ClientWithOpenStreamIsNotIdle) {
  WorkerOptions options;
  options.max_idle_time_seconds = 1;
  Start(options);
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 0, 100)});
  ASSERT_EQ(s.Code(Id(c, 1)), 0);
  absl::SleepFor(absl::Milliseconds(1600));
  EXPECT_EQ(Available(0), kHbm - 100);
}

TEST_F(WorkerTest, TuplesAndDeviceToDeviceCopies) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 0, 4), AllocBytes(Id(c, 2), 0, 4),
          AllocBytes(Id(c, 3), 1, 4), AllocBytes(Id(c, 4), 1, 8),
          TransferTo(Id(c, 5), Id(c, 1), std::string("wxyz")),
          AllocTuple(Id(c, 6), 0, {Id(c, 1), Id(c, 2)}),
          TransferFromTo(Id(c, 7), Id(c, 1), Id(c, 3), {Id(c, 5)}),
          TransferFrom(Id(c, 8), Id(c, 3), {Id(c, 7)}),
          TransferFromTo(Id(c, 9), Id(c, 1), Id(c, 4)),
          TransferTo(Id(c, 10), Id(c, 6), std::string()),
          AllocTuple(Id(c, 11), 1, {Id(c, 1)}),
          Dealloc(Id(c, 12), Id(c, 6), {Id(c, 8)})});
  EXPECT_EQ(s.Code(Id(c, 6)), 0);
  auto copied = s.Await(Id(c, 8));
  ASSERT_EQ(copied->status().code(), 0) << copied->status().message();
  EXPECT_EQ(copied->transfer_from().data(), "wxyz");
  EXPECT_EQ(s.Code(Id(c, 9)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 10)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 11)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 12)), 0);
  // The tuple's elements survive the tuple.
  s.Send({TransferFrom(Id(c, 13), Id(c, 1), {Id(c, 12)})});
  EXPECT_EQ(s.Await(Id(c, 13))->transfer_from().data(), "wxyz");
}

TEST_F(WorkerTest, WrongHandleKinds) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 0, 4), Load(Id(c, 2), 0, Id(c, 1)),
          Unload(Id(c, 3), Id(c, 1)),
          Execute(Id(c, 4), Id(c, 1), {}, {Id(c, 1)}, 0)});
  auto load = s.Await(Id(c, 2));
  EXPECT_EQ(load->status().code(), C(StatusCode::kInvalidArgument));
  EXPECT_NE(
      load->status().message().find("is a buffer, not a compiled program"),
      std::string::npos)
      << load->status().message();
  EXPECT_EQ(s.Code(Id(c, 3)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 4)), C(StatusCode::kInvalidArgument));
}

TEST_F(WorkerTest, CompileRejectsMissingModuleAndBadReplicas) {
  const uint32_t c = Open();
  TestStream& s = NewStream();
  Entry no_module = Base(Id(c, 1));
  no_module.mutable_compile();
  s.Send({no_module, Compile(Id(c, 2), xla::HloProto(), 0)});
  EXPECT_EQ(s.Code(Id(c, 1)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 2)), C(StatusCode::kInvalidArgument));
}

TEST_F(WorkerTest, FinishWaitsForInFlightOperations) {
  const uint32_t c = Open();
  TestStream s(worker_.get());
  s.Send({TransferFrom(Id(c, 2), Id(c, 1))});  // waits 200 ms, then fails
  s.stream()->Finish();
  EXPECT_EQ(s.ResponsesFor(Id(c, 2)), 1);
  EXPECT_EQ(s.Code(Id(c, 2), absl::ZeroDuration()), C(StatusCode::kNotFound));
}

TEST_F(WorkerTest, PodSliceHostServesOnlyItsCores) {
  WorkerOptions options;
  options.pod_hosts = 2;
  options.host_id = 1;
  Start(options);
  auto info = worker_->QuerySystemInfo(tpu_driver::QuerySystemInfoRequest());
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->system_info().core_count(), 16);
  EXPECT_EQ(info->system_info().local_core_size(), 8);
  EXPECT_EQ(info->system_info().host_id(), 1);
  const uint32_t c = Open();
  TestStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 0, 4), AllocBytes(Id(c, 2), 8, 4),
          AllocBytes(Id(c, 3), 15, 4)});
  auto r = s.Await(Id(c, 1));
  EXPECT_EQ(r->status().code(), C(StatusCode::kInvalidArgument));
  EXPECT_NE(r->status().message().find("cores 8..15 (host 1 of 2)"),
            std::string::npos)
      << r->status().message();
  EXPECT_EQ(s.Code(Id(c, 2)), 0);
  EXPECT_EQ(s.Code(Id(c, 3)), 0);
  EXPECT_EQ(Available(15), kHbm - 4);
}

TEST(WorkerCreateTest, RejectsBadOptions) {
  WorkerOptions o;
  o.chips = 0;
  EXPECT_EQ(Worker::Create(o).status().code(), StatusCode::kInvalidArgument);
  o = WorkerOptions();
  o.hbm_bytes_per_core = -1;
  EXPECT_EQ(Worker::Create(o).status().code(), StatusCode::kInvalidArgument);
  o = WorkerOptions();
  o.pod_hosts = 2;
  o.host_id = 2;
  EXPECT_EQ(Worker::Create(o).status().code(), StatusCode::kInvalidArgument);
  o = WorkerOptions();
  o.max_idle_time_seconds = 0;
  EXPECT_EQ(Worker::Create(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(WorkerCreateTest, DefaultTopologyStartsWithoutCommittingHbm) {
  // 8 cores x 16 GiB announced; nothing is committed until written.
  auto worker = Worker::Create(WorkerOptions());
  ASSERT_TRUE(worker.ok());
  auto info = (*worker)->QuerySystemInfo(tpu_driver::QuerySystemInfoRequest());
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->system_info().local_core_size(), 8);
  EXPECT_EQ(info->system_info().local_core(7).hbm_bytes_available(),
            int64_t{16} << 30);
  EXPECT_TRUE(info->IsInitialized());
}

}  // namespace
}  // namespace tpu::emulator
