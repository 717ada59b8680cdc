#include "emulator/fiber/fiber.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "emulator/fiber/wake_word.h"
#include "gtest/gtest.h"

namespace tpu::emulator::fiber {
namespace {

TEST(FiberTest, RunsABodyToTheEnd) {
  Scheduler scheduler("test", 1);
  int ran = 0;
  auto fiber = scheduler.Start([&] { ran = 7; });
  fiber->Join();
  EXPECT_EQ(ran, 7);
}

TEST(FiberTest, CurrentIsTheRunningFiberAndNullOnAThread) {
  Scheduler scheduler("test", 1);
  EXPECT_EQ(Fiber::Current(), nullptr);
  Fiber* seen = nullptr;
  auto fiber = scheduler.Start([&] { seen = Fiber::Current(); });
  fiber->Join();
  EXPECT_EQ(seen, fiber.get());
}

TEST(FiberTest, OneThreadRunsReadyFibersInOrderOfStart) {
  Scheduler scheduler("test", 1);
  absl::Mutex mu;
  std::vector<int> order;
  // The first fiber holds the only thread until the others are started, so
  // they are all queued before any of them runs.
  std::atomic<bool> release{false};
  auto gate = scheduler.Start([&] {
    while (!release.load()) std::this_thread::yield();
  });
  std::vector<std::unique_ptr<Fiber>> fibers;
  for (int i = 0; i < 5; ++i) {
    fibers.push_back(scheduler.Start([&, i] {
      absl::MutexLock lock(&mu);
      order.push_back(i);
    }));
  }
  release = true;
  gate->Join();
  for (auto& f : fibers) f->Join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(FiberTest, MaybeYieldLetsAReadyFiberRunAfterATimeSlice) {
  // One thread: the spinning fiber would hold it for ever if MaybeYield
  // never gave it up; the other fiber is what ends the spin.
  Scheduler scheduler("test", 1);
  std::atomic<bool> stop{false};
  int64_t checks = 0;
  auto spinner = scheduler.Start([&] {
    while (!stop.load()) {
      Fiber::MaybeYield();
      ++checks;
    }
  });
  auto stopper = scheduler.Start([&] { stop = true; });
  stopper->Join();
  spinner->Join();
  EXPECT_TRUE(stop.load());
  EXPECT_GT(checks, 0);
}

TEST(FiberTest, MaybeYieldIsANoOpOnAPlainThread) {
  Fiber::MaybeYield();
  EXPECT_EQ(Fiber::Current(), nullptr);
}

TEST(FiberTest, YieldInterleavesFibersOnOneThread) {
  Scheduler scheduler("test", 1);
  std::vector<char> trace;  // one thread: no lock needed
  auto body = [&](char name) {
    for (int i = 0; i < 3; ++i) {
      trace.push_back(name);
      Fiber::Yield();
    }
  };
  std::atomic<bool> release{false};
  auto gate = scheduler.Start([&] {
    while (!release.load()) std::this_thread::yield();
  });
  auto a = scheduler.Start([&] { body('a'); });
  auto b = scheduler.Start([&] { body('b'); });
  release = true;
  gate->Join();
  a->Join();
  b->Join();
  EXPECT_EQ(std::string(trace.begin(), trace.end()), "ababab");
}

TEST(FiberTest, AParkedFiberFreesItsThreadForOthers) {
  // One thread, two fibers: the first waits for the second, which can only
  // run while the first is parked.
  Scheduler scheduler("test", 1);
  WakeWord word;
  std::atomic<bool> flag{false};
  auto waiter = scheduler.Start([&] {
    while (true) {
      const uint32_t seen = word.Load();
      if (flag.load()) break;
      word.Wait(seen, absl::InfiniteDuration());
    }
  });
  auto setter = scheduler.Start([&] {
    flag = true;
    word.WakeAll();
  });
  waiter->Join();
  setter->Join();
  EXPECT_TRUE(flag.load());
}

TEST(FiberTest, ManyFibersOnOneThreadMeetRepeatedly) {
  constexpr int kFibers = 16;
  constexpr int kMeetings = 200;
  Scheduler scheduler("test", 1);
  std::atomic<int> arrived{0};
  std::atomic<int> generation{0};
  std::atomic<int> total{0};
  WakeWord word;
  std::vector<std::unique_ptr<Fiber>> fibers;
  for (int f = 0; f < kFibers; ++f) {
    fibers.push_back(scheduler.Start([&] {
      for (int m = 0; m < kMeetings; ++m) {
        total.fetch_add(1);
        if (arrived.fetch_add(1) + 1 == kFibers) {
          arrived.store(0);
          generation.store(m + 1);
          word.WakeAll();
          continue;
        }
        while (true) {
          const uint32_t seen = word.Load();
          if (generation.load() > m) break;
          word.Wait(seen, absl::InfiniteDuration());
        }
      }
    }));
  }
  for (auto& f : fibers) f->Join();
  EXPECT_EQ(total.load(), kFibers * kMeetings);
  EXPECT_EQ(generation.load(), kMeetings);
}

TEST(FiberTest, FibersOnTwoThreadsMeetWithThreadsToo) {
  // Fibers and plain threads wait on the same word: both kinds are woken.
  constexpr int kFibers = 8;
  constexpr int kThreads = 2;
  constexpr int kMeetings = 300;
  constexpr int kAll = kFibers + kThreads;
  Scheduler scheduler("test", 2);
  std::atomic<int> arrived{0};
  std::atomic<int> generation{0};
  WakeWord word;
  auto meet = [&] {
    for (int m = 0; m < kMeetings; ++m) {
      if (arrived.fetch_add(1) + 1 == kAll) {
        arrived.store(0);
        generation.store(m + 1);
        word.WakeAll();
        continue;
      }
      while (true) {
        const uint32_t seen = word.Load();
        if (generation.load() > m) break;
        word.Wait(seen, absl::InfiniteDuration());
      }
    }
  };
  std::vector<std::unique_ptr<Fiber>> fibers;
  for (int f = 0; f < kFibers; ++f) fibers.push_back(scheduler.Start(meet));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(meet);
  for (auto& f : fibers) f->Join();
  for (auto& t : threads) t.join();
  EXPECT_EQ(generation.load(), kMeetings);
}

TEST(FiberTest, AWakeBeforeTheParkIsNotLost) {
  // The waker runs on another thread and races the waiter's park on every
  // round; a lost wake would hang the test.
  constexpr int kRounds = 20000;
  Scheduler scheduler("test", 1);
  WakeWord word;
  std::atomic<int> posted{0};
  auto waiter = scheduler.Start([&] {
    for (int r = 1; r <= kRounds; ++r) {
      while (true) {
        const uint32_t seen = word.Load();
        if (posted.load() >= r) break;
        word.Wait(seen, absl::InfiniteDuration());
      }
    }
  });
  std::thread waker([&] {
    for (int r = 1; r <= kRounds; ++r) {
      posted.store(r);
      word.WakeAll();
    }
  });
  waker.join();
  waiter->Join();
  EXPECT_EQ(posted.load(), kRounds);
}

TEST(FiberTest, ATimedWaitEndsWithoutAWake) {
  Scheduler scheduler("test", 1);
  WakeWord word;
  bool changed = true;
  auto fiber = scheduler.Start([&] {
    const uint32_t seen = word.Load();
    word.Wait(seen, absl::Milliseconds(5));
    changed = word.Load() != seen;
  });
  fiber->Join();
  EXPECT_FALSE(changed);
}

TEST(FiberTest, SleepingFibersDoNotHoldTheThread) {
  // Four fibers on one thread sleep until a fifth sets a flag: had a sleep
  // held the thread, the fifth would never run.
  Scheduler scheduler("test", 1);
  std::atomic<bool> done{false};
  std::atomic<int> sleeps{0};
  std::vector<std::unique_ptr<Fiber>> fibers;
  for (int i = 0; i < 4; ++i) {
    fibers.push_back(scheduler.Start([&] {
      while (!done.load()) {
        fiber::SleepFor(absl::Milliseconds(1));
        sleeps.fetch_add(1);
      }
    }));
  }
  fibers.push_back(scheduler.Start([&] { done = true; }));
  for (auto& f : fibers) f->Join();
  EXPECT_TRUE(done.load());
  EXPECT_GE(sleeps.load(), 4);
}

TEST(FiberTest, CondVarWaitersParkAndWake) {
  Scheduler scheduler("test", 1);
  absl::Mutex mu;
  CondVar changed;
  int value = 0;
  auto waiter = scheduler.Start([&] {
    absl::MutexLock lock(&mu);
    while (value == 0) changed.Wait(&mu);
    value *= 10;
  });
  auto setter = scheduler.Start([&] {
    absl::MutexLock lock(&mu);
    value = 4;
    changed.SignalAll();
  });
  waiter->Join();
  setter->Join();
  EXPECT_EQ(value, 40);
}

TEST(FiberTest, RunBlockingFreesTheThreadWhileItBlocks) {
  // The blocking call waits for a fiber on the same (only) thread.
  Scheduler scheduler("test", 1);
  std::atomic<bool> other_ran{false};
  bool saw_other = false;
  auto blocker = scheduler.Start([&] {
    RunBlocking([&] {
      while (!other_ran.load()) std::this_thread::yield();
    });
    saw_other = other_ran.load();
  });
  auto other = scheduler.Start([&] { other_ran = true; });
  blocker->Join();
  other->Join();
  EXPECT_TRUE(saw_other);
}

TEST(FiberTest, StacksAreReusedAfterJoin) {
  Scheduler scheduler("test", 1);
  for (int i = 0; i < 10; ++i) {
    auto fiber = scheduler.Start([] {});
    fiber->Join();
  }
  EXPECT_EQ(scheduler.stacks_allocated(), 1);
}

// Recursion with a kilobyte frame per level (the frame is read after the
// call, so the compiler can neither drop it nor turn this into a loop).
__attribute__((noinline)) int Recurse(int depth) {
  volatile char pad[1024];
  pad[depth % 1024] = 1;
  if (depth == 0) return 0;
  const int below = Recurse(depth - 1);
  return below + pad[depth % 1024];
}

TEST(FiberTest, AFiberHasAThreadSizedStack) {
  Scheduler scheduler("test", 1);
  int result = -1;
  // About 6 MiB of frames.
  auto fiber = scheduler.Start([&] { result = Recurse(6000); });
  fiber->Join();
  EXPECT_EQ(result, 6000);
}

TEST(FiberDeathTest, OverflowingAStackHitsTheGuardPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Scheduler scheduler("test", 1);
        auto fiber = scheduler.Start([] { Recurse(20000); });
        fiber->Join();
      },
      "");
}

}  // namespace
}  // namespace tpu::emulator::fiber
