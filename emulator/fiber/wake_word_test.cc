#include "emulator/fiber/wake_word.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace tpu::emulator::fiber {
namespace {

// On plain threads the word sleeps on a futex, as before fibers.

TEST(WakeWordTest, AWaitOnAChangedWordReturnsAtOnce) {
  WakeWord word;
  const uint32_t seen = word.Load();
  word.WakeAll();
  word.Wait(seen, absl::InfiniteDuration());
  EXPECT_NE(word.Load(), seen);
}

TEST(WakeWordTest, WakeAllWakesEverySleepingThread) {
  WakeWord word;
  std::atomic<bool> go{false};
  std::atomic<int> woken{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      while (true) {
        const uint32_t seen = word.Load();
        if (go.load()) break;
        word.Wait(seen, absl::InfiniteDuration());
      }
      woken.fetch_add(1);
    });
  }
  go = true;
  word.WakeAll();
  for (auto& t : threads) t.join();
  EXPECT_EQ(woken.load(), 4);
}

TEST(WakeWordTest, RunBlockingOnAThreadRunsInPlace) {
  std::thread::id ran_on;
  RunBlocking([&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

}  // namespace
}  // namespace tpu::emulator::fiber
