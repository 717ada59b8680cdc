#include "emulator/worker/host_memory_budget.h"

#include <unistd.h>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

TEST(ParseByteSizeTest, AcceptsUnits) {
  EXPECT_EQ(*ParseByteSize("65536"), 65536);
  EXPECT_EQ(*ParseByteSize("8GiB"), int64_t{8} << 30);
  EXPECT_EQ(*ParseByteSize("8g"), int64_t{8} << 30);
  EXPECT_EQ(*ParseByteSize("512 MiB"), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(*ParseByteSize("4GB"), int64_t{4000000000});
  EXPECT_EQ(*ParseByteSize("2TiB"), int64_t{2} << 40);
  EXPECT_EQ(*ParseByteSize("16KiB"), 16384);
}

TEST(ParseByteSizeTest, RefusesWhatIsNotASize) {
  for (const char* bad :
       {"", "GiB", "-1GiB", "0", "8 parsecs", "1e99TiB", "0.1"}) {
    absl::StatusOr<int64_t> parsed = ParseByteSize(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(ParseByteSize("8 parsecs").status().message(),
            "'8 parsecs' is not a byte size (unknown unit 'parsecs'); write a "
            "positive number with an optional unit, e.g. 8GiB, 512MiB or "
            "1073741824.");
}

TEST(DefaultHostMemoryBudgetTest, IsHalfOfPhysicalMemoryAndAtLeastOneGiB) {
  const int64_t budget = DefaultHostMemoryBudget();
  EXPECT_GE(budget, int64_t{1} << 30);
  const int64_t total =
      static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  // MemTotal and sysconf agree to within a few percent.
  EXPECT_NEAR(static_cast<double>(budget), total / 2.0, total * 0.05 + 1);
}

}  // namespace
}  // namespace tpu::emulator
