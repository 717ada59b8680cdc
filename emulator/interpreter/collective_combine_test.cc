// ReduceContributions against a reference that folds one contribution at a
// time in the given order: the grouped, blocked fold must give the same bits
// for any number of contributions (groups of 8 and their remainders), any
// length (blocks and their tails) and the streamed large-result path.

#include "emulator/interpreter/collective_combine.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "emulator/interpreter/kernel_util.h"
#include "gtest/gtest.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

// Values whose sums depend on the order they are added in: large and small
// magnitudes of both signs.
float Value(int source, int64_t i) {
  const float big = (source % 3 == 0) ? 1e8f : 1.0f;
  const float sign = ((source + i) % 2 == 0) ? 1.0f : -1.0f;
  return sign * big * (1.0f + static_cast<float>((i * 7 + source) % 13) / 8.0f);
}

std::vector<Literal> Contributions(int count, int64_t n) {
  std::vector<Literal> out;
  for (int s = 0; s < count; ++s) {
    Literal c = Literal::Uninitialized(Shape::Array(xla::F32, {n}));
    float* data = c.mutable_data<float>().data();
    for (int64_t i = 0; i < n; ++i) data[i] = Value(s, i);
    out.push_back(std::move(c));
  }
  return out;
}

// The order the hub would give for ids listed in reverse.
std::vector<int> Reversed(int count) {
  std::vector<int> order;
  for (int s = count - 1; s >= 0; --s) order.push_back(s);
  return order;
}

void ExpectSameBits(const Literal& got, const std::vector<float>& want) {
  ASSERT_EQ(got.shape().element_count(), static_cast<int64_t>(want.size()));
  const float* data = got.data<float>().data();
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &data[i], 4);
    std::memcpy(&b, &want[i], 4);
    ASSERT_EQ(a, b) << "element " << i << ": " << data[i] << " vs " << want[i];
  }
}

TEST(CollectiveCombineTest, SumFoldsInOrderForAnyCountAndLength) {
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  for (int count : {2, 3, 7, 8, 9, 15, 16, 17}) {
    for (int64_t n :
         {int64_t{1}, int64_t{2047}, int64_t{2049}, int64_t{5000}}) {
      SCOPED_TRACE(testing::Message() << count << " contributions of " << n);
      const std::vector<Literal> all = Contributions(count, n);
      const std::vector<int> order = Reversed(count);
      std::vector<float> want(n);
      for (int64_t i = 0; i < n; ++i) {
        float acc = all[order[0]].data<float>()[i];
        for (int k = 1; k < count; ++k) acc += all[order[k]].data<float>()[i];
        want[i] = acc;
      }
      absl::StatusOr<Literal> got =
          ReduceContributions(all, order, {Red::kAdd, nullptr}, &device);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectSameBits(*got, want);
    }
  }
}

TEST(CollectiveCombineTest, LargeResultStreamsTheSameBits) {
  // 4 MiB elements of f32 (16 MiB): above the streamed-store threshold.
  const int64_t n = int64_t{4} << 20;
  const int count = 10;
  const std::vector<Literal> all = Contributions(count, n);
  std::vector<int> order;
  for (int s = 0; s < count; ++s) order.push_back(s);
  std::vector<float> want(n);
  for (int64_t i = 0; i < n; ++i) {
    float acc = all[0].data<float>()[i];
    for (int k = 1; k < count; ++k) acc += all[k].data<float>()[i];
    want[i] = acc;
  }
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  absl::StatusOr<Literal> got =
      ReduceContributions(all, order, {Red::kAdd, nullptr}, &device);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBits(*got, want);
}

TEST(CollectiveCombineTest, MaxPropagatesNaNAcrossGroups) {
  const int64_t n = 100;
  const int count = 11;
  std::vector<Literal> all = Contributions(count, n);
  // A NaN in the second group at element 5, in the first at element 6.
  all[9].mutable_data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  all[2].mutable_data<float>()[6] = std::numeric_limits<float>::quiet_NaN();
  std::vector<int> order;
  for (int s = 0; s < count; ++s) order.push_back(s);
  absl::StatusOr<Literal> got =
      ReduceContributions(all, order, {Red::kMax, nullptr}, nullptr);
  ASSERT_TRUE(got.ok()) << got.status();
  const float* data = got->data<float>().data();
  EXPECT_TRUE(std::isnan(data[5]));
  EXPECT_TRUE(std::isnan(data[6]));
  float want = all[0].data<float>()[7];
  for (int k = 1; k < count; ++k)
    want = std::max(want, all[k].data<float>()[7]);
  EXPECT_EQ(data[7], want);
}

TEST(CollectiveCombineTest, Bf16RoundsAtEveryStep) {
  const int64_t n = 3000;
  const int count = 12;
  std::vector<Literal> all;
  for (int s = 0; s < count; ++s) {
    Literal c = Literal::Uninitialized(Shape::Array(xla::BF16, {n}));
    bf16* data = c.mutable_data<bf16>().data();
    for (int64_t i = 0; i < n; ++i) data[i] = static_cast<bf16>(Value(s, i));
    all.push_back(std::move(c));
  }
  const std::vector<int> order = Reversed(count);
  absl::StatusOr<Literal> got =
      ReduceContributions(all, order, {Red::kAdd, nullptr}, nullptr);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t i = 0; i < n; ++i) {
    bf16 acc = all[order[0]].data<bf16>()[i];
    for (int k = 1; k < count; ++k) {
      acc =
          static_cast<bf16>(static_cast<float>(acc) +
                            static_cast<float>(all[order[k]].data<bf16>()[i]));
    }
    ASSERT_EQ(Eigen::numext::bit_cast<uint16_t>(got->data<bf16>()[i]),
              Eigen::numext::bit_cast<uint16_t>(acc))
        << "element " << i;
  }
}

TEST(CollectiveCombineTest, IntegerSumWrapsForEveryCount) {
  const int64_t n = 2100;
  for (int count : {1, 8, 9, 16, 24}) {
    std::vector<Literal> all;
    for (int s = 0; s < count; ++s) {
      Literal c = Literal::Uninitialized(Shape::Array(xla::S32, {n}));
      int32_t* data = c.mutable_data<int32_t>().data();
      for (int64_t i = 0; i < n; ++i) {
        data[i] = std::numeric_limits<int32_t>::max() - static_cast<int32_t>(i);
      }
      all.push_back(std::move(c));
    }
    std::vector<int> order;
    for (int s = 0; s < count; ++s) order.push_back(s);
    absl::StatusOr<Literal> got =
        ReduceContributions(all, order, {Red::kAdd, nullptr}, nullptr);
    ASSERT_TRUE(got.ok()) << got.status();
    for (int64_t i = 0; i < n; ++i) {
      uint32_t want = 0;
      for (int k = 0; k < count; ++k) {
        want += static_cast<uint32_t>(std::numeric_limits<int32_t>::max()) -
                static_cast<uint32_t>(i);
      }
      ASSERT_EQ(got->data<int32_t>()[i], static_cast<int32_t>(want))
          << count << " contributions, element " << i;
    }
  }
}

}  // namespace
}  // namespace tpu::emulator::interpreter
