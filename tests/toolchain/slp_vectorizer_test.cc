// Debian 12's GCC 12.2 at -O2 -march=native (AVX-512) builds the second of
// two initializer-list vectors in one call wrongly when the SLP vectorizer is
// on: {1, 1, 0, 0} arrives as {1, 1, 1, 1}. .bazelrc turns SLP off; this test
// fails if the flag is lost or the toolchain regresses in another way.

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace {

char seen[128];

__attribute__((noinline)) void Pass(const std::string& name,
                                    const std::vector<double>& a,
                                    const std::vector<double>& b,
                                    std::string tag = "",
                                    std::string attrs = "") {
  std::snprintf(seen, sizeof(seen), "a=%g %g %g %g b=%g %g %g %g", a[0], a[1],
                a[2], a[3], b[0], b[1], b[2], b[3]);
}

TEST(SlpVectorizerTest, TwoInitializerListsInOneCall) {
  for (int i = 0; i < 2; ++i) {
    Pass("compare", {1, 0, 1, 0}, {1, 1, 0, 0}, "pred", std::to_string(i));
    EXPECT_STREQ(seen, "a=1 0 1 0 b=1 1 0 0") << "iteration " << i;
  }
}

}  // namespace
