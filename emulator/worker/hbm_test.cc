#include "emulator/worker/hbm.h"

#include <cstdint>
#include <utility>

#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

TEST(HbmTest, ReserveAndReleaseAccounting) {
  auto account = HbmAccount::Create(3, 1000);
  {
    auto a = account->Reserve(400);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(account->in_use(), 400);
    auto b = account->Reserve(600);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(account->available(), 0);
    b->Reset();
    EXPECT_EQ(account->in_use(), 400);
    b->Reset();  // idempotent
    EXPECT_EQ(account->in_use(), 400);
  }
  EXPECT_EQ(account->in_use(), 0);
}

TEST(HbmTest, OverCapacityIsResourceExhaustedWithFigures) {
  auto account = HbmAccount::Create(5, 1000);
  auto held = account->Reserve(300);
  ASSERT_TRUE(held.ok());
  auto r = account->Reserve(800);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  const std::string msg(r.status().message());
  EXPECT_NE(msg.find("core 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("requested 800 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("300 bytes in use"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1000 bytes capacity"), std::string::npos) << msg;
  EXPECT_EQ(account->in_use(), 300);
}

TEST(HbmTest, HugeAndNegativeRequests) {
  auto account = HbmAccount::Create(0, int64_t{16} << 30);
  auto held = account->Reserve(1);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(account->Reserve(INT64_MAX).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(account->Reserve(-1).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto zero = account->Reserve(0);
  EXPECT_TRUE(zero.ok());
  EXPECT_EQ(account->in_use(), 1);
}

TEST(HbmTest, MovedReservationReleasesOnce) {
  auto account = HbmAccount::Create(0, 100);
  auto r = account->Reserve(60);
  ASSERT_TRUE(r.ok());
  HbmReservation moved = std::move(*r);
  EXPECT_EQ(account->in_use(), 60);
  HbmReservation other;
  other = std::move(moved);
  EXPECT_EQ(other.bytes(), 60);
  other.Reset();
  EXPECT_EQ(account->in_use(), 0);
}

}  // namespace
}  // namespace tpu::emulator
