#include "driver/pod/pod_scheduler.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "driver/testing/manual_event.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

using ::testing::HasSubstr;
using testing::ManualEvent;

// A RunFn whose completion the test triggers.
struct Manual {
  absl::Mutex mu;
  int runs = 0;
  PodScheduler::Done done;

  PodScheduler::RunFn Run() {
    return [this](int64_t, PodScheduler::Done d) {
      absl::MutexLock lock(&mu);
      ++runs;
      done = std::move(d);
    };
  }
  void Finish(absl::Status status) {
    PodScheduler::Done d;
    {
      absl::MutexLock lock(&mu);
      d = std::move(done);
    }
    ASSERT_TRUE(d != nullptr);
    d(std::move(status));
  }
  int run_count() {
    absl::MutexLock lock(&mu);
    return runs;
  }
};

PodScheduler::RunFn Succeed() {
  return [](int64_t, PodScheduler::Done done) { done(absl::OkStatus()); };
}

TEST(PodSchedulerTest, OperationWithoutDependenciesRunsAtOnce) {
  PodScheduler scheduler;
  Manual manual;
  auto op = scheduler.Schedule("Allocate", {}, manual.Run());
  EXPECT_EQ(manual.run_count(), 1);
  EXPECT_FALSE(op->done());
  manual.Finish(absl::OkStatus());
  EXPECT_TRUE(op->Await().ok());
  EXPECT_EQ(scheduler.live_ops(), 0);
}

TEST(PodSchedulerTest, DependentRunsOnlyAfterDependencyCompletes) {
  PodScheduler scheduler;
  Manual first, second;
  auto a = scheduler.Schedule("Allocate", {}, first.Run());
  auto b = scheduler.Schedule("TransferToDevice", {a}, second.Run());
  EXPECT_EQ(second.run_count(), 0);
  first.Finish(absl::OkStatus());
  ASSERT_TRUE(a->Await().ok());
  // b starts on the dispatcher thread right after a completes.
  while (second.run_count() == 0) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_FALSE(b->done());
  second.Finish(absl::OkStatus());
  EXPECT_TRUE(b->Await().ok());
}

TEST(PodSchedulerTest, ReadyOperationsRunInTheOrderTheyWereScheduled) {
  // `first` and `second` wait for the same allocation; `second` is
  // scheduled after it completed but while its dependents are still being
  // started on the dispatcher (held there by a slow callback). `second`
  // must not overtake `first`: the worker sees them in scheduling order.
  PodScheduler scheduler;
  Manual allocation;
  auto allocate = scheduler.Schedule("Allocate", {}, allocation.Run());
  absl::Notification in_callback, release;
  allocate->AddCallback([&](absl::Status) {
    in_callback.Notify();
    release.WaitForNotification();
  });
  absl::Mutex mu;
  std::vector<std::string> order;
  auto record = [&](std::string name) -> PodScheduler::RunFn {
    return [&, name](int64_t, PodScheduler::Done done) {
      {
        absl::MutexLock lock(&mu);
        order.push_back(name);
      }
      done(absl::OkStatus());
    };
  };
  auto first =
      scheduler.Schedule("TransferToDevice", {allocate}, record("first"));
  allocation.Finish(absl::OkStatus());
  in_callback.WaitForNotification();
  ASSERT_TRUE(allocate->done());
  auto second =
      scheduler.Schedule("TransferFromDevice", {allocate}, record("second"));
  release.Notify();
  ASSERT_TRUE(second->Await().ok());
  ASSERT_TRUE(first->Await().ok());
  absl::MutexLock lock(&mu);
  EXPECT_THAT(order, ::testing::ElementsAre("first", "second"));
}

TEST(PodSchedulerTest, FailedDependencyFailsDependentsWithoutRunningThem) {
  PodScheduler scheduler;
  Manual first, second, third;
  auto a = scheduler.Schedule("Allocate", {}, first.Run());
  auto b = scheduler.Schedule("TransferToDevice", {a}, second.Run());
  auto c = scheduler.Schedule("ExecuteProgram", {b}, third.Run());
  first.Finish(absl::ResourceExhaustedError("out of HBM"));

  absl::Status sb = b->Await();
  EXPECT_EQ(sb.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(sb.message(),
              HasSubstr(absl::StrCat("depends on operation ", a->id(),
                                     " (Allocate), which failed: out of HBM")));
  absl::Status sc = c->Await();
  EXPECT_EQ(sc.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(sc.message(),
              HasSubstr(absl::StrCat("Operation ", c->id(),
                                     " (ExecuteProgram) did not run")));
  EXPECT_THAT(sc.message(), HasSubstr(absl::StrCat(
                                "depends on operation ", b->id(),
                                " (TransferToDevice), which did not run "
                                "because operation ",
                                a->id(), " (Allocate) failed: out of HBM")));
  EXPECT_EQ(second.run_count(), 0);
  EXPECT_EQ(third.run_count(), 0);
}

TEST(PodSchedulerTest, WaitsForEveryDependencyAndReportsTheFirstFailure) {
  PodScheduler scheduler;
  Manual x, y, z, dependent;
  int skips = 0;
  auto a = scheduler.Schedule("Allocate", {}, x.Run());
  auto b = scheduler.Schedule("Allocate", {}, y.Run());
  auto c = scheduler.Schedule("Allocate", {}, z.Run());
  auto d = scheduler.Schedule("Deallocate", {a, b, c}, dependent.Run(),
                              [&skips] { ++skips; });
  y.Finish(absl::InternalError("first"));
  x.Finish(absl::UnavailableError("second"));
  ASSERT_FALSE(b->Await().ok());
  ASSERT_FALSE(a->Await().ok());
  // Not decided while c is still in flight.
  EXPECT_FALSE(d->AwaitWithTimeout(absl::Milliseconds(20)).has_value());
  EXPECT_EQ(skips, 0);
  z.Finish(absl::OkStatus());
  absl::Status status = d->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("which failed: first"));
  EXPECT_EQ(skips, 1);
  EXPECT_EQ(dependent.run_count(), 0);
}

TEST(PodSchedulerTest, LongChainsNeitherRecurseNorSlowDown) {
  // Each operation completes inline from its run function; without the
  // dispatcher this would nest 50,000 deep.
  PodScheduler scheduler;
  constexpr int kOps = 50000;
  std::shared_ptr<PodOp> last;
  for (int i = 0; i < kOps; ++i) {
    std::vector<std::shared_ptr<PodOp>> deps;
    if (last != nullptr) deps.push_back(last);
    last = scheduler.Schedule("TransferToDevice", deps, Succeed());
  }
  EXPECT_TRUE(last->Await().ok());
  EXPECT_EQ(last->id(), kOps);
}

TEST(PodSchedulerTest, LongFailingChainsKeepShortMessages) {
  PodScheduler scheduler;
  Manual root;
  auto first = scheduler.Schedule("Allocate", {}, root.Run());
  std::shared_ptr<PodOp> last = first;
  for (int i = 0; i < 50000; ++i) {
    last = scheduler.Schedule("TransferToDevice", {last}, Succeed());
  }
  root.Finish(absl::NotFoundError("gone"));
  absl::Status status = last->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_LT(status.message().size(), 300u);
  EXPECT_THAT(status.message(),
              HasSubstr(absl::StrCat("because operation ", first->id(),
                                     " (Allocate) failed: gone")));
}

TEST(PodSchedulerTest, ForeignEventsAreDependencies) {
  PodScheduler scheduler;
  ManualEvent external;
  Manual after;
  auto wrapped = scheduler.Wrap(&external);
  auto op = scheduler.Schedule("TransferFromDevice", {wrapped}, after.Run());
  EXPECT_EQ(after.run_count(), 0);
  external.Complete(absl::DataLossError("bad"));
  absl::Status status = op->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("(external event), which failed"));
}

TEST(PodSchedulerTest, ShutdownCancelsPendingAndFailsStragglers) {
  Manual in_flight, pending_run;
  int skips = 0;
  std::shared_ptr<PodOp> a, b;
  PodScheduler::Done late;
  {
    PodScheduler scheduler;
    a = scheduler.Schedule("ExecuteProgram", {}, in_flight.Run());
    b = scheduler.Schedule("Deallocate", {a}, pending_run.Run(),
                           [&skips] { ++skips; });
    scheduler.Shutdown(absl::Milliseconds(10));
    absl::Status sa = a->Await();
    EXPECT_EQ(sa.code(), absl::StatusCode::kCancelled);
    EXPECT_THAT(sa.message(), HasSubstr("still in flight"));
    absl::Status sb = b->Await();
    EXPECT_EQ(sb.code(), absl::StatusCode::kCancelled);
    EXPECT_EQ(pending_run.run_count(), 0);
    EXPECT_EQ(skips, 1);
    // After shutdown, new operations are cancelled rather than run.
    Manual never;
    auto c = scheduler.Schedule("Allocate", {}, never.Run());
    EXPECT_EQ(c->Await().code(), absl::StatusCode::kCancelled);
    EXPECT_EQ(never.run_count(), 0);
    absl::MutexLock lock(&in_flight.mu);
    late = std::move(in_flight.done);
  }
  // The worker reports after the scheduler is gone: ignored, no crash.
  late(absl::OkStatus());
  EXPECT_EQ(a->status().code(), absl::StatusCode::kCancelled);
}

TEST(PodSchedulerTest, CallbacksRunOnceAndLateOnesRunInline) {
  PodScheduler scheduler;
  Manual manual;
  auto op = scheduler.Schedule("Allocate", {}, manual.Run());
  std::atomic<int> calls{0};
  op->AddCallback([&calls](absl::Status s) {
    EXPECT_TRUE(s.ok());
    ++calls;
  });
  manual.Finish(absl::OkStatus());
  ASSERT_TRUE(op->Await().ok());
  while (calls.load() == 0) absl::SleepFor(absl::Milliseconds(1));
  bool inline_ran = false;
  op->AddCallback([&inline_ran](absl::Status) { inline_ran = true; });
  EXPECT_TRUE(inline_ran);
  EXPECT_EQ(calls.load(), 1);
}

TEST(PodSchedulerTest, FailedOperationsAreBornComplete) {
  PodScheduler scheduler;
  auto op = scheduler.Failed("Allocate", absl::InvalidArgumentError("bad"));
  ASSERT_TRUE(op->done());
  EXPECT_EQ(op->status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(scheduler.live_ops(), 0);
}

}  // namespace
}  // namespace tpu::driver
