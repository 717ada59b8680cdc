// tpu_run end to end: the tpu_emulator binary serving on a loopback port
// (--port=0 --port_file) and the tpu_run binary run against it, with .npy
// files in and out, exactly as a user runs them.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "proto/hlo.pb.h"
#include "tests/e2e/programs.h"
#include "tools/lib/subprocess.h"
#include "tools/tpu_run/npy.h"

namespace tpu {
namespace {

namespace fs = std::filesystem;
using e2e::ParseProgram;
using tools::CommandResult;
using tools::ReadFileOrEmpty;
using tools::RunCommand;
using tools::RunfilePath;
using tools::ScratchDir;

NpyArray FloatArray(std::vector<int64_t> shape, std::vector<float> values) {
  NpyArray a;
  a.dtype = {'f', 4};
  a.shape = std::move(shape);
  a.data.assign(reinterpret_cast<const char*>(values.data()),
                values.size() * sizeof(float));
  return a;
}

NpyArray IntArray(std::vector<int64_t> shape, std::vector<int32_t> values) {
  NpyArray a;
  a.dtype = {'i', 4};
  a.shape = std::move(shape);
  a.data.assign(reinterpret_cast<const char*>(values.data()),
                values.size() * sizeof(int32_t));
  return a;
}

class TpuRunTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<tools::ServerProcess>> emulator =
        tools::ServerProcess::Start(
            {RunfilePath("tools/tpu_emulator/tpu_emulator"), "--port=0"},
            ScratchDir(), "emulator", absl::Seconds(30));
    ASSERT_TRUE(emulator.ok()) << emulator.status();
    emulator_ = emulator->release();
    target_ = new std::string(absl::StrCat("grpc://", emulator_->address()));
  }

  static void TearDownTestSuite() {
    if (emulator_ != nullptr) {
      emulator_->process().Stop(SIGTERM, absl::Seconds(10));
      delete emulator_;
      emulator_ = nullptr;
    }
    delete target_;
    target_ = nullptr;
  }

  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = absl::StrCat(ScratchDir(), "/", info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  // Writes `text` as a binary HloProto (what XLA dumps) and returns its path.
  std::string WriteHloProto(absl::string_view text) {
    xla::HloProto hlo;
    *hlo.mutable_hlo_module() = ParseProgram(text);
    const std::string path = absl::StrCat(dir_, "/module.pb");
    std::ofstream(path, std::ios::binary) << hlo.SerializeAsString();
    return path;
  }

  void WriteInput(int replica, int arg, const NpyArray& array) {
    const std::string dir = absl::StrCat(dir_, "/in/replica_", replica);
    fs::create_directories(dir);
    ASSERT_TRUE(
        WriteNpyFile(absl::StrCat(dir, "/arg_", arg, ".npy"), array).ok());
  }

  std::string OutputBytes(int replica, int out) {
    return ReadFileOrEmpty(
        absl::StrCat(dir_, "/out/replica_", replica, "/out_", out, ".npy"));
  }

  CommandResult Run(std::vector<std::string> flags) {
    std::vector<std::string> argv = {RunfilePath("tools/tpu_run/tpu_run")};
    argv.insert(argv.end(), flags.begin(), flags.end());
    absl::StatusOr<CommandResult> result = RunCommand(argv, absl::Seconds(120));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : CommandResult();
  }

  std::string InputsFlag() const {
    return absl::StrCat("--inputs_dir=", dir_, "/in");
  }
  std::string OutputsFlag() const {
    return absl::StrCat("--outputs_dir=", dir_, "/out");
  }
  static std::string TargetFlag() {
    return absl::StrCat("--target=", *target_);
  }

  // A failed run: non-zero exit, and the error is exactly one line (the
  // last) containing `what`. Other stderr lines may only be the client's
  // warnings.
  void ExpectFailure(const CommandResult& result, absl::string_view what) {
    EXPECT_NE(result.exit_code, 0);
    std::vector<std::string> lines =
        absl::StrSplit(result.err, '\n', absl::SkipEmpty());
    ASSERT_FALSE(lines.empty()) << "no error line";
    EXPECT_TRUE(absl::StartsWith(lines.back(), "tpu_run: error: "))
        << result.err;
    EXPECT_TRUE(absl::StrContains(lines.back(), what)) << result.err;
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      EXPECT_TRUE(absl::StartsWith(lines[i], "W tpu_client: ")) << lines[i];
    }
  }

  static tools::ServerProcess* emulator_;
  static std::string* target_;
  std::string dir_;
};

tools::ServerProcess* TpuRunTest::emulator_ = nullptr;
std::string* TpuRunTest::target_ = nullptr;

TEST_F(TpuRunTest, MatmulBiasReluFromHloProto) {
  const std::string module = WriteHloProto(e2e::kMatmulBiasRelu);
  WriteInput(0, 0, FloatArray({2, 3}, {1, -2, 3, 0.5f, 4, -1}));
  WriteInput(
      0, 1, FloatArray({3, 4}, {1, 0, -1, 2, 0.25f, 1, 0, -3, 2, -1, 1, 0.5f}));
  WriteInput(0, 2, FloatArray({4}, {0.5f, -10, 1, 0}));
  CommandResult result = Run({TargetFlag(), absl::StrCat("--module=", module),
                              InputsFlag(), OutputsFlag()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // x . w + b, then relu, computed by hand (every value exact in f32).
  const NpyArray expected =
      FloatArray({2, 4}, {7.0f, 0.0f, 3.0f, 9.5f, 0.0f, 0.0f, 0.0f, 0.0f});
  EXPECT_EQ(OutputBytes(0, 0), SerializeNpy(expected));
}

TEST_F(TpuRunTest, NestedResultLeavesAreNumberedInOrder) {
  // The same program as binary HloModuleProto and as HLO text.
  const std::string module_pb = absl::StrCat(dir_, "/module_proto.pb");
  std::ofstream(module_pb, std::ios::binary)
      << ParseProgram(e2e::kNestedResult).SerializeAsString();
  const std::string module_text = absl::StrCat(dir_, "/module.hlo");
  std::ofstream(module_text) << e2e::kNestedResult;
  WriteInput(0, 0, FloatArray({2}, {1.25f, -3}));
  WriteInput(0, 1, IntArray({3}, {7, 8, -9}));
  for (const std::string& module : {module_pb, module_text}) {
    fs::remove_all(absl::StrCat(dir_, "/out"));
    CommandResult result = Run({TargetFlag(), absl::StrCat("--module=", module),
                                InputsFlag(), OutputsFlag()});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(OutputBytes(0, 0), SerializeNpy(IntArray({3}, {7, 8, -9})));
    EXPECT_EQ(OutputBytes(0, 1), SerializeNpy(FloatArray({2}, {1.25f, -3})));
    EXPECT_EQ(OutputBytes(0, 2), SerializeNpy(FloatArray({2}, {2.5f, -6})));
    EXPECT_FALSE(fs::exists(absl::StrCat(dir_, "/out/replica_0/out_3.npy")));
  }
}

TEST_F(TpuRunTest, EightReplicas) {
  const std::string module = WriteHloProto(e2e::kTwiceXPlusOne);
  for (int r = 0; r < 8; ++r) {
    WriteInput(r, 0, FloatArray({4}, {float(r), -1.0f * r, 0.5f, 10.0f}));
  }
  CommandResult result = Run({TargetFlag(), absl::StrCat("--module=", module),
                              "--replicas=8", InputsFlag(), OutputsFlag()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(OutputBytes(r, 0),
              SerializeNpy(FloatArray(
                  {4}, {2.0f * r + 1, 1.0f - 2.0f * r, 2.0f, 21.0f})))
        << "replica " << r;
  }
}

TEST_F(TpuRunTest, Bf16IsReadAndWrittenAsFloat32) {
  const std::string module = WriteHloProto(e2e::kBf16Double);
  // 1 + 2^-8 rounds to 1 (nearest even) on the way in.
  WriteInput(0, 0, FloatArray({3}, {1.0f, 1.00390625f, -3.140625f}));
  CommandResult result = Run({TargetFlag(), absl::StrCat("--module=", module),
                              InputsFlag(), OutputsFlag()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(OutputBytes(0, 0),
            SerializeNpy(FloatArray({3}, {2.0f, 2.0f, -6.28125f})));
}

TEST_F(TpuRunTest, RandomInputsAreDeterministicAndResultsPrint) {
  const std::string module = WriteHloProto(e2e::kTwiceXPlusOne);
  CommandResult first =
      Run({TargetFlag(), absl::StrCat("--module=", module), "--random_inputs"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(absl::StartsWith(first.out, "replica 0 out_0: f32[4]"))
      << first.out;
  CommandResult second =
      Run({TargetFlag(), absl::StrCat("--module=", module), "--random_inputs"});
  EXPECT_EQ(first.out, second.out);
}

TEST_F(TpuRunTest, LocalTargetRunsInProcess) {
  const std::string module = WriteHloProto(e2e::kTwiceXPlusOne);
  for (int r = 0; r < 2; ++r) {
    WriteInput(r, 0, FloatArray({4}, {1, 2, 3, float(r)}));
  }
  CommandResult result = Run({"--target=local://?chips=1&cores_per_chip=2",
                              absl::StrCat("--module=", module), "--replicas=2",
                              InputsFlag(), OutputsFlag()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(OutputBytes(0, 0), SerializeNpy(FloatArray({4}, {3, 5, 7, 1})));
  EXPECT_EQ(OutputBytes(1, 0), SerializeNpy(FloatArray({4}, {3, 5, 7, 3})));
}

TEST_F(TpuRunTest, DumpHloPrintsTheModule) {
  const std::string module = WriteHloProto(e2e::kTwiceXPlusOne);
  WriteInput(0, 0, FloatArray({4}, {1, 2, 3, 4}));
  CommandResult result = Run({TargetFlag(), absl::StrCat("--module=", module),
                              InputsFlag(), OutputsFlag(), "--dump_hlo"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(absl::StartsWith(result.out, "HloModule twice_x_plus_one"))
      << result.out;
}

// The real TensorFlow modules of ../shared/hlo_corpus, as dumped (HLO text
// with elided constants), through tpu_emulator: every output has the shape
// the ENTRY signature declares, holds no NaN and is not all zero, and a second
// run gives the same bytes. (Elided weights are synthetic, so ssd_mobilenet's
// box decoding may overflow exp() to inf, as it would on any IEEE device.)
TEST_F(TpuRunTest, CorpusModulesRunAsDumped) {
  struct Case {
    std::string file;
    std::vector<std::vector<int64_t>> output_shapes;
  };
  const std::vector<Case> cases = {
      {"graphsage_tf.hlo", {{1, 121}}},
      {"ssd_mobilenet_tf.hlo", {{1, 1917, 1, 4}, {1, 1917, 90}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    std::vector<std::string> first_run;
    for (int run = 0; run < 2; ++run) {
      fs::remove_all(dir_ + "/out");
      CommandResult result =
          Run({TargetFlag(),
               absl::StrCat("--module=",
                            RunfilePath("hlo/text/testdata/" + c.file)),
               "--random_inputs", OutputsFlag()});
      ASSERT_EQ(result.exit_code, 0) << result.err;
      for (size_t j = 0; j < c.output_shapes.size(); ++j) {
        const std::string bytes = OutputBytes(0, static_cast<int>(j));
        if (run == 1) {
          EXPECT_TRUE(bytes == first_run[j]) << "out_" << j;
          continue;
        }
        first_run.push_back(bytes);
        absl::StatusOr<NpyArray> out =
            ReadNpyFile(absl::StrCat(dir_, "/out/replica_0/out_", j, ".npy"));
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_EQ(out->shape, c.output_shapes[j]) << "out_" << j;
        ASSERT_EQ(out->dtype.kind, 'f');
        ASSERT_EQ(out->dtype.item_size, 4);
        std::vector<float> values(out->element_count());
        std::memcpy(values.data(), out->data.data(), out->data.size());
        EXPECT_TRUE(std::none_of(values.begin(), values.end(),
                                 [](float v) { return std::isnan(v); }))
            << "out_" << j;
        EXPECT_TRUE(std::any_of(values.begin(), values.end(),
                                [](float v) { return v != 0; }))
            << "out_" << j;
      }
    }
  }
}

TEST_F(TpuRunTest, InputErrorsAreOneLineAndNonZero) {
  const std::string module = WriteHloProto(e2e::kMatmulBiasRelu);
  const std::string module_flag = absl::StrCat("--module=", module);
  // No inputs at all.
  ExpectFailure(Run({TargetFlag(), module_flag}),
                "the program takes 3 parameters: pass --inputs_dir");
  // A missing file.
  WriteInput(0, 0, FloatArray({2, 3}, {1, 2, 3, 4, 5, 6}));
  ExpectFailure(Run({TargetFlag(), module_flag, InputsFlag()}),
                "replica_0/arg_1.npy: missing; parameter 1 is f32[3,4]");
  // The wrong shape.
  WriteInput(0, 1, FloatArray({4, 3}, std::vector<float>(12, 1)));
  WriteInput(0, 2, FloatArray({4}, {1, 2, 3, 4}));
  ExpectFailure(Run({TargetFlag(), module_flag, InputsFlag()}),
                "arg_1.npy: is float32 of shape (4, 3) but the parameter is "
                "f32[3,4]: save it as float32 with shape (3, 4)");
  // The wrong dtype.
  WriteInput(0, 1, IntArray({3, 4}, std::vector<int32_t>(12, 1)));
  ExpectFailure(Run({TargetFlag(), module_flag, InputsFlag()}),
                "is int32 of shape (3, 4)");
  // Not a .npy file.
  std::ofstream(absl::StrCat(dir_, "/in/replica_0/arg_1.npy")) << "hello";
  ExpectFailure(Run({TargetFlag(), module_flag, InputsFlag()}),
                "not a .npy file");
  // One file too many.
  WriteInput(0, 1, FloatArray({3, 4}, std::vector<float>(12, 1)));
  WriteInput(0, 3, FloatArray({1}, {1}));
  ExpectFailure(Run({TargetFlag(), module_flag, InputsFlag()}),
                "arg_3.npy: exists but the program takes only 3 parameters");
}

TEST_F(TpuRunTest, SixtyFourBitInputsAreRejectedByTheClient) {
  const std::string module = WriteHloProto(e2e::kF64Identity);
  NpyArray f64;
  f64.dtype = {'f', 8};
  f64.shape = {2};
  f64.data = std::string(16, '\0');
  WriteInput(0, 0, f64);
  ExpectFailure(
      Run({TargetFlag(), absl::StrCat("--module=", module), InputsFlag()}),
      "64-bit data types are not yet supported on the TPU driver "
      "API. Convert inputs to float32/int32 before using.");
}

TEST_F(TpuRunTest, BadModuleAndTargetErrors) {
  ExpectFailure(
      Run({TargetFlag(), absl::StrCat("--module=", dir_, "/nope.pb")}),
      "nope.pb: no such file");
  const std::string garbage = absl::StrCat(dir_, "/garbage.pb");
  std::ofstream(garbage) << "\x01\x02\x03 not a module";
  ExpectFailure(Run({TargetFlag(), absl::StrCat("--module=", garbage)}),
                "not an HLO module");
  const std::string module = WriteHloProto(e2e::kTwiceXPlusOne);
  ExpectFailure(
      Run({"--target=grpc://127.0.0.1:1", absl::StrCat("--module=", module),
           "--random_inputs", "--connection_timeout=1s"}),
      "UNAVAILABLE");
  ExpectFailure(Run({"--target=nope://x", absl::StrCat("--module=", module)}),
                "INVALID_ARGUMENT");
  ExpectFailure(Run({absl::StrCat("--module=", module)}),
                "--target is required");
  ExpectFailure(Run({TargetFlag(), absl::StrCat("--module=", module),
                     "--replicas=9", "--random_inputs"}),
                "--replicas=9 but");
}

TEST_F(TpuRunTest, ExecutionFailureEndsTheRunAndTheServerKeepsServing) {
  const std::string module = WriteHloProto(e2e::kSpinForever);
  ExpectFailure(
      Run({TargetFlag(), absl::StrCat("--module=", module),
           "--execute_warn_interval=50ms", "--execute_max_time=300ms"}),
      "DEADLINE_EXCEEDED: execution failed: TPU program took more "
      "than 0 seconds to complete.");
  // The abandoned program was stopped when tpu_run closed: the emulator
  // still runs programs for the next client.
  const std::string ok_module = WriteHloProto(e2e::kTwiceXPlusOne);
  CommandResult result = Run(
      {TargetFlag(), absl::StrCat("--module=", ok_module), "--random_inputs"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

}  // namespace
}  // namespace tpu
