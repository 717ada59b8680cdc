#include "client/thread_pool.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace tpu::client {
namespace {

TEST(ThreadPoolTest, RunsEveryClosure) {
  std::atomic<int> sum{0};
  {
    ThreadPool pool(3);
    for (int i = 1; i <= 100; ++i) {
      pool.Schedule([&sum, i] { sum += i; });
    }
  }  // the destructor drains the queue
  EXPECT_EQ(sum.load(), 5050);
}

TEST(ThreadPoolTest, RunsClosuresInParallel) {
  // Two closures that each wait for the other can only both finish if they
  // run on different threads at once.
  ThreadPool pool(2);
  absl::Notification a, b;
  absl::BlockingCounter done(2);
  pool.Schedule([&] {
    a.Notify();
    b.WaitForNotification();
    done.DecrementCount();
  });
  pool.Schedule([&] {
    b.Notify();
    a.WaitForNotification();
    done.DecrementCount();
  });
  done.Wait();
}

}  // namespace
}  // namespace tpu::client
