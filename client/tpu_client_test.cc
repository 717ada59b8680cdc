#include "client/tpu_client.h"

#include "driver/testing/fake_driver.h"
#include "gtest/gtest.h"

namespace tpu::client {
namespace {

// A driver on a fake worker of `chips` chips of `cores_per_chip` cores.
std::unique_ptr<driver::TpuDriver> FakeDriver(int chips, int cores_per_chip) {
  driver::testing::FakeWorkerOptions options;
  options.chips = chips;
  options.cores_per_chip = cores_per_chip;
  return driver::testing::FakeWorker::Create(options)->NewDriver();
}

std::shared_ptr<TpuClient> MakeClient(int chips, int cores_per_chip) {
  absl::StatusOr<std::shared_ptr<TpuClient>> client =
      TpuClient::Create(FakeDriver(chips, cores_per_chip));
  EXPECT_TRUE(client.ok()) << client.status();
  return *client;
}

TEST(TpuClientTest, OneDevicePerCoreWithTopology) {
  std::shared_ptr<TpuClient> client = MakeClient(4, 2);
  ASSERT_EQ(client->device_count(), 8);
  EXPECT_EQ(client->local_device_count(), 8);
  EXPECT_EQ(client->host_id(), 0);
  const TpuDevice& d3 = *client->devices()[3];
  EXPECT_EQ(d3.id(), 3);
  EXPECT_EQ(d3.ToString(), "TPU_3");
  EXPECT_EQ(d3.DebugString(), "TPU_3(host=0,(1,0,0,1))");
  EXPECT_EQ(d3.coords()[0], 1);
  EXPECT_EQ(d3.core_on_chip(), 1);
  EXPECT_EQ(d3.device_kind(), "Cloud TPU");
}

TEST(TpuClientTest, DeviceOrdinalChecks) {
  std::shared_ptr<TpuClient> client = MakeClient(2, 1);
  EXPECT_TRUE(client->CheckDeviceId(1, "Caller").ok());
  absl::Status bad = client->CheckDeviceId(2, "Caller");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "Caller got bad device_id: 2 (num_devices=2).");
  EXPECT_EQ(client->CheckDeviceId(-1, "X").message(),
            "X got bad device_id: -1 (num_devices=2).");
  absl::StatusOr<std::shared_ptr<TpuDevice>> device =
      client->LookupDevice(1, "Caller");
  ASSERT_TRUE(device.ok());
  EXPECT_EQ((*device)->id(), 1);
}

TEST(TpuClientTest, DefaultDeviceAssignmentIsReplicaOnLocalDevice) {
  std::shared_ptr<TpuClient> client = MakeClient(4, 2);
  absl::StatusOr<DeviceAssignment> assignment =
      client->GetDefaultDeviceAssignment(8, 1);
  ASSERT_TRUE(assignment.ok()) << assignment.status();
  for (int r = 0; r < 8; ++r) EXPECT_EQ((*assignment)(r, 0), r);

  absl::StatusOr<DeviceAssignment> partitioned =
      client->GetDefaultDeviceAssignment(2, 2);
  EXPECT_EQ(partitioned.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(partitioned.status().message(),
            "Num partitions greater than 1, is not supported.");
}

TEST(TpuClientTest, WarningsGoToTheHandler) {
  std::vector<std::string> lines;
  ClientOptions options;
  options.warning_handler = [&lines](absl::string_view l) {
    lines.emplace_back(l);
  };
  absl::StatusOr<std::shared_ptr<TpuClient>> client =
      TpuClient::Create(FakeDriver(1, 1), options);
  ASSERT_TRUE(client.ok());
  (*client)->Warn("hello");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "hello");
}

}  // namespace
}  // namespace tpu::client
