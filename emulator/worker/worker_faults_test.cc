// Fault rules on an in-process worker: which core each operation kind
// counts on, and what fail, hang, drop_stream and hbm do to the operation,
// its stream and its client.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "emulator/worker/test_requests.h"
#include "emulator/worker/worker.h"
#include "emulator/worker/worker_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

using test_requests::AllocBytes;
using test_requests::Dealloc;
using test_requests::Id;
using test_requests::TransferFrom;
using test_requests::TransferTo;
using ::testing::HasSubstr;

constexpr int64_t kHbm = 1 << 20;

class WorkerFaultsTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> rules) {
    WorkerOptions options;
    options.chips = 1;
    options.cores_per_chip = 2;
    options.hbm_bytes_per_core = kHbm;
    options.compute_threads = 1;
    options.fault_plan = std::make_shared<faults::FaultPlan>();
    for (const std::string& rule : rules) {
      ASSERT_TRUE(options.fault_plan->Add(rule).ok()) << rule;
    }
    auto worker = Worker::Create(options);
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = *std::move(worker);
    auto open = worker_->Open(tpu_driver::OpenRequest());
    ASSERT_TRUE(open.ok());
    client_ = open->client_id();
    stream_ = std::make_unique<TestStream>(worker_.get());
  }

  void TearDown() override {
    stream_.reset();
    worker_.reset();
  }

  int64_t Available(int core) {
    auto info = worker_->QuerySystemInfo(tpu_driver::QuerySystemInfoRequest());
    EXPECT_TRUE(info.ok());
    for (const auto& c : info->system_info().local_core()) {
      if (c.id() == core) return c.hbm_bytes_available();
    }
    return -1;
  }

  std::unique_ptr<Worker> worker_;
  uint32_t client_ = 0;
  std::unique_ptr<TestStream> stream_;
};

// transfer_from counts on its buffer's core: the rule for core 1 leaves the
// read of core 0's buffer alone and fails the one of core 1's.
TEST_F(WorkerFaultsTest, TransfersCountOnTheirBuffersCore) {
  Start({"transfer_from core=1 fail=DATA_LOSS:bit flip on core 1"});
  const int64_t a = Id(client_, 1), b = Id(client_, 2);
  stream_->Send({AllocBytes(a, 0, 4), AllocBytes(b, 1, 4),
                 TransferFrom(Id(client_, 3), a, {a}),
                 TransferFrom(Id(client_, 4), b, {b})});
  EXPECT_EQ(stream_->Code(Id(client_, 3)), 0);
  auto failed = stream_->Await(Id(client_, 4));
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->status().code(),
            static_cast<int>(absl::StatusCode::kDataLoss));
  EXPECT_EQ(failed->status().message(), "bit flip on core 1");
}

TEST_F(WorkerFaultsTest, HeldDeallocEndsWhenTheClientCloses) {
  Start({"dealloc hang"});
  const int64_t a = Id(client_, 1);
  stream_->Send({AllocBytes(a, 0, 1000), Dealloc(Id(client_, 2), a, {a})});
  EXPECT_EQ(stream_->Code(a), 0);
  EXPECT_EQ(stream_->Code(Id(client_, 2), absl::Milliseconds(100)), -1);
  tpu_driver::CloseRequest close;
  close.set_client_id(client_);
  ASSERT_TRUE(worker_->Close(close).ok());
  auto held = stream_->Await(Id(client_, 2));
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->status().code(),
            static_cast<int>(absl::StatusCode::kCancelled));
  EXPECT_THAT(held->status().message(),
              HasSubstr("dealloc was held by fault rule 1 (dealloc hang) "
                        "until its client was closed or the worker reset."));
  EXPECT_EQ(Available(0), kHbm);
}

TEST_F(WorkerFaultsTest, DropStreamCallsTheDropHandlerAndReleasesTheClient) {
  Start({"transfer_to drop_stream"});
  absl::Notification dropped;
  absl::Status drop_status;
  stream_->stream()->SetDropHandler([&](const absl::Status& status) {
    drop_status = status;
    dropped.Notify();
  });
  const int64_t a = Id(client_, 1);
  stream_->Send({AllocBytes(a, 0, 4), TransferTo(Id(client_, 2), a, "abcd")});
  ASSERT_TRUE(dropped.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(drop_status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(drop_status.message(),
              HasSubstr("was dropped by fault rule 1 (transfer_to "
                        "drop_stream) as operation 2 (client "));
  // The client is gone with its buffer; nothing more is delivered.
  EXPECT_EQ(stream_->ResponsesFor(Id(client_, 2)), 0);
  EXPECT_EQ(Available(0), kHbm);
  stream_->Send({AllocBytes(Id(client_, 3), 0, 4)});
  EXPECT_EQ(stream_->Code(Id(client_, 3), absl::Milliseconds(100)), -1);
}

TEST_F(WorkerFaultsTest, HbmLimitHoldsUntilTheRulesAreCleared) {
  Start({"alloc core=1 nth=2 hbm=100"});
  stream_->Send({AllocBytes(Id(client_, 1), 1, 10),
                 AllocBytes(Id(client_, 2), 1, 10),
                 AllocBytes(Id(client_, 3), 1, 200)});
  EXPECT_EQ(stream_->Code(Id(client_, 1)), 0);
  EXPECT_EQ(stream_->Code(Id(client_, 2)), 0);
  auto refused = stream_->Await(Id(client_, 3));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status().code(),
            static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(refused->status().message(),
              HasSubstr("Out of HBM on core 1: requested 200 bytes, 20 bytes "
                        "in use of 100 bytes capacity (80 bytes available)."));
  EXPECT_EQ(Available(1), 80);
  EXPECT_EQ(Available(0), kHbm);
  worker_->fault_plan().Clear();
  EXPECT_EQ(Available(1), kHbm - 20);
}

}  // namespace
}  // namespace tpu::emulator
