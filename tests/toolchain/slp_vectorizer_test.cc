// Debian 12's GCC 12.2 at -O2 -march=native (AVX-512) builds the second of
// two initializer-list vectors in one call wrongly when the SLP vectorizer is
// on: {1, 1, 0, 0} arrives as {1, 1, 1, 1}. .bazelrc turns SLP off; this test
// fails if the flag is lost or the toolchain regresses in another way.

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace {

struct Seen {
  std::vector<double> a, b;
};

__attribute__((noinline)) Seen Pass(const std::string& name,
                                    const std::vector<double>& a,
                                    const std::vector<double>& b,
                                    std::string tag = "") {
  return {a, b};
}

TEST(SlpVectorizerTest, TwoInitializerListsInOneCall) {
  for (int i = 0; i < 2; ++i) {
    Seen seen = Pass("compare", {1, 0, 1, 0}, {1, 1, 0, 0}, std::to_string(i));
    EXPECT_EQ(seen.a, std::vector<double>({1, 0, 1, 0}));
    EXPECT_EQ(seen.b, std::vector<double>({1, 1, 0, 0}));
  }
}

}  // namespace
