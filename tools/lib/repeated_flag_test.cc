#include "tools/lib/repeated_flag.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tpu::tools {
namespace {

TEST(RepeatedFlagTest, TakesEveryValueInOrderAndLeavesTheRest) {
  std::vector<std::string> storage = {"tool",
                                      "--fault=execute core=1 hang",
                                      "--port=0",
                                      "--fault",
                                      "alloc fail=INTERNAL:x",
                                      "--faulty=1",
                                      "--",
                                      "--fault=kept"};
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  int argc = static_cast<int>(argv.size());
  const std::vector<std::string> values =
      TakeRepeatedFlag("fault", &argc, argv.data());
  EXPECT_EQ(values, (std::vector<std::string>{"execute core=1 hang",
                                              "alloc fail=INTERNAL:x"}));
  ASSERT_EQ(argc, 5);
  EXPECT_STREQ(argv[1], "--port=0");
  EXPECT_STREQ(argv[2], "--faulty=1");
  EXPECT_STREQ(argv[3], "--");
  EXPECT_STREQ(argv[4], "--fault=kept");
}

TEST(RepeatedFlagTest, ATrailingBareFlagIsLeftForAbslToReport) {
  std::vector<std::string> storage = {"tool", "--fault"};
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  int argc = 2;
  EXPECT_TRUE(TakeRepeatedFlag("fault", &argc, argv.data()).empty());
  EXPECT_EQ(argc, 2);
}

}  // namespace
}  // namespace tpu::tools
