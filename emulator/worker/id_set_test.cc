#include "emulator/worker/id_set.h"

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

TEST(IdSetTest, MergesNeighbours) {
  IdSet s;
  EXPECT_TRUE(s.Insert(5));
  EXPECT_TRUE(s.Insert(7));
  EXPECT_EQ(s.interval_count(), 2u);
  EXPECT_TRUE(s.Insert(6));
  EXPECT_EQ(s.interval_count(), 1u);
  EXPECT_FALSE(s.Insert(6));
  EXPECT_TRUE(s.Contains(5));
  EXPECT_TRUE(s.Contains(7));
  EXPECT_FALSE(s.Contains(4));
  EXPECT_FALSE(s.Contains(8));
  EXPECT_TRUE(s.Insert(4));
  EXPECT_TRUE(s.Insert(8));
  EXPECT_EQ(s.interval_count(), 1u);
}

TEST(IdSetTest, MatchesStdSetUnderShuffledDenseInsertions) {
  std::vector<uint64_t> ids;
  for (uint64_t i = 1; i <= 5000; ++i) ids.push_back(i);
  // Slightly out of order, as ids arriving over several streams are.
  std::mt19937 rng(42);
  for (size_t i = 0; i + 8 < ids.size(); i += 8) {
    std::shuffle(ids.begin() + i, ids.begin() + i + 8, rng);
  }
  IdSet s;
  std::set<uint64_t> reference;
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(s.Insert(ids[i]), reference.insert(ids[i]).second);
    if (i % 97 == 0) {
      for (uint64_t probe = 0; probe <= 5001; probe += 13) {
        ASSERT_EQ(s.Contains(probe), reference.count(probe) == 1) << probe;
      }
    }
  }
  EXPECT_EQ(s.interval_count(), 1u);
}

TEST(IdSetTest, ExtremeValues) {
  IdSet s;
  EXPECT_TRUE(s.Insert(0));
  EXPECT_TRUE(s.Contains(0));
  EXPECT_FALSE(s.Contains(1));
  const uint64_t big = (uint64_t{1} << 44) - 1;
  EXPECT_TRUE(s.Insert(big));
  EXPECT_TRUE(s.Contains(big));
  EXPECT_FALSE(s.Contains(big - 1));
}

}  // namespace
}  // namespace tpu::emulator
