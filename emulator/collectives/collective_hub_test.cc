// Collectives end to end inside one process: HLO text compiled by the
// interpreter, one thread per core meeting at the hub, values checked
// exactly (floats against a reference that folds in replica order).

#include "emulator/collectives/collective_hub.h"

#include <atomic>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "emulator/collectives/collective_test_util.h"
#include "emulator/interpreter/executable.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hlo/text/hlo_parser.h"

namespace tpu::emulator {
namespace {

using interpreter::CompileOptions;
using interpreter::DeviceAssignment;
using interpreter::Executable;
using interpreter::ExecutionContext;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_util::Compile;
using testing_util::HubOptions;
using testing_util::Ints;
using testing_util::kAdd;
using testing_util::ModuleWithAdd;
using testing_util::RunLaunch;
using testing_util::RunReplicated;
using testing_util::S32;

TEST(CollectiveHubTest, AllReduceSumsEveryReplica) {
  for (int n : {2, 4, 8}) {
    std::vector<Literal> inputs;
    int32_t total = 0;
    for (int r = 0; r < n; ++r) {
      inputs.push_back(S32({2}, {r + 1, 100 * r}));
      total += r + 1;
    }
    std::vector<Literal> out = RunReplicated(
        ModuleWithAdd("p = s32[2] parameter(0)\n"
                      "ROOT a = s32[2] all-reduce(p), replica_groups={}, "
                      "to_apply=add"),
        n, inputs);
    ASSERT_EQ(out.size(), n);
    for (int r = 0; r < n; ++r) {
      EXPECT_THAT(Ints(out[r]), ElementsAre(total, 100 * n * (n - 1) / 2))
          << "replicas " << n << " replica " << r;
    }
  }
}

TEST(CollectiveHubTest, FloatAllReduceFoldsInReplicaOrder) {
  // 1e8 + 1 - 1e8 + 1 in f32 depends on the order; replica order gives
  // ((1e8 + 1) - 1e8) + 1 = 1, bit for bit on every replica.
  const std::vector<float> values = {1e8f, 1.0f, -1e8f, 1.0f};
  std::vector<Literal> inputs;
  for (float v : values) {
    inputs.push_back(
        Literal::FromVector<float>(xla::F32, {1}, absl::MakeConstSpan(&v, 1)));
  }
  std::vector<Literal> out = RunReplicated(R"(
HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  p = f32[1] parameter(0)
  ROOT a = f32[1] all-reduce(p), replica_groups={{3,2,1,0}}, to_apply=sum
})",
                                           4, inputs);
  ASSERT_EQ(out.size(), 4u);
  float expected = values[0];
  for (int r = 1; r < 4; ++r) expected = expected + values[r];
  for (const Literal& o : out) EXPECT_EQ(o.data<float>()[0], expected);
}

// Values whose f32 sum depends on the order they are added in.
float OrderSensitive(int replica, int64_t i) {
  const float scale[] = {1e8f, 1.0f, -1e8f, 0.5f};
  return scale[replica % 4] * static_cast<float>(1 + i % 13) +
         static_cast<float>(i % 5) * 0.25f;
}

TEST(CollectiveHubTest, LargeFloatAllReduceFoldsInReplicaOrder) {
  // Over 8 MiB, so the result is streamed past the caches; an odd length
  // leaves a tail shorter than a vector.
  const int64_t n = (int64_t{8} << 20) / 4 + 3;
  std::vector<Literal> inputs;
  for (int r = 0; r < 4; ++r) {
    Literal input = Literal::Uninitialized(Shape::Array(xla::F32, {n}));
    float* data = input.mutable_data<float>().data();
    for (int64_t i = 0; i < n; ++i) data[i] = OrderSensitive(r, i);
    inputs.push_back(std::move(input));
  }
  std::vector<Literal> out = RunReplicated(
      absl::StrCat(R"(
HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  p = f32[)",
                   n, R"(] parameter(0)
  ROOT a = f32[)",
                   n,
                   R"(] all-reduce(p), replica_groups={{3,1,2,0}}, to_apply=sum
})"),
      4, inputs);
  ASSERT_EQ(out.size(), 4u);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    float expected = OrderSensitive(0, i);
    for (int r = 1; r < 4; ++r) expected = expected + OrderSensitive(r, i);
    for (const Literal& o : out) {
      mismatches += std::memcmp(&o.data<float>()[i], &expected, 4) != 0;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(CollectiveHubTest, HistoryKeepsTheLast1000CollectivesOfEachCore) {
  // 1003 all-reduces in a loop: the first three fall out of the window.
  std::unique_ptr<Executable> executable =
      Compile(absl::StrCat("HloModule m\n", kAdd,
                           R"(
cond {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(1003)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = s32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  r = s32[] all-reduce(v), replica_groups={}, to_apply=add
  ROOT t = (s32[], s32[]) tuple(i2, r)
}
ENTRY main {
  p = s32[] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], s32[]) tuple(zero, p)
  w = (s32[], s32[]) while(t), condition=cond, body=body
  ROOT v = s32[] get-tuple-element(w), index=1
})"),
              2);
  ASSERT_NE(executable, nullptr);
  CollectiveHub hub(HubOptions(2));
  std::vector<absl::StatusOr<Literal>> results(2, Literal());
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      results[r] =
          RunLaunch(*executable, hub, r, r, {0, 1}, {S32({}, {r})}, "loop");
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[r].ok()) << results[r].status();
    // 0 + 1 = 1, then 1 + 1 = 2, doubling: 2^1002 wraps to 0 in s32.
    EXPECT_THAT(Ints(*results[r]), ElementsAre(0));
  }
  const tpu_emulator::WaitReport report = hub.Report(/*history=*/5000);
  ASSERT_EQ(report.cores_size(), 2);
  for (const tpu_emulator::CoreWait& core : report.cores()) {
    ASSERT_EQ(core.history_size(), 1000) << core.core();
    for (int i = 0; i < 1000; ++i) {
      const tpu_emulator::CollectiveRecord& record = core.history(i);
      EXPECT_EQ(record.sequence(), 3 + i);
      EXPECT_EQ(record.program(), "loop");
      EXPECT_EQ(record.instruction(), "r");
      EXPECT_EQ(record.kind(), "all-reduce");
      EXPECT_EQ(record.signature(), "s32[]");
      EXPECT_THAT(record.group(), ElementsAre(0, 1));
      EXPECT_TRUE(record.done());
      EXPECT_GE(record.end_unix_micros(), record.start_unix_micros());
    }
  }
  EXPECT_EQ(hub.Report(/*history=*/2).cores(0).history(1).sequence(), 1002);
}

TEST(CollectiveHubTest, CancelledWaiterStillGetsAMeetingWhoseCombineRuns) {
  CollectiveHub hub(HubOptions(2));
  std::atomic<bool> cancelled0{false};
  std::vector<std::unique_ptr<Launch>> launches;
  for (int core = 0; core < 2; ++core) {
    LaunchInfo info;
    info.core = core;
    info.client_id = 1;
    info.program = "p";
    info.fingerprint = "p";
    info.assignment = {0, 1};
    info.cancelled = core == 0 ? &cancelled0 : nullptr;
    absl::StatusOr<std::unique_ptr<Launch>> launch = hub.BeginLaunch(info);
    ASSERT_TRUE(launch.ok()) << launch.status();
    launches.push_back(*std::move(launch));
  }
  absl::Notification combining, release;
  interpreter::CollectiveCombine combine = [&](const std::vector<Literal>& all)
      -> absl::StatusOr<std::vector<Literal>> {
    combining.Notify();
    release.WaitForNotification();
    return std::vector<Literal>(all.size(), S32({1}, {42}));
  };
  auto request = [](int rank) {
    interpreter::CollectiveRequest r;
    r.computation = "e";
    r.instruction = "ar";
    r.kind = "all-reduce";
    r.devices = {0, 1};
    r.rank = rank;
    r.signature = "s32[1]";
    return r;
  };
  absl::StatusOr<Literal> out0 = Literal();
  std::thread waiter([&] {
    out0 = launches[0]->Exchange(request(0), S32({1}, {1}), combine);
  });
  // Core 0 waits before core 1 arrives and runs the combine.
  while (hub.Report().cores(0).activity() != tpu_emulator::CoreWait::WAITING) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  std::thread last([&] {
    EXPECT_TRUE(launches[1]->Exchange(request(1), S32({1}, {2}), combine).ok());
  });
  combining.WaitForNotification();
  // Core 0's client goes away while the combine runs: everyone arrived, so
  // core 0 still gets its output (and the combine's inputs stay intact).
  cancelled0 = true;
  hub.WakeWaiters();
  absl::SleepFor(absl::Milliseconds(200));  // lets core 0 see the flag
  release.Notify();
  waiter.join();
  last.join();
  ASSERT_TRUE(out0.ok()) << out0.status();
  EXPECT_THAT(Ints(*out0), ElementsAre(42));
}

TEST(CollectiveHubTest, ReplicaGroupsExplicitAndIota) {
  std::vector<Literal> inputs;
  for (int r = 0; r < 4; ++r) inputs.push_back(S32({1}, {1 << r}));
  for (const char* groups : {"{{0,1},{2,3}}", "[2,2]<=[4]"}) {
    std::vector<Literal> out =
        RunReplicated(ModuleWithAdd(absl::StrCat(
                          "p = s32[1] parameter(0)\n"
                          "ROOT a = s32[1] all-reduce(p), replica_groups=",
                          groups, ", to_apply=add")),
                      4, inputs);
    ASSERT_EQ(out.size(), 4u) << groups;
    EXPECT_THAT(Ints(out[0]), ElementsAre(3)) << groups;
    EXPECT_THAT(Ints(out[1]), ElementsAre(3)) << groups;
    EXPECT_THAT(Ints(out[2]), ElementsAre(12)) << groups;
    EXPECT_THAT(Ints(out[3]), ElementsAre(12)) << groups;
  }
  // [2,2]<=[2,2]T(1,0) is {{0,2},{1,3}}.
  std::vector<Literal> out = RunReplicated(
      ModuleWithAdd("p = s32[1] parameter(0)\n"
                    "ROOT a = s32[1] all-reduce(p), "
                    "replica_groups=[2,2]<=[2,2]T(1,0), to_apply=add"),
      4, inputs);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_THAT(Ints(out[0]), ElementsAre(5));
  EXPECT_THAT(Ints(out[1]), ElementsAre(10));
}

TEST(CollectiveHubTest, AllGatherConcatenatesInGroupOrder) {
  std::vector<Literal> inputs;
  for (int r = 0; r < 2; ++r) inputs.push_back(S32({2, 1}, {r, 10 + r}));
  std::vector<Literal> out = RunReplicated(
      ModuleWithAdd("p = s32[2,1] parameter(0)\n"
                    "ROOT g = s32[2,2] all-gather(p), dimensions={1}, "
                    "replica_groups={{1,0}}"),
      2, inputs);
  ASSERT_EQ(out.size(), 2u);
  // Group order {1,0}: replica 1's column first.
  for (const Literal& o : out) EXPECT_THAT(Ints(o), ElementsAre(1, 0, 11, 10));
}

TEST(CollectiveHubTest, ReduceScatterGivesEachReplicaItsPart) {
  std::vector<Literal> inputs;
  for (int r = 0; r < 2; ++r) inputs.push_back(S32({4}, {1, 2, 3, 4 * r}));
  std::vector<Literal> out = RunReplicated(
      ModuleWithAdd("p = s32[4] parameter(0)\n"
                    "ROOT s = s32[2] reduce-scatter(p), dimensions={0}, "
                    "replica_groups={}, to_apply=add"),
      2, inputs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_THAT(Ints(out[0]), ElementsAre(2, 4));
  EXPECT_THAT(Ints(out[1]), ElementsAre(6, 4));
}

TEST(CollectiveHubTest, AllToAllExchangesChunks) {
  std::vector<Literal> inputs;
  for (int r = 0; r < 2; ++r) {
    inputs.push_back(S32({4}, {10 * r, 10 * r + 1, 10 * r + 2, 10 * r + 3}));
  }
  std::vector<Literal> out = RunReplicated(
      ModuleWithAdd("p = s32[4] parameter(0)\n"
                    "ROOT t = s32[4] all-to-all(p), dimensions={0}, "
                    "replica_groups={}"),
      2, inputs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_THAT(Ints(out[0]), ElementsAre(0, 1, 10, 11));
  EXPECT_THAT(Ints(out[1]), ElementsAre(2, 3, 12, 13));
}

TEST(CollectiveHubTest, CollectivePermuteCycleAndZerosForNoSource) {
  std::vector<Literal> inputs;
  for (int r = 0; r < 4; ++r) inputs.push_back(S32({1}, {r + 1}));
  // 0->1, 1->0 (a cycle), 2->2 (self); nobody sends to 3.
  std::vector<Literal> out =
      RunReplicated(ModuleWithAdd("p = s32[1] parameter(0)\n"
                                  "ROOT c = s32[1] collective-permute(p), "
                                  "source_target_pairs={{0,1},{1,0},{2,2}}"),
                    4, inputs);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_THAT(Ints(out[0]), ElementsAre(2));
  EXPECT_THAT(Ints(out[1]), ElementsAre(1));
  EXPECT_THAT(Ints(out[2]), ElementsAre(3));
  EXPECT_THAT(Ints(out[3]), ElementsAre(0));
}

TEST(CollectiveHubTest, AllReduceInsideALoopMeetsPerIteration) {
  std::vector<Literal> inputs;
  for (int r = 0; r < 4; ++r) inputs.push_back(S32({}, {1}));
  std::vector<Literal> out =
      RunReplicated(absl::StrCat("HloModule m\n", kAdd, R"(
cond {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(100)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = s32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  r = s32[] all-reduce(v), replica_groups={}, to_apply=add
  m = s32[] constant(3)
  v2 = s32[] remainder(r, m)
  ROOT t = (s32[], s32[]) tuple(i2, v2)
}
ENTRY e {
  p = s32[] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], s32[]) tuple(zero, p)
  w = (s32[], s32[]) while(t), condition=cond, body=body
  ROOT v = s32[] get-tuple-element(w), index=1
})"),
                    4, inputs);
  ASSERT_EQ(out.size(), 4u);
  // v -> (4v) mod 3 each step, from 1: 1, 1, ... (4 mod 3 = 1).
  for (const Literal& o : out) EXPECT_THAT(Ints(o), ElementsAre(1));
}

TEST(CollectiveHubTest, InvalidGroupsFailAtCompileNamingTheInstruction) {
  absl::StatusOr<xla::HloModuleProto> module =
      hlo::ParseHloModule(ModuleWithAdd(
          "p = s32[1] parameter(0)\n"
          "ROOT a = s32[1] all-reduce(p), replica_groups={{0,1},{1,2}}, "
          "to_apply=add"));
  ASSERT_TRUE(module.ok()) << module.status();
  CompileOptions options;
  options.num_replicas = 4;
  absl::StatusOr<std::unique_ptr<Executable>> executable =
      Executable::Compile(*module, options);
  ASSERT_FALSE(executable.ok());
  EXPECT_EQ(executable.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(executable.status().message(), HasSubstr("name replica 1 twice"));
  EXPECT_THAT(executable.status().message(), HasSubstr("a"));
}

// A replica that never arrives leaves the others waiting; the report names
// who waits for whom, and cancelling the client releases the waiter.
TEST(CollectiveHubTest, MissingReplicaIsReportedUntilCancelled) {
  std::unique_ptr<Executable> executable =
      Compile(ModuleWithAdd("p = s32[1] parameter(0)\n"
                            "ROOT a = s32[1] all-reduce(p), replica_groups={}, "
                            "to_apply=add"),
              2);
  ASSERT_NE(executable, nullptr);
  CollectiveHub hub(HubOptions(2));
  std::atomic<bool> cancelled{false};
  absl::StatusOr<Literal> result;
  std::thread waiter([&] {
    result = RunLaunch(*executable, hub, 0, 0, {0, 1}, {S32({1}, {1})}, "p",
                       &cancelled);
  });
  tpu_emulator::WaitReport report;
  while (true) {
    report = hub.Report(/*history=*/5);
    if (report.cores(0).activity() == tpu_emulator::CoreWait::WAITING) break;
    absl::SleepFor(absl::Milliseconds(1));
  }
  const tpu_emulator::CoreWait& core0 = report.cores(0);
  EXPECT_EQ(core0.instruction(), "a");
  EXPECT_EQ(core0.kind(), "all-reduce");
  EXPECT_EQ(core0.signature(), "s32[1]");
  EXPECT_THAT(core0.waiting_for(), ElementsAre(1));
  ASSERT_EQ(core0.diagnosis_size(), 1);
  EXPECT_THAT(core0.diagnosis(0), HasSubstr("core 1 is idle"));
  ASSERT_EQ(core0.history_size(), 1);
  EXPECT_FALSE(core0.history(0).done());
  EXPECT_EQ(report.cores(1).activity(), tpu_emulator::CoreWait::IDLE);
  EXPECT_EQ(report.cycles_size(), 0);
  cancelled = true;
  hub.WakeWaiters();
  waiter.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(hub.Report().cores(0).activity(), tpu_emulator::CoreWait::IDLE);
}

// Two programs launched in opposite orders on two cores: each core waits in
// its first program for the other, which waits in the other program.
TEST(CollectiveHubTest, OppositeLaunchOrdersFormAReportedCycle) {
  const std::string text = ModuleWithAdd(
      "p = s32[1] parameter(0)\n"
      "ROOT a = s32[1] all-reduce(p), replica_groups={}, to_apply=add");
  std::unique_ptr<Executable> executable = Compile(text, 2);
  ASSERT_NE(executable, nullptr);
  CollectiveHub hub(HubOptions(2));
  std::atomic<bool> cancelled{false};
  absl::StatusOr<Literal> r0, r1;
  std::thread core0([&] {
    r0 = RunLaunch(*executable, hub, 0, 0, {0, 1}, {S32({1}, {1})}, "P",
                   &cancelled);
  });
  std::thread core1([&] {
    r1 = RunLaunch(*executable, hub, 1, 1, {0, 1}, {S32({1}, {1})}, "Q",
                   &cancelled);
  });
  tpu_emulator::WaitReport report;
  while (true) {
    report = hub.Report();
    if (report.cycles_size() > 0) break;
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(report.cycles_size(), 1);
  EXPECT_THAT(report.cycles(0).cores(), ElementsAre(0, 1));
  EXPECT_THAT(report.cores(0).diagnosis(0),
              HasSubstr("core 1 waits in Q launch 0 at all-reduce a"));
  EXPECT_THAT(report.cores(0).diagnosis(0), HasSubstr("a different program"));
  cancelled = true;
  hub.WakeWaiters();
  core0.join();
  core1.join();
  EXPECT_EQ(r0.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(r1.status().code(), absl::StatusCode::kCancelled);
}

TEST(CollectiveHubTest, LaunchBarrierFailsMismatchedLaunches) {
  const std::string text = ModuleWithAdd(
      "p = s32[1] parameter(0)\n"
      "ROOT a = s32[1] all-reduce(p), replica_groups={}, to_apply=add");
  std::unique_ptr<Executable> executable = Compile(text, 2);
  ASSERT_NE(executable, nullptr);
  CollectiveHubOptions options = HubOptions(2);
  options.launch_barrier = true;
  CollectiveHub hub(options);
  absl::StatusOr<Literal> r0, r1;
  std::thread core0([&] {
    r0 = RunLaunch(*executable, hub, 0, 0, {0, 1}, {S32({1}, {1})}, "P");
  });
  std::thread core1([&] {
    r1 = RunLaunch(*executable, hub, 1, 1, {0, 1}, {S32({1}, {1})}, "Q");
  });
  core0.join();
  core1.join();
  for (const auto* r : {&r0, &r1}) {
    EXPECT_EQ(r->status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(r->status().message(),
                HasSubstr("core 0 started P, core 1 started Q"));
  }
}

}  // namespace
}  // namespace tpu::emulator
