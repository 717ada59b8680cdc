#include "client/execute_wait.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "driver/testing/manual_event.h"
#include "gtest/gtest.h"

namespace tpu::client {
namespace {

using driver::testing::ManualEvent;

struct Warnings {
  absl::Mutex mu;
  std::vector<std::string> lines;
  std::function<void(absl::string_view)> Sink() {
    return [this](absl::string_view line) {
      absl::MutexLock lock(&mu);
      lines.emplace_back(line);
    };
  }
};

TEST(AwaitExecutionTest, CompletedEventsReturnTheirStatus) {
  auto ok = std::make_shared<ManualEvent>();
  ok->Complete(absl::OkStatus());
  Warnings warnings;
  EXPECT_TRUE(AwaitExecution({ok}, absl::Seconds(10), absl::Seconds(120),
                             warnings.Sink())
                  .ok());
  EXPECT_TRUE(warnings.lines.empty());
}

TEST(AwaitExecutionTest, ReportsTheFirstFailingReplica) {
  std::vector<std::shared_ptr<driver::Event>> events;
  auto e0 = std::make_shared<ManualEvent>();
  auto e1 = std::make_shared<ManualEvent>();
  auto e2 = std::make_shared<ManualEvent>();
  e2->Complete(absl::InternalError("replica 2 broke"));
  e1->Complete(absl::InvalidArgumentError("replica 1 broke"));
  e0->Complete(absl::OkStatus());
  absl::Status status =
      AwaitExecution({e0, e1, e2}, absl::Seconds(10), absl::Seconds(120), {});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "replica 1 broke");
}

TEST(AwaitExecutionTest, WaitsForCompletionOnAnotherThread) {
  auto event = std::make_shared<ManualEvent>();
  std::thread completer([event] {
    absl::SleepFor(absl::Milliseconds(20));
    event->Complete(absl::OkStatus());
  });
  EXPECT_TRUE(
      AwaitExecution({event}, absl::Seconds(10), absl::Seconds(120), {}).ok());
  completer.join();
}

TEST(AwaitExecutionTest, WarnsThenGivesUpWithTheReferenceMessage) {
  auto never = std::make_shared<ManualEvent>();
  Warnings warnings;
  absl::Status status = AwaitExecution({never}, absl::Milliseconds(10),
                                       absl::Milliseconds(60), warnings.Sink());
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.message(),
            "TPU program took more than 0 seconds to complete.");
  absl::MutexLock lock(&warnings.mu);
  ASSERT_FALSE(warnings.lines.empty());
  EXPECT_EQ(warnings.lines[0],
            "TPU Execute is taking a long time. This might be due to a "
            "deadlock between multiple TPU cores or a very slow program.");
  // Completing after the wait gave up must be harmless.
  never->Complete(absl::OkStatus());
}

TEST(AwaitExecutionTest, DeadlineMessageCountsWholeSeconds) {
  EXPECT_EQ(ExecuteDeadlineExceeded(absl::Seconds(120)).message(),
            "TPU program took more than 120 seconds to complete.");
  EXPECT_EQ(ExecuteDeadlineExceeded(absl::Milliseconds(2500)).message(),
            "TPU program took more than 2 seconds to complete.");
}

TEST(AwaitExecutionTest, NoWarningWhenMaxTimeIsShorterThanTheInterval) {
  auto never = std::make_shared<ManualEvent>();
  Warnings warnings;
  absl::Status status = AwaitExecution({never}, absl::Seconds(10),
                                       absl::Milliseconds(5), warnings.Sink());
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  absl::MutexLock lock(&warnings.mu);
  EXPECT_TRUE(warnings.lines.empty());
}

TEST(AwaitExecutionTest, InterruptCheckEndsTheWaitWithItsStatus) {
  auto never = std::make_shared<ManualEvent>();
  int polls = 0;
  absl::Status status = AwaitExecution(
      {never}, absl::Seconds(10), absl::Seconds(120), {},
      [&polls]() {
        return ++polls < 3 ? absl::OkStatus()
                           : absl::CancelledError("interrupted by the user");
      },
      absl::Milliseconds(1));
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(status.message(), "interrupted by the user");
  EXPECT_EQ(polls, 3);
  never->Complete(absl::OkStatus());
}

TEST(AwaitExecutionTest, InterruptCheckIsNotNeededForCompletedEvents) {
  auto ok = std::make_shared<ManualEvent>();
  ok->Complete(absl::OkStatus());
  int polls = 0;
  EXPECT_TRUE(AwaitExecution({ok}, absl::Seconds(10), absl::Seconds(120), {},
                             [&polls]() {
                               ++polls;
                               return absl::CancelledError("never asked");
                             })
                  .ok());
  EXPECT_EQ(polls, 0);
}

}  // namespace
}  // namespace tpu::client
