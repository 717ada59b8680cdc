// RunModule over local:// (the emulator in-process): tuple parameters from
// folders and .npz archives, random inputs for them, --repeat timing, and
// token parameters refused with a reason.

#include "tools/tpu_run/run_module.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tools/tpu_run/npy.h"
#include "tools/tpu_run/npz_testing.h"

namespace tpu {
namespace {

namespace fs = std::filesystem;

// (f32[2], (s32[], f32[1])) -> (f32[2] a + b, s32[] i * 2)
constexpr char kTupleModule[] = R"(HloModule tuple_parameter
ENTRY e {
  p = (f32[2], (s32[], f32[1])) parameter(0)
  a = f32[2] get-tuple-element(p), index=0
  inner = (s32[], f32[1]) get-tuple-element(p), index=1
  i = s32[] get-tuple-element(inner), index=0
  b = f32[1] get-tuple-element(inner), index=1
  r = f32[] reshape(b)
  wide = f32[2] broadcast(r), dimensions={}
  sum = f32[2] add(a, wide)
  twice = s32[] add(i, i)
  ROOT t = (f32[2], s32[]) tuple(sum, twice)
}
)";

class RunModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "in" / "replica_0");
    module_ = (dir_ / "module.hlo").string();
    std::ofstream(module_) << kTupleModule;
  }

  RunOptions Options() const {
    RunOptions options;
    options.target = "local://";
    options.module_path = module_;
    options.inputs_dir = (dir_ / "in").string();
    options.outputs_dir = (dir_ / "out").string();
    return options;
  }

  static std::string Npy(NpyDtype dtype, std::vector<int64_t> shape,
                         const void* data, size_t bytes) {
    NpyArray array;
    array.dtype = dtype;
    array.shape = std::move(shape);
    array.data.assign(static_cast<const char*>(data), bytes);
    return SerializeNpy(array);
  }

  // The three leaves of kTupleModule's parameter, as .npy contents.
  static std::vector<std::string> Leaves() {
    const float a[2] = {1.5f, -2};
    const int32_t i = 21;
    const float b[1] = {0.25f};
    return {Npy({'f', 4}, {2}, a, sizeof(a)), Npy({'i', 4}, {}, &i, sizeof(i)),
            Npy({'f', 4}, {1}, b, sizeof(b))};
  }

  void ExpectOutputs() const {
    absl::StatusOr<NpyArray> sum =
        ReadNpyFile((dir_ / "out" / "replica_0" / "out_0.npy").string());
    absl::StatusOr<NpyArray> twice =
        ReadNpyFile((dir_ / "out" / "replica_0" / "out_1.npy").string());
    ASSERT_TRUE(sum.ok()) << sum.status();
    ASSERT_TRUE(twice.ok()) << twice.status();
    float s[2];
    std::memcpy(s, sum->data.data(), sizeof(s));
    EXPECT_EQ(s[0], 1.75f);
    EXPECT_EQ(s[1], -1.75f);
    int32_t t;
    std::memcpy(&t, twice->data.data(), sizeof(t));
    EXPECT_EQ(t, 42);
  }

  fs::path dir_;
  std::string module_;
};

TEST_F(RunModuleTest, TupleParameterFromAFolderOfLeaves) {
  const fs::path folder = dir_ / "in" / "replica_0" / "arg_0";
  fs::create_directories(folder);
  const std::vector<std::string> leaves = Leaves();
  for (size_t j = 0; j < leaves.size(); ++j) {
    std::ofstream(folder / absl::StrCat("arr_", j, ".npy"), std::ios::binary)
        << leaves[j];
  }
  std::ostringstream out;
  absl::Status status = RunModule(Options(), out);
  ASSERT_TRUE(status.ok()) << status;
  ExpectOutputs();
}

TEST_F(RunModuleTest, TupleParameterFromAnNpzArchive) {
  const std::vector<std::string> leaves = Leaves();
  std::ofstream(dir_ / "in" / "replica_0" / "arg_0.npz", std::ios::binary)
      << testing::Zip({{"arr_0.npy", leaves[0]},
                       {"arr_1.npy", leaves[1]},
                       {"arr_2.npy", leaves[2]}},
                      /*deflate=*/true);
  std::ostringstream out;
  absl::Status status = RunModule(Options(), out);
  ASSERT_TRUE(status.ok()) << status;
  ExpectOutputs();
}

TEST_F(RunModuleTest, MissingTupleInputsNameBothForms) {
  std::ostringstream out;
  absl::Status status = RunModule(Options(), out);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_NE(status.message().find("arg_0.npz"), std::string::npos) << status;
  EXPECT_NE(status.message().find("3 leaves"), std::string::npos) << status;
}

TEST_F(RunModuleTest, RandomInputsForTuplesAndRepeatTiming) {
  RunOptions options = Options();
  options.inputs_dir.clear();
  options.random_inputs = true;
  options.repeat = 3;
  std::ostringstream out;
  absl::Status status = RunModule(options, out);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_NE(out.str().find("step time over 3 runs after a warm-up: min "),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find(" ms, median "), std::string::npos) << out.str();
}

TEST_F(RunModuleTest, TokenParametersAreRefusedWithTheReason) {
  std::ofstream(module_) << R"(HloModule token_parameter
ENTRY e {
  t = token[] parameter(0)
  ROOT x = f32[] constant(1)
})";
  RunOptions options = Options();
  options.inputs_dir.clear();
  options.random_inputs = true;
  std::ostringstream out;
  absl::Status status = RunModule(options, out);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("not tokens"), std::string::npos) << status;
}

TEST(StepTimesTest, MinMedianMax) {
  EXPECT_EQ(StepTimes({3, 1, 2}),
            "step time over 3 runs after a warm-up: min 1.000 ms, median "
            "2.000 ms, max 3.000 ms");
  EXPECT_EQ(StepTimes({4, 1, 2, 3}),
            "step time over 4 runs after a warm-up: min 1.000 ms, median "
            "2.500 ms, max 4.000 ms");
}

}  // namespace
}  // namespace tpu
