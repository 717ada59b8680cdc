#include "emulator/worker/system_info.h"

#include <set>
#include <tuple>

#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

std::tuple<int, int, int> Coord(const tpu_driver::TpuChipInfo& chip) {
  return {chip.chip_coord().x(), chip.chip_coord().y(), chip.chip_coord().z()};
}

TEST(SystemInfoTest, DefaultIsV3EightShape) {
  auto topo = Topology::Create(4, 2, 1, 0);
  ASSERT_TRUE(topo.ok());
  const auto info = BuildSystemInfo(
      *topo, 1000, [](int local) { return 1000 - local; }, ReadCpuInfo());
  ASSERT_EQ(info.tpu_chip_size(), 4);
  ASSERT_EQ(info.local_core_size(), 8);
  EXPECT_EQ(info.core_count(), 8);
  EXPECT_EQ(info.chip_count(), 4);
  EXPECT_EQ(info.host_count(), 1);
  EXPECT_EQ(info.host_id(), 0);
  std::set<std::tuple<int, int, int>> coords;
  for (int chip = 0; chip < 4; ++chip) {
    const auto& c = info.tpu_chip(chip);
    EXPECT_EQ(c.host_id(), 0);
    coords.insert(Coord(c));
    EXPECT_LT(c.chip_coord().x(), 2);
    EXPECT_LT(c.chip_coord().y(), 2);
    EXPECT_EQ(c.chip_coord().z(), 0);
    ASSERT_EQ(c.core_size(), 2);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(c.core(k).id(), chip * 2 + k);
      EXPECT_EQ(c.core(k).core_on_chip_index(), k);
      EXPECT_EQ(c.core(k).core_on_host_index(), chip * 2 + k);
      EXPECT_EQ(c.core(k).hbm_bytes_available(), 1000 - (chip * 2 + k));
    }
  }
  EXPECT_EQ(coords.size(), 4u);  // 2x2x1 grid, all distinct
  for (int i = 0; i < 8; ++i) EXPECT_EQ(info.local_core(i).id(), i);
  EXPECT_TRUE(info.IsInitialized()) << info.InitializationErrorString();
}

TEST(SystemInfoTest, PodSliceReportsWholeSliceServesOwnCores) {
  auto topo = Topology::Create(4, 2, 3, 1);
  ASSERT_TRUE(topo.ok());
  const auto info = BuildSystemInfo(
      *topo, 500, [](int) { return 123; }, ReadCpuInfo());
  EXPECT_EQ(info.tpu_chip_size(), 12);
  EXPECT_EQ(info.chip_count(), 12);
  EXPECT_EQ(info.core_count(), 24);
  EXPECT_EQ(info.host_count(), 3);
  EXPECT_EQ(info.host_id(), 1);
  ASSERT_EQ(info.local_core_size(), 8);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(info.local_core(i).id(), 8 + i);
    EXPECT_EQ(info.local_core(i).core_on_host_index(), i);
    EXPECT_EQ(info.local_core(i).hbm_bytes_available(), 123);
  }
  std::set<std::tuple<int, int, int>> coords;
  for (int chip = 0; chip < 12; ++chip) {
    const auto& c = info.tpu_chip(chip);
    EXPECT_EQ(c.host_id(), chip / 4);
    coords.insert(Coord(c));
    EXPECT_EQ(c.core(0).hbm_bytes_available(), chip / 4 == 1 ? 123 : 500);
  }
  EXPECT_EQ(coords.size(), 12u);
  // Every host of the slice agrees on the chip coordinates.
  auto other = Topology::Create(4, 2, 3, 2);
  ASSERT_TRUE(other.ok());
  const auto info2 = BuildSystemInfo(
      *other, 500, [](int) { return 0; }, ReadCpuInfo());
  for (int chip = 0; chip < 12; ++chip) {
    EXPECT_EQ(Coord(info.tpu_chip(chip)), Coord(info2.tpu_chip(chip)));
  }
  EXPECT_EQ(topo->LocalIndex(7), -1);
  EXPECT_EQ(topo->LocalIndex(8), 0);
  EXPECT_EQ(topo->LocalIndex(15), 7);
  EXPECT_EQ(topo->LocalIndex(16), -1);
}

TEST(SystemInfoTest, RealCpuFacts) {
  const auto cpu = ReadCpuInfo();
  EXPECT_GT(cpu.num_cpu_cores(), 0);
  EXPECT_GT(cpu.ram_bytes_total(), 0);
  EXPECT_GT(cpu.ram_bytes_available(), 0);
  EXPECT_LE(cpu.ram_bytes_available(), cpu.ram_bytes_total());
  EXPECT_GE(cpu.cpu_load_average_1min(), 0.0f);
}

TEST(SystemInfoTest, InvalidTopologies) {
  EXPECT_EQ(Topology::Create(0, 2, 1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Topology::Create(4, 0, 1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Topology::Create(4, 2, 2, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Topology::Create(4, 2, 1, -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Topology::Create(1 << 16, 2, 1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpu::emulator
