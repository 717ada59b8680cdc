// The short soak for CI: 4 clients x 300 operations against a real
// tpu_emulator, with disconnects. The full run is //tests/soak:soak.

#include "tests/soak/soak.h"

#include "gtest/gtest.h"
#include "tools/lib/subprocess.h"

namespace tpu::tests {
namespace {

// Under AddressSanitizer (--config=asan) freed memory waits in ASan's
// quarantine instead of going back to the system, so the worker's RSS
// cannot return to its baseline there; every other check still applies.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRssReturns = false;
#else
constexpr bool kRssReturns = true;
#endif
#elif defined(__SANITIZE_ADDRESS__)
constexpr bool kRssReturns = false;
#else
constexpr bool kRssReturns = true;
#endif

TEST(SoakTest, ShortRunLeavesTheWorkerClean) {
  SoakOptions options;
  options.emulator_path = tools::RunfilePath("tools/tpu_emulator/tpu_emulator");
  options.scratch_dir = tools::ScratchDir();
  options.clients = 4;
  options.ops_per_client = 300;
  options.seed = 13;
  auto report = RunSoak(options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_GT(report->disconnects, 0) << "the seed must exercise disconnects";
  EXPECT_GT(report->bytes_checked, 0);
  EXPECT_EQ(report->answered, report->operations) << report->ToString();
  EXPECT_EQ(report->unexpected_errors, 0) << report->ToString();
  EXPECT_EQ(report->mismatched_reads, 0) << report->ToString();
  EXPECT_EQ(report->hbm_in_use_after, 0) << report->ToString();
  EXPECT_TRUE(report->worker_alive_after) << report->ToString();
  if (kRssReturns) {
    EXPECT_LE(report->rss_after_kb, report->rss_baseline_kb * 11 / 10)
        << report->ToString();
    EXPECT_TRUE(report->Passed()) << report->ToString();
  }
}

}  // namespace
}  // namespace tpu::tests
