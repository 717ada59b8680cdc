#include "client/device_assignment.h"

#include "gtest/gtest.h"

namespace tpu::client {
namespace {

TEST(DeviceAssignmentTest, ProtoRoundTripKeepsXlaLayout) {
  DeviceAssignment assignment(3, 1);
  assignment(0, 0) = 4;
  assignment(1, 0) = 5;
  assignment(2, 0) = 7;
  xla::DeviceAssignmentProto proto = assignment.ToProto();
  EXPECT_EQ(proto.replica_count(), 3);
  EXPECT_EQ(proto.computation_count(), 1);
  ASSERT_EQ(proto.computation_devices_size(), 1);
  ASSERT_EQ(proto.computation_devices(0).replica_device_ids_size(), 3);
  EXPECT_EQ(proto.computation_devices(0).replica_device_ids(2), 7);

  absl::StatusOr<DeviceAssignment> back = DeviceAssignment::FromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, assignment);
  EXPECT_EQ(back->ToString(), "(replica 0: 4) (replica 1: 5) (replica 2: 7)");
}

TEST(DeviceAssignmentTest, ComputationMajorTable) {
  DeviceAssignment assignment(2, 2);
  assignment(0, 0) = 0;
  assignment(1, 0) = 1;
  assignment(0, 1) = 2;
  assignment(1, 1) = 3;
  xla::DeviceAssignmentProto proto = assignment.ToProto();
  EXPECT_EQ(proto.computation_devices(1).replica_device_ids(0), 2);
  EXPECT_EQ(proto.computation_devices(0).replica_device_ids(1), 1);
}

TEST(DeviceAssignmentTest, FromProtoRejectsInconsistentTable) {
  xla::DeviceAssignmentProto proto;
  proto.set_replica_count(2);
  proto.set_computation_count(1);
  proto.add_computation_devices()->add_replica_device_ids(0);
  absl::StatusOr<DeviceAssignment> got = DeviceAssignment::FromProto(proto);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("lists 1 replicas"),
            absl::string_view::npos)
      << got.status();

  proto.set_computation_count(2);
  got = DeviceAssignment::FromProto(proto);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpu::client
