#include "emulator/faults/fault_wait.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace tpu::emulator::faults {
namespace {

TEST(FaultWaitTest, ShortSleepsRunOut) {
  std::atomic<bool> cancelled{false};
  EXPECT_TRUE(SleepUnlessCancelled(absl::ZeroDuration(), &cancelled));
  EXPECT_TRUE(SleepUnlessCancelled(absl::Milliseconds(1), nullptr));
}

TEST(FaultWaitTest, CancellationEndsAnEndlessSleep) {
  std::atomic<bool> cancelled{false};
  absl::Notification started;
  bool completed = true;
  FaultThreads threads;
  threads.Run([&] {
    started.Notify();
    completed = SleepUnlessCancelled(absl::InfiniteDuration(), &cancelled);
  });
  started.WaitForNotification();
  cancelled = true;
  threads.JoinAll();
  EXPECT_FALSE(completed);
  // Already cancelled: returns at once, reporting it.
  EXPECT_FALSE(SleepUnlessCancelled(absl::Hours(1), &cancelled));
}

}  // namespace
}  // namespace tpu::emulator::faults
