#include "tools/tpu_run/npz.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tools/tpu_run/npy.h"
#include "tools/tpu_run/npz_testing.h"

namespace tpu {
namespace {

std::string Npy(std::vector<int64_t> shape, std::vector<float> values) {
  NpyArray array;
  array.dtype = NpyDtype{'f', 4};
  array.shape = std::move(shape);
  array.data.assign(reinterpret_cast<const char*>(values.data()),
                    values.size() * sizeof(float));
  return SerializeNpy(array);
}

TEST(NpzTest, ReadsStoredAndDeflatedArchivesInOrder) {
  for (bool deflate : {false, true}) {
    const std::string zip = testing::Zip(
        {{"arr_0.npy", Npy({2}, {1.5f, -2})}, {"arr_1.npy", Npy({}, {7})}},
        deflate);
    absl::StatusOr<std::vector<NpzMember>> members = ParseNpz(zip);
    ASSERT_TRUE(members.ok()) << members.status();
    ASSERT_EQ(members->size(), 2u);
    EXPECT_EQ((*members)[0].name, "arr_0");
    EXPECT_EQ((*members)[0].array.shape, (std::vector<int64_t>{2}));
    EXPECT_EQ((*members)[1].name, "arr_1");
    EXPECT_TRUE((*members)[1].array.shape.empty());
    float v;
    std::memcpy(&v, (*members)[0].array.data.data() + 4, 4);
    EXPECT_EQ(v, -2.0f);
  }
}

TEST(NpzTest, RejectsWhatIsNotAnArchiveOrHoldsBadMembers) {
  EXPECT_EQ(ParseNpz("hello").status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<NpzMember>> bad =
      ParseNpz(testing::Zip({{"x.npy", "not an npy file"}}, false));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("member x.npy"), std::string::npos)
      << bad.status();
  EXPECT_EQ(ReadNpzFile("/nonexistent/file.npz").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tpu
