// The short soak for CI: 4 clients x 300 operations against a real
// tpu_emulator, with disconnects. The full run is //tests/soak:soak.

#include "tests/soak/soak.h"

#include "gtest/gtest.h"
#include "tools/lib/subprocess.h"

namespace tpu::tests {
namespace {

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
  EXPECT_LE(report->rss_after_kb, report->rss_baseline_kb * 11 / 10)
      << report->ToString();
  EXPECT_TRUE(report->Passed()) << report->ToString();
}

}  // namespace
}  // namespace tpu::tests
