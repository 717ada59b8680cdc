// Record and replay through real tpu_emulator processes: a session recorded
// with record:// replays against a fresh worker with every result identical;
// a changed program, or a worker with other settings, is reported at its
// first differing operation; --record_dir captures an unmodified client's
// session; a damaged log is named with its offset.

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "driver/driver_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/recording.h"
#include "tests/e2e/programs.h"
#include "tools/lib/subprocess.h"

namespace tpu {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const float kInput[4] = {1, 2, 3, 4};

xla::ShapeProto F32x4() {
  xla::ShapeProto shape;
  shape.set_element_type(xla::F32);
  shape.add_dimensions(4);
  shape.mutable_layout()->add_minor_to_major(0);
  return shape;
}

// compile, alloc x2, transfer_to, load, execute, transfer_from, dealloc x2,
// unload: x * 2 + 1 on core 0. Returns what the transfer_from read.
std::vector<float> RunSession(const std::string& address) {
  auto opened = driver::DriverRegistry::Open(address);
  EXPECT_TRUE(opened.ok()) << opened.status();
  if (!opened.ok()) return {};
  driver::TpuDriver& d = **opened;
  xla::HloProto program;
  *program.mutable_hlo_module() = e2e::ParseProgram(e2e::kTwiceXPlusOne);
  auto compiled = d.CompileProgram(program, 1, {});
  auto input = d.Allocate(0, tpu_driver::HBM, F32x4(), {});
  auto output = d.Allocate(0, tpu_driver::HBM, F32x4(), {});
  auto written = d.TransferToDevice(kInput, input.get(), {});
  auto loaded = d.LoadProgram(0, compiled.get(), {});
  xla::DeviceAssignmentProto assignment;
  assignment.set_replica_count(1);
  assignment.set_computation_count(1);
  assignment.add_computation_devices()->add_replica_device_ids(0);
  auto executed = d.ExecuteProgram(loaded.get(), {input.get()}, {output.get()},
                                   assignment, {written.get()});
  std::vector<float> result(4, 0.0f);
  auto read =
      d.TransferFromDevice(output.get(), result.data(), {executed.get()});
  EXPECT_TRUE(read->Await().ok()) << read->Await();
  EXPECT_TRUE(d.Deallocate(std::move(input), {})->Await().ok());
  EXPECT_TRUE(d.Deallocate(std::move(output), {})->Await().ok());
  EXPECT_TRUE(d.UnloadProgram(std::move(loaded), {})->Await().ok());
  return result;
}

class RecordReplayE2ETest : public ::testing::Test {
 protected:
  std::unique_ptr<tools::ServerProcess> StartWorker(
      const std::string& name, std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {
        tools::RunfilePath("tools/tpu_emulator/tpu_emulator"), "--port=0",
        "--compute_threads=2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto worker = tools::ServerProcess::Start(argv, Dir(), name);
    EXPECT_TRUE(worker.ok()) << worker.status();
    return worker.ok() ? *std::move(worker) : nullptr;
  }

  std::string Dir() {
    const std::string dir = absl::StrCat(
        tools::ScratchDir(), "/",
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir);
    return dir;
  }

  // Records RunSession through record:// into Dir()/session.log.
  std::string RecordSession() {
    auto worker = StartWorker("recorded");
    if (worker == nullptr) return "";
    const std::string log = Dir() + "/session.log";
    std::vector<float> result = RunSession(absl::StrCat(
        "record://|file=", log, "|worker=grpc://", worker->address()));
    EXPECT_EQ(result, (std::vector<float>{3, 5, 7, 9}));
    return log;
  }

  tools::CommandResult Replay(const std::string& log, const std::string& target,
                              std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {
        tools::RunfilePath("tools/tpu_replay/tpu_replay"),
        absl::StrCat("--log=", log), absl::StrCat("--target=", target)};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto run = tools::RunCommand(argv, absl::Seconds(120));
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : tools::CommandResult();
  }
};

TEST_F(RecordReplayE2ETest, RecordedSessionReplaysIdenticallyOnAFreshWorker) {
  const std::string log = RecordSession();
  ASSERT_FALSE(log.empty());
  auto fresh = StartWorker("fresh");
  ASSERT_NE(fresh, nullptr);
  tools::CommandResult run =
      Replay(log, absl::StrCat("grpc://", fresh->address()));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out,
              HasSubstr(absl::StrCat("replayed 10 of 10 operations from ", log,
                                     ": 0 failed\n")));
  EXPECT_THAT(run.out, HasSubstr("every result matches the recording"));
  // The in-process emulator gives the same results too.
  tools::CommandResult local = Replay(log, "local://");
  EXPECT_EQ(local.exit_code, 0) << local.out << local.err;
  EXPECT_THAT(local.out, HasSubstr("every result matches the recording"));
}

TEST_F(RecordReplayE2ETest, ChangedConstantIsReportedAtTheFirstDifference) {
  const std::string log = RecordSession();
  ASSERT_FALSE(log.empty());
  // The same session with the program's constant 1 changed to 2.
  const std::string edited = Dir() + "/edited.log";
  {
    auto reader = RecordReader::Open(log);
    ASSERT_TRUE(reader.ok()) << reader.status();
    auto writer = RecordWriter::Create(edited);
    ASSERT_TRUE(writer.ok()) << writer.status();
    int constants = 0;
    while (true) {
      auto entry = (*reader)->NextEntry();
      ASSERT_TRUE(entry.ok()) << entry.status();
      if (!entry->has_value()) break;
      if ((*entry)->has_compile()) {
        auto* module = (*entry)
                           ->mutable_compile()
                           ->mutable_hlo_program()
                           ->mutable_hlo_module();
        for (auto& computation : *module->mutable_computations()) {
          for (auto& instruction : *computation.mutable_instructions()) {
            if (instruction.opcode() != "constant") continue;
            ASSERT_EQ(instruction.literal().f32s(0), 1.0f);
            instruction.mutable_literal()->set_f32s(0, 2.0f);
            ++constants;
          }
        }
      }
      ASSERT_TRUE((*writer)->Append(**entry).ok());
    }
    ASSERT_EQ(constants, 1);
  }
  fs::copy_file(absl::StrCat(log, kResultsSuffix),
                absl::StrCat(edited, kResultsSuffix));
  auto fresh = StartWorker("fresh");
  ASSERT_NE(fresh, nullptr);
  tools::CommandResult run =
      Replay(edited, absl::StrCat("grpc://", fresh->address()));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr(": 0 failed\n"));
  // 3 5 7 9 became 4 6 8 10: 00 00 40 40 -> 00 00 80 40, ...
  EXPECT_THAT(
      run.out,
      HasSubstr("first difference from the recording: operation #6 (id 7, "
                "transfer_from): transfer_from bytes differ: 5 of 16 bytes, "
                "the first at byte 2; from byte 0 recorded 00 00 40 40 00 00 "
                "a0 40, replayed 00 00 80 40 00 00 c0 40\n"));
}

TEST_F(RecordReplayE2ETest, WorkerWithLessMemoryFailsAtTheFirstAllocation) {
  const std::string log = RecordSession();
  ASSERT_FALSE(log.empty());
  auto small = StartWorker("small", {"--hbm_bytes_per_core=8"});
  ASSERT_NE(small, nullptr);
  const std::string target = absl::StrCat("grpc://", small->address());
  tools::CommandResult run = Replay(log, target);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("operation #1 (id 2, alloc) failed: "
                                 "RESOURCE_EXHAUSTED: "));
  EXPECT_THAT(run.out,
              HasSubstr("first difference from the recording: operation #1 "
                        "(id 2, alloc): status differs: recorded OK, "
                        "replayed RESOURCE_EXHAUSTED: "));

  tools::CommandResult stopped =
      Replay(log, target, {"--stop_at_first_failure"});
  EXPECT_EQ(stopped.exit_code, 1) << stopped.out << stopped.err;
  EXPECT_THAT(stopped.out,
              HasSubstr(absl::StrCat("replayed 2 of 10 operations from ", log,
                                     ": 1 failed (stopped at the first "
                                     "failure)\n")));
  EXPECT_THAT(stopped.out, Not(HasSubstr("#2 ")));
}

TEST_F(RecordReplayE2ETest, FaultRulesTurnAReplayIntoAReproduction) {
  const std::string log = RecordSession();
  ASSERT_FALSE(log.empty());
  auto fresh = StartWorker("faulted");
  ASSERT_NE(fresh, nullptr);
  const std::string target = absl::StrCat("grpc://", fresh->address());
  tools::CommandResult run =
      Replay(log, target, {"--fault=transfer_from fail=DATA_LOSS:bit flip"});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.out,
              HasSubstr(absl::StrCat("fault rule on ", target,
                                     ": transfer_from fail=DATA_LOSS:bit "
                                     "flip\n")));
  EXPECT_THAT(run.out, HasSubstr("transfer_from) failed: DATA_LOSS: bit flip"));
  EXPECT_THAT(run.out, HasSubstr("first difference from the recording: "
                                 "operation #6 (id 7, transfer_from): status "
                                 "differs: recorded OK, replayed DATA_LOSS: "
                                 "bit flip"));

  tools::CommandResult bad = Replay(log, target, {"--fault=alloc explode"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("tpu_replay: error: INVALID_ARGUMENT: "
                                 "--fault='alloc explode' on "));
  tools::CommandResult local = Replay(log, "local://", {"--fault=alloc hang"});
  EXPECT_EQ(local.exit_code, 2) << local.out << local.err;
  EXPECT_THAT(local.err, HasSubstr("--fault needs a grpc:// target"));
}

TEST_F(RecordReplayE2ETest, RecordDirCapturesAnUnmodifiedClient) {
  const std::string dir = Dir() + "/sessions";
  fs::create_directories(dir);
  {
    auto recording = StartWorker("recording", {"--record_dir=" + dir});
    ASSERT_NE(recording, nullptr);
    for (int session = 0; session < 2; ++session) {
      std::vector<float> result =
          RunSession(absl::StrCat("grpc://", recording->address()));
      EXPECT_EQ(result, (std::vector<float>{3, 5, 7, 9}));
    }
  }
  std::vector<std::string> logs;
  for (const auto& file : fs::directory_iterator(dir)) {
    if (file.path().extension() == ".log") logs.push_back(file.path());
  }
  std::sort(logs.begin(), logs.end());
  ASSERT_EQ(logs.size(), 2u);  // one per client session
  EXPECT_THAT(logs[0], HasSubstr("_session1.log"));
  EXPECT_THAT(logs[1], HasSubstr("_session2.log"));
  auto fresh = StartWorker("fresh");
  ASSERT_NE(fresh, nullptr);
  for (const std::string& log : logs) {
    ASSERT_TRUE(fs::exists(absl::StrCat(log, kResultsSuffix)));
    tools::CommandResult run =
        Replay(log, absl::StrCat("grpc://", fresh->address()));
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_THAT(run.out, HasSubstr("replayed 10 of 10 operations"));
    EXPECT_THAT(run.out, HasSubstr("every result matches the recording"));
  }
}

// A recorded failure is part of the expected behaviour: the same failure on
// replay matches, and its absence is a difference.
TEST_F(RecordReplayE2ETest, RecordedFailuresAreComparedToo) {
  const std::string log = Dir() + "/failing.log";
  {
    auto small = StartWorker("small", {"--hbm_bytes_per_core=8"});
    ASSERT_NE(small, nullptr);
    auto opened = driver::DriverRegistry::Open(absl::StrCat(
        "record://|file=", log, "|worker=grpc://", small->address()));
    ASSERT_TRUE(opened.ok()) << opened.status();
    auto too_big = (*opened)->Allocate(0, tpu_driver::HBM, 16, {});
    EXPECT_EQ(too_big->OnReady()->Await().code(),
              absl::StatusCode::kResourceExhausted);
    auto fits = (*opened)->Allocate(0, tpu_driver::HBM, 4, {});
    EXPECT_TRUE(fits->OnReady()->Await().ok());
    EXPECT_TRUE((*opened)->Deallocate(std::move(fits), {})->Await().ok());
  }
  auto same = StartWorker("same", {"--hbm_bytes_per_core=8"});
  ASSERT_NE(same, nullptr);
  tools::CommandResult run =
      Replay(log, absl::StrCat("grpc://", same->address()));
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("operation #0 (id 1, alloc) failed: "
                                 "RESOURCE_EXHAUSTED: "));
  EXPECT_THAT(run.out, HasSubstr(": 1 failed\n"));
  EXPECT_THAT(run.out, HasSubstr("every result matches the recording"));

  auto larger = StartWorker("larger");
  ASSERT_NE(larger, nullptr);
  tools::CommandResult fixed =
      Replay(log, absl::StrCat("grpc://", larger->address()));
  EXPECT_EQ(fixed.exit_code, 1) << fixed.out << fixed.err;
  EXPECT_THAT(fixed.out,
              HasSubstr("first difference from the recording: operation #0 "
                        "(id 1, alloc): status differs: recorded "
                        "RESOURCE_EXHAUSTED: "));
  EXPECT_THAT(fixed.out, HasSubstr(", replayed OK\n"));
}

// The README's commands: tpu_run (TpuClient) records through record://,
// and the recording replays identically.
TEST_F(RecordReplayE2ETest, TpuRunRecordsThroughTheRecordScheme) {
  auto worker = StartWorker("recorded");
  ASSERT_NE(worker, nullptr);
  const std::string module = Dir() + "/twice.hlo";
  {
    std::ofstream out(module);
    out << e2e::kTwiceXPlusOne;
  }
  const std::string log = Dir() + "/tpu_run.log";
  auto run =
      tools::RunCommand({tools::RunfilePath("tools/tpu_run/tpu_run"),
                         absl::StrCat("--target=record://|file=", log,
                                      "|worker=grpc://", worker->address()),
                         absl::StrCat("--module=", module), "--random_inputs"},
                        absl::Seconds(120));
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->exit_code, 0) << run->out << run->err;
  auto fresh = StartWorker("fresh");
  ASSERT_NE(fresh, nullptr);
  tools::CommandResult replay =
      Replay(log, absl::StrCat("grpc://", fresh->address()));
  EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_THAT(replay.out, HasSubstr(": 0 failed\n"));
  EXPECT_THAT(replay.out, HasSubstr("every result matches the recording"));
}

TEST_F(RecordReplayE2ETest, WorkerRefusesARecordDirThatIsNotThere) {
  const std::string missing = Dir() + "/no_such_dir";
  auto run =
      tools::RunCommand({tools::RunfilePath("tools/tpu_emulator/tpu_emulator"),
                         "--port=0", "--record_dir=" + missing},
                        absl::Seconds(60));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 2);
  EXPECT_EQ(
      run->err,
      absl::StrCat("tpu_emulator: INVALID_ARGUMENT: --record_dir=", missing,
                   " is not a writable directory; create it first "
                   "(mkdir -p ",
                   missing, ").\n"));
}

TEST_F(RecordReplayE2ETest, DamagedLogIsNamedWithItsOffset) {
  const std::string log = RecordSession();
  ASSERT_FALSE(log.empty());
  const std::string bytes = tools::ReadFileOrEmpty(log);
  ASSERT_GT(bytes.size(), 8u);
  uint64_t first = 0;
  memcpy(&first, bytes.data(), sizeof(first));
  const size_t cut = sizeof(first) + first;
  const std::string damaged = Dir() + "/damaged.log";
  {
    std::ofstream out(damaged, std::ios::binary);
    out << bytes.substr(0, cut) << bytes.substr(cut, 5);
  }
  tools::CommandResult run = Replay(damaged, "local://");
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  EXPECT_EQ(run.err,
            absl::StrCat("tpu_replay: error: DATA_LOSS: ", damaged,
                         " is truncated: the record at byte offset ", cut,
                         " has only 5 of the 8 bytes of its length. "
                         "The recording was cut short (the recording "
                         "process died while writing?); the records "
                         "before that offset are intact.\n"));
}

}  // namespace
}  // namespace tpu
