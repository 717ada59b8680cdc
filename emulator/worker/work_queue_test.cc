#include "emulator/worker/work_queue.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "emulator/fiber/fiber.h"
#include "emulator/fiber/wake_word.h"
#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

TEST(WorkQueueTest, AnIdleSerialQueueRunsAClosureOnTheCallingThread) {
  WorkQueue queue("test", 1);
  std::thread::id ran_on;
  EXPECT_TRUE(queue.TryRunInline([&] { ran_on = std::this_thread::get_id(); }));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(WorkQueueTest, ABusySerialQueueRefusesToRunInline) {
  WorkQueue queue("test", 1);
  absl::Notification started, release;
  queue.Schedule([&] {
    started.Notify();
    release.WaitForNotification();
  });
  started.WaitForNotification();
  bool ran = false;
  EXPECT_FALSE(queue.TryRunInline([&] { ran = true; }));
  EXPECT_FALSE(ran);
  release.Notify();
}

TEST(WorkQueueTest, APoolOfSeveralThreadsNeverRunsInline) {
  WorkQueue queue("test", 2);
  bool ran = false;
  EXPECT_FALSE(queue.TryRunInline([&] { ran = true; }));
  EXPECT_FALSE(ran);
}

TEST(WorkQueueTest, ClosuresScheduledDuringAnInlineRunWaitForIt) {
  WorkQueue queue("test", 1);
  std::atomic<bool> inline_running{false};
  std::atomic<bool> overlapped{false};
  absl::Notification scheduled_ran;
  EXPECT_TRUE(queue.TryRunInline([&] {
    inline_running = true;
    queue.Schedule([&] {
      if (inline_running) overlapped = true;
      scheduled_ran.Notify();
    });
    // Give the queue's thread every chance to start the closure early.
    for (int i = 0; i < 1000; ++i) std::this_thread::yield();
    inline_running = false;
  }));
  scheduled_ran.WaitForNotification();
  // Not pending() == 0 here: the closure notifies before it returns, so the
  // queue may still count it (TSan's slower run showed that race).
  EXPECT_FALSE(overlapped);
}

// Fiber mode: the worker's cores.

TEST(WorkQueueTest, AFiberQueueRunsClosuresInOrder) {
  fiber::Scheduler fibers("test", 2);
  std::vector<int> order;
  absl::Notification done;
  {
    WorkQueue queue("test", &fibers);
    for (int i = 0; i < 50; ++i) queue.Schedule([&, i] { order.push_back(i); });
    queue.Schedule([&] { done.Notify(); });
    done.WaitForNotification();
  }
  std::vector<int> expected;
  for (int i = 0; i < 50; ++i) expected.push_back(i);
  EXPECT_EQ(order, expected);
}

TEST(WorkQueueTest, AFiberQueueRunsWhatIsScheduledBeforeDestruction) {
  fiber::Scheduler fibers("test", 1);
  std::atomic<int> ran{0};
  {
    WorkQueue queue("test", &fibers);
    for (int i = 0; i < 20; ++i) queue.Schedule([&] { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 20);
}

TEST(WorkQueueTest, AnIdleFiberQueueRunsInlineOnTheCallingThread) {
  fiber::Scheduler fibers("test", 1);
  WorkQueue queue("test", &fibers);
  std::thread::id ran_on;
  EXPECT_TRUE(queue.TryRunInline([&] { ran_on = std::this_thread::get_id(); }));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  // The queue goes on after the inline run.
  absl::Notification done;
  queue.Schedule([&] { done.Notify(); });
  done.WaitForNotification();
}

TEST(WorkQueueTest, EightFiberQueuesOnOneThreadWaitForEachOther) {
  // Every queue's closure waits until all eight started: with one OS thread
  // that works only because a waiting closure parks its fiber.
  constexpr int kQueues = 8;
  fiber::Scheduler fibers("test", 1);
  std::atomic<int> arrived{0};
  fiber::WakeWord word;
  std::atomic<int> finished{0};
  {
    std::vector<std::unique_ptr<WorkQueue>> queues;
    for (int q = 0; q < kQueues; ++q) {
      queues.push_back(std::make_unique<WorkQueue>("test", &fibers));
    }
    for (auto& queue : queues) {
      queue->Schedule([&] {
        if (arrived.fetch_add(1) + 1 == kQueues) word.WakeAll();
        while (true) {
          const uint32_t seen = word.Load();
          if (arrived.load() == kQueues) break;
          word.Wait(seen, absl::InfiniteDuration());
        }
        finished.fetch_add(1);
      });
    }
  }
  EXPECT_EQ(finished.load(), kQueues);
}

}  // namespace
}  // namespace tpu::emulator
