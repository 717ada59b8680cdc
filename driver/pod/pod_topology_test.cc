#include "driver/pod/pod_topology.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A worker serving `chips` chips of `cores` cores. In a slice of `hosts`
// hosts it reports every host's chips (chip g on host g / chips, core ids
// g * cores + k) and serves its own.
tpu_driver::SystemInfo Worker(int chips, int cores, int hosts = 1, int host = 0,
                              int cpu_cores = 2) {
  tpu_driver::SystemInfo info;
  for (int g = 0; g < hosts * chips; ++g) {
    auto* chip = info.add_tpu_chip();
    chip->set_host_id(g / chips);
    chip->mutable_chip_coord()->set_x(g % 2);
    chip->mutable_chip_coord()->set_y(g / 2);
    chip->mutable_chip_coord()->set_z(0);
    for (int k = 0; k < cores; ++k) {
      auto* core = chip->add_core();
      core->set_id(g * cores + k);
      core->set_core_on_chip_index(k);
      core->set_hbm_bytes_available(1000 + g);
      if (g / chips == host) *info.add_local_core() = *core;
    }
  }
  info.mutable_cpu()->set_num_cpu_cores(cpu_cores);
  info.mutable_cpu()->set_cpu_load_average_1min(0.25f);
  info.mutable_cpu()->set_ram_bytes_total(100);
  info.mutable_cpu()->set_ram_bytes_available(50);
  info.set_host_id(host);
  info.set_host_count(hosts);
  info.set_core_count(hosts * chips * cores);
  return info;
}

std::vector<std::string> Names(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("worker " + std::to_string(i));
  return names;
}

TEST(PodTopologyTest, LoneWorkersKeepEveryChipAndRenumberCores) {
  std::vector<tpu_driver::SystemInfo> infos = {Worker(2, 2),
                                               Worker(1, 2, 1, 0, 4)};
  auto topology = MergeSystemInfo(infos, Names(2));
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_FALSE(topology->slice);
  const tpu_driver::SystemInfo& pod = topology->system_info;
  EXPECT_EQ(pod.chip_count(), 3);  // (0,0,0) twice: separate systems.
  EXPECT_EQ(pod.core_count(), 6);
  EXPECT_EQ(pod.local_core_size(), 6);
  EXPECT_EQ(pod.host_count(), 1);
  EXPECT_EQ(pod.host_id(), 0);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(pod.local_core(i).id(), i);
    EXPECT_EQ(pod.local_core(i).core_on_host_index(), i);
  }
  for (const auto& chip : pod.tpu_chip()) EXPECT_EQ(chip.host_id(), 0);
  EXPECT_EQ(pod.tpu_chip(2).core(1).id(), 5);
  EXPECT_EQ(pod.tpu_chip(2).core(1).hbm_bytes_available(), 1000);
  ASSERT_EQ(topology->cores.size(), 6u);
  EXPECT_EQ(topology->cores[3].worker, 0);
  EXPECT_EQ(topology->cores[3].worker_core_id, 3);
  EXPECT_EQ(topology->cores[4].worker, 1);
  EXPECT_EQ(topology->cores[4].worker_core_id, 0);
  EXPECT_EQ(topology->cores[5].worker_core_id, 1);
  EXPECT_EQ(pod.cpu().num_cpu_cores(), 6);
  EXPECT_EQ(pod.cpu().ram_bytes_total(), 200);
}

TEST(PodTopologyTest, SliceHostsAreDeduplicatedByCoordinates) {
  // Hosts listed out of order: the chip's host id decides who serves it.
  std::vector<tpu_driver::SystemInfo> infos = {Worker(2, 2, 2, 1),
                                               Worker(2, 2, 2, 0)};
  auto topology = MergeSystemInfo(infos, Names(2));
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_TRUE(topology->slice);
  const tpu_driver::SystemInfo& pod = topology->system_info;
  EXPECT_EQ(pod.chip_count(), 4);
  EXPECT_EQ(pod.core_count(), 8);
  EXPECT_EQ(pod.host_count(), 1);
  ASSERT_EQ(topology->cores.size(), 8u);
  // Chips 0,1 belong to host 0 = worker 1; chips 2,3 to host 1 = worker 0.
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(topology->cores[c].worker, c < 4 ? 1 : 0) << c;
    EXPECT_EQ(topology->cores[c].worker_core_id, c) << c;
  }
}

TEST(PodTopologyTest, MixedKindsOfWorkersAreRejected) {
  std::vector<tpu_driver::SystemInfo> infos = {Worker(2, 1),
                                               Worker(2, 1, 2, 1)};
  auto topology = MergeSystemInfo(infos, Names(2));
  EXPECT_EQ(topology.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(topology.status().message(),
              HasSubstr("worker 0 reports only its own cores, but worker 1 "
                        "reports a pod slice of 4 chips"));
}

TEST(PodTopologyTest, TwoWorkersClaimingOneHostAreRejected) {
  std::vector<tpu_driver::SystemInfo> infos = {Worker(1, 1, 2, 0),
                                               Worker(1, 1, 2, 0)};
  auto topology = MergeSystemInfo(infos, Names(2));
  EXPECT_EQ(topology.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(topology.status().message(),
              HasSubstr("worker 0 and worker 1 both report host_id 0"));
}

TEST(PodTopologyTest, MissingSliceHostIsNamed) {
  std::vector<tpu_driver::SystemInfo> infos = {Worker(1, 1, 3, 0),
                                               Worker(1, 1, 3, 2)};
  auto topology = MergeSystemInfo(infos, Names(2));
  EXPECT_EQ(topology.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(topology.status().message(), HasSubstr("belongs to host 1"));
  EXPECT_THAT(topology.status().message(), HasSubstr("list every host"));
}

TEST(PodTopologyTest, NoWorkersOrNoCoresAreErrors) {
  EXPECT_EQ(MergeSystemInfo({}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<tpu_driver::SystemInfo> infos = {tpu_driver::SystemInfo()};
  auto topology = MergeSystemInfo(infos, Names(1));
  EXPECT_EQ(topology.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(topology.status().message(),
              HasSubstr("worker 0 reports no local TPU cores"));
}

xla::DeviceAssignmentProto Assignment(std::vector<int64_t> cores) {
  xla::DeviceAssignmentProto proto;
  proto.set_replica_count(static_cast<int32_t>(cores.size()));
  proto.set_computation_count(1);
  auto* computation = proto.add_computation_devices();
  for (int64_t core : cores) computation->add_replica_device_ids(core);
  return proto;
}

TEST(PodTopologyTest, LoneWorkersGetTheirOwnIdsAndDistinctForeignOnes) {
  std::vector<tpu_driver::SystemInfo> infos = {Worker(2, 1), Worker(2, 1)};
  auto topology = MergeSystemInfo(infos, Names(2));
  ASSERT_TRUE(topology.ok());
  // Replicas on pod cores 0 (w0 c0), 3 (w1 c1), 2 (w1 c0), 1 (w0 c1).
  auto pod = Assignment({0, 3, 2, 1});
  auto for_worker1 = TranslateDeviceAssignment(*topology, 1, pod);
  ASSERT_TRUE(for_worker1.ok());
  EXPECT_THAT(for_worker1->computation_devices(0).replica_device_ids(),
              ElementsAre(2, 1, 0, 3));
  auto for_worker0 = TranslateDeviceAssignment(*topology, 0, pod);
  ASSERT_TRUE(for_worker0.ok());
  EXPECT_THAT(for_worker0->computation_devices(0).replica_device_ids(),
              ElementsAre(0, 2, 3, 1));
  EXPECT_EQ(for_worker0->replica_count(), 4);
}

TEST(PodTopologyTest, SliceWorkersGetSliceIds) {
  std::vector<tpu_driver::SystemInfo> infos = {Worker(1, 2, 2, 1),
                                               Worker(1, 2, 2, 0)};
  auto topology = MergeSystemInfo(infos, Names(2));
  ASSERT_TRUE(topology.ok());
  auto translated = TranslateDeviceAssignment(*topology, 0, Assignment({3, 0}));
  ASSERT_TRUE(translated.ok());
  EXPECT_THAT(translated->computation_devices(0).replica_device_ids(),
              ElementsAre(3, 0));
}

TEST(PodTopologyTest, AssignmentOutsideThePodIsRejected) {
  std::vector<tpu_driver::SystemInfo> infos = {Worker(2, 1)};
  auto topology = MergeSystemInfo(infos, Names(1));
  ASSERT_TRUE(topology.ok());
  auto translated = TranslateDeviceAssignment(*topology, 0, Assignment({0, 2}));
  EXPECT_EQ(translated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(translated.status().message(),
              HasSubstr("names core 2, but the pod has 2 cores (0-1)"));
}

}  // namespace
}  // namespace tpu::driver
