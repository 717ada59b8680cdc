#include "emulator/worker/scheduler.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

// Records what each operation's Start was called with.
class Recorder {
 public:
  Scheduler::Start Op(uint64_t id) {
    return [this, id](absl::Status s) {
      absl::MutexLock lock(&mu_);
      calls_[id].push_back(s);
      order_.push_back(id);
    };
  }
  // An op that completes itself inline with `result`.
  Scheduler::Start Inline(std::shared_ptr<Scheduler> sched, uint64_t id,
                          absl::Status result = absl::OkStatus()) {
    return [this, sched, id, result](absl::Status s) {
      {
        absl::MutexLock lock(&mu_);
        calls_[id].push_back(s);
        order_.push_back(id);
      }
      if (s.ok()) sched->Complete(id, result);
    };
  }
  std::vector<absl::Status> Calls(uint64_t id) {
    absl::MutexLock lock(&mu_);
    return calls_[id];
  }
  bool Started(uint64_t id) { return !Calls(id).empty(); }
  std::vector<uint64_t> Order() {
    absl::MutexLock lock(&mu_);
    return order_;
  }
  // Waits (bounded) until `id` was called.
  bool AwaitCall(uint64_t id, absl::Duration timeout = absl::Seconds(20)) {
    absl::MutexLock lock(&mu_);
    auto called = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !calls_[id].empty();
    };
    return mu_.AwaitWithTimeout(absl::Condition(&called), timeout);
  }

 private:
  absl::Mutex mu_;
  std::map<uint64_t, std::vector<absl::Status>> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> order_ ABSL_GUARDED_BY(mu_);
};

class SchedulerTest : public ::testing::Test {
 protected:
  std::shared_ptr<Scheduler> Make(absl::Duration wait = absl::Seconds(30)) {
    return Scheduler::Create(3, timers_, wait);
  }
  std::shared_ptr<TimerQueue> timers_ = std::make_shared<TimerQueue>();
  Recorder rec_;
};

TEST_F(SchedulerTest, RunsWhenDependenciesComplete) {
  auto s = Make();
  s->Submit(1, {}, rec_.Op(1));
  s->Submit(2, {1}, rec_.Op(2));
  ASSERT_EQ(rec_.Calls(1).size(), 1u);
  EXPECT_TRUE(rec_.Calls(1)[0].ok());
  EXPECT_FALSE(rec_.Started(2));
  s->Complete(1, absl::OkStatus());
  ASSERT_EQ(rec_.Calls(2).size(), 1u);
  EXPECT_TRUE(rec_.Calls(2)[0].ok());
  s->Complete(2, absl::OkStatus());
  EXPECT_EQ(s->live_nodes(), 0u);
  // A completed op can still be named later.
  s->Submit(3, {1, 2}, rec_.Op(3));
  EXPECT_TRUE(rec_.Started(3));
}

TEST_F(SchedulerTest, DependencyArrivingAfterDependent) {
  auto s = Make();
  s->Submit(5, {4}, rec_.Op(5));
  EXPECT_FALSE(rec_.Started(5));
  EXPECT_EQ(s->live_nodes(), 2u);  // op 5 and the awaited op 4
  s->Submit(4, {}, rec_.Op(4));
  EXPECT_TRUE(rec_.Started(4));
  EXPECT_FALSE(rec_.Started(5));
  s->Complete(4, absl::OkStatus());
  ASSERT_TRUE(rec_.Started(5));
  EXPECT_TRUE(rec_.Calls(5)[0].ok());
}

TEST_F(SchedulerTest, FailedDependencyFailsDependentsNamingIt) {
  auto s = Make();
  s->Submit(5, {}, rec_.Op(5));
  s->Submit(6, {5}, rec_.Op(6));
  s->Submit(7, {6}, rec_.Op(7));
  s->Complete(5, absl::InvalidArgumentError("bad shape"));
  ASSERT_EQ(rec_.Calls(6).size(), 1u);
  const absl::Status s6 = rec_.Calls(6)[0];
  EXPECT_EQ(s6.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s6.message(),
            "operation 5 (client 3) failed: INVALID_ARGUMENT: bad shape");
  const absl::Status s7 = rec_.Calls(7)[0];
  EXPECT_EQ(s7.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s7.message(),
            "operation 6 (client 3) failed: operation 5 (client 3) failed: "
            "INVALID_ARGUMENT: bad shape");
  // Submitted after the failure: fails at once, message stays two levels.
  s->Submit(8, {7}, rec_.Op(8));
  EXPECT_EQ(rec_.Calls(8)[0].message(),
            "operation 7 (client 3) failed: operation 5 (client 3) failed: "
            "INVALID_ARGUMENT: bad shape");
  EXPECT_EQ(s->live_nodes(), 0u);
}

TEST_F(SchedulerTest, RejectedOperationFailsItsDependents) {
  auto s = Make();
  s->Submit(10, {9}, rec_.Op(10));
  s->Reject(9, absl::InvalidArgumentError("empty request"), rec_.Op(9));
  EXPECT_EQ(rec_.Calls(9)[0].message(), "empty request");
  EXPECT_EQ(rec_.Calls(10)[0].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rec_.Calls(10)[0].message(),
            "operation 9 (client 3) failed: INVALID_ARGUMENT: empty request");
}

TEST_F(SchedulerTest, UnarrivedDependencyTimesOutNotFound) {
  auto s = Make(absl::Milliseconds(50));
  s->Submit(20, {17}, rec_.Op(20));
  ASSERT_TRUE(rec_.AwaitCall(20));
  const absl::Status st = rec_.Calls(20)[0];
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(st.message().find("operation 17 (client 3) was never submitted"),
            std::string::npos)
      << st;
  // The late op is refused rather than silently run after the fact.
  s->Submit(17, {}, rec_.Op(17));
  EXPECT_EQ(rec_.Calls(17)[0].code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SchedulerTest, DuplicateZeroAndForwardIdsAreInvalid) {
  auto s = Make();
  s->Submit(1, {}, rec_.Op(1));
  s->Submit(1, {}, rec_.Op(100));
  EXPECT_EQ(rec_.Calls(100)[0].code(), absl::StatusCode::kInvalidArgument);
  s->Submit(0, {}, rec_.Op(0));
  EXPECT_EQ(rec_.Calls(0)[0].code(), absl::StatusCode::kInvalidArgument);
  s->Submit(5, {5}, rec_.Op(5));
  EXPECT_EQ(rec_.Calls(5)[0].code(), absl::StatusCode::kInvalidArgument);
  s->Submit(6, {9}, rec_.Op(6));
  EXPECT_EQ(rec_.Calls(6)[0].code(), absl::StatusCode::kInvalidArgument);
  // The original op 1 is unaffected by its duplicate.
  s->Submit(2, {1}, rec_.Op(2));
  EXPECT_FALSE(rec_.Started(2));
  s->Complete(1, absl::OkStatus());
  EXPECT_TRUE(rec_.Calls(2)[0].ok());
}

TEST_F(SchedulerTest, CancelFailsWaitingAndLaterOperations) {
  auto s = Make();
  s->Submit(1, {}, rec_.Op(1));
  s->Submit(2, {1}, rec_.Op(2));
  s->Submit(4, {3}, rec_.Op(4));
  s->Cancel(absl::CancelledError("client 3 was closed"));
  EXPECT_EQ(rec_.Calls(2)[0].code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(rec_.Calls(4)[0].code(), absl::StatusCode::kCancelled);
  s->Complete(1, absl::OkStatus());  // a running op finishing late: ignored
  s->Submit(5, {}, rec_.Op(5));
  EXPECT_EQ(rec_.Calls(5)[0].code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(rec_.Calls(2).size(), 1u);
  EXPECT_EQ(s->live_nodes(), 0u);
}

TEST_F(SchedulerTest, LongInlineChainUsesConstantStack) {
  // 200k ops, each completing inside its own Start: recursion would overflow
  // the stack; the trampoline keeps it flat.
  auto s = Make();
  constexpr uint64_t kN = 200000;
  for (uint64_t i = kN; i >= 2; --i) {
    s->Submit(i, {i - 1}, rec_.Inline(s, i));
  }
  s->Submit(1, {}, rec_.Inline(s, 1));
  EXPECT_TRUE(rec_.Started(kN));
  EXPECT_EQ(s->live_nodes(), 0u);
  const std::vector<uint64_t> order = rec_.Order();
  ASSERT_EQ(order.size(), kN);
  for (uint64_t i = 0; i < kN; ++i) ASSERT_EQ(order[i], i + 1);
}

TEST_F(SchedulerTest, LongFailureCascadeIsIterative) {
  auto s = Make();
  constexpr uint64_t kN = 100000;
  s->Submit(1, {}, rec_.Op(1));
  for (uint64_t i = 2; i <= kN; ++i) s->Submit(i, {i - 1}, rec_.Op(i));
  s->Complete(1, absl::InternalError("boom"));
  const absl::Status last = rec_.Calls(kN)[0];
  EXPECT_EQ(last.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(last.message(),
            "operation 99999 (client 3) failed: operation 1 (client 3) "
            "failed: INTERNAL: boom");
}

TEST_F(SchedulerTest, ManyDependentsAllReleased) {
  auto s = Make();
  s->Submit(1, {}, rec_.Op(1));
  for (uint64_t i = 2; i < 1002; ++i) s->Submit(i, {1}, rec_.Op(i));
  s->Submit(2000, {1, 2, 3}, rec_.Op(2000));
  s->Complete(1, absl::OkStatus());
  for (uint64_t i = 2; i < 1002; ++i) ASSERT_TRUE(rec_.Started(i)) << i;
  EXPECT_FALSE(rec_.Started(2000));
  s->Complete(2, absl::OkStatus());
  EXPECT_FALSE(rec_.Started(2000));
  s->Complete(3, absl::OkStatus());
  EXPECT_TRUE(rec_.Started(2000));
}

}  // namespace
}  // namespace tpu::emulator
