#include "driver/local/local_driver.h"

#include "absl/strings/match.h"
#include "driver/driver_registry.h"
#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

TEST(ParseLocalAddressTest, DefaultsWithoutParameters) {
  absl::StatusOr<emulator::WorkerOptions> options =
      ParseLocalAddress("local://");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->chips, emulator::WorkerOptions().chips);
  EXPECT_EQ(options->cores_per_chip, emulator::WorkerOptions().cores_per_chip);
}

TEST(ParseLocalAddressTest, ReadsEveryParameter) {
  absl::StatusOr<emulator::WorkerOptions> options = ParseLocalAddress(
      "local://?chips=3&cores_per_chip=1&hbm_bytes_per_core=4096&"
      "tpu_numerics=1&compute_threads=2&unknown_handle_wait_ms=10");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->chips, 3);
  EXPECT_EQ(options->cores_per_chip, 1);
  EXPECT_EQ(options->hbm_bytes_per_core, 4096);
  EXPECT_TRUE(options->tpu_numerics);
  EXPECT_EQ(options->compute_threads, 2);
  EXPECT_EQ(options->unknown_handle_wait_ms, 10);
}

TEST(ParseLocalAddressTest, BadParametersAreNamed) {
  struct Case {
    const char* address;
    const char* names;
  } cases[] = {
      {"local://?chips=0", "chips"},
      {"local://?chips=two", "chips"},
      {"local://?cores_per_chip=", "cores_per_chip"},
      {"local://?tpu_numerics=yes", "tpu_numerics"},
      {"local://?hbm_bytes_per_core=-1", "hbm_bytes_per_core"},
      {"local://?chip=2", "chip"},
      {"local://somehost", "no host"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<emulator::WorkerOptions> options =
        ParseLocalAddress(c.address);
    ASSERT_FALSE(options.ok()) << c.address;
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(options.status().message(), c.names))
        << options.status();
  }
}

TEST(LocalDriverTest, RegistryOpensTheTopologyAsked) {
  auto driver = DriverRegistry::Open("local://?chips=3&cores_per_chip=2");
  ASSERT_TRUE(driver.ok()) << driver.status();
  auto info = (*driver)->QuerySystemInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->tpu_chip_size(), 3);
  int cores = 0;
  for (const auto& chip : info->tpu_chip()) cores += chip.core_size();
  EXPECT_EQ(cores, 6);
  // A buffer on the last core round-trips.
  auto buffer = (*driver)->Allocate(5, tpu_driver::HBM, 8, {});
  const char in[8] = "abcdefg";
  char out[8] = {};
  EXPECT_TRUE((*driver)->TransferToDevice(in, buffer.get(), {})->Await().ok());
  EXPECT_TRUE(
      (*driver)->TransferFromDevice(buffer.get(), out, {})->Await().ok());
  EXPECT_STREQ(out, "abcdefg");
}

TEST(LocalDriverTest, BadAddressFailsToOpen) {
  auto driver = DriverRegistry::Open("local://?cores_per_chip=zero");
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpu::driver
