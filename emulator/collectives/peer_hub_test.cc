// Two CollectiveHubs of one pod slice, linked in memory (the gRPC link is
// tested through real processes in tests/pod/pod_collectives_e2e_test.cc):
// meetings across workers, cycles across workers in the slice-wide report,
// cancellation of a participant waiting at another worker, a dead peer.

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "emulator/collectives/collective_hub.h"
#include "emulator/collectives/collective_test_util.h"
#include "emulator/collectives/peer_link.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_util::Compile;
using testing_util::Ints;
using testing_util::ModuleWithAdd;
using testing_util::RunLaunch;
using testing_util::S32;

// Hands contributions straight to the other hub, as the peer service does.
class InMemoryPeerLink : public PeerLink {
 public:
  std::vector<CollectiveHub*> hubs;
  std::atomic<bool> dead[2] = {false, false};

  int host_count() const override { return 2; }
  std::string Address(int host) const override {
    return absl::StrCat("host", host, ":8470");
  }
  absl::StatusOr<Literal> Contribute(
      int host, const tpu_emulator::Contribution& arrival,
      const std::atomic<bool>* cancelled) override {
    if (dead[host]) return Gone(host);
    return hubs[host]->ArriveFromPeer(arrival, [cancelled] {
      return cancelled != nullptr && cancelled->load();
    });
  }
  absl::Status Deliver(int host, const std::string& meeting,
                       const absl::StatusOr<Literal>& result) override {
    if (dead[host]) return Gone(host);
    return hubs[host]->DeliverFromPeer(meeting, result);
  }
  absl::Status Ping(int host) override {
    return dead[host] ? Gone(host) : absl::OkStatus();
  }
  absl::StatusOr<tpu_emulator::PeerWaitReport> LocalWaitReport(
      int host, int history) override {
    if (dead[host]) return Gone(host);
    return hubs[host]->LocalReport(history);
  }

 private:
  absl::Status Gone(int host) const {
    return absl::UnavailableError(absl::StrCat(
        "peer worker host ", host, " at ", Address(host), " is unreachable"));
  }
};

std::string TwoReplicaSum(const std::string& name) {
  return absl::StrCat("HloModule ", name, "\n", testing_util::kAdd, R"(
ENTRY e {
  p = s32[1] parameter(0)
  ROOT s = s32[1] all-reduce(p), replica_groups={}, to_apply=add
}
)");
}

class PeerHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    link_ = std::make_shared<InMemoryPeerLink>();
    for (int host = 0; host < 2; ++host) {
      CollectiveHubOptions options;
      options.cores = {2 * host, 2 * host + 1};
      options.host_id = host;
      options.report_waits_after = absl::ZeroDuration();
      options.peers = link_;
      options.peer_check_period = absl::Milliseconds(5);
      hubs_.push_back(std::make_unique<CollectiveHub>(options));
      link_->hubs.push_back(hubs_.back().get());
    }
  }

  // Waits until `core` waits for `missing` in the slice-wide report.
  tpu_emulator::WaitReport AwaitWaiting(int core, int missing) {
    tpu_emulator::WaitReport report;
    while (true) {
      report = hubs_[0]->SliceReport();
      for (const auto& wait : report.cores()) {
        if (wait.core() == core && wait.waiting_for_size() == 1 &&
            wait.waiting_for(0) == missing) {
          return report;
        }
      }
      absl::SleepFor(absl::Milliseconds(2));
    }
  }

  std::shared_ptr<InMemoryPeerLink> link_;
  std::vector<std::unique_ptr<CollectiveHub>> hubs_;
};

TEST_F(PeerHubTest, ReplicasOnTwoWorkersMeet) {
  auto executable = Compile(TwoReplicaSum("p"), 2);
  ASSERT_NE(executable, nullptr);
  const std::vector<int> devices = {1, 2};  // one core on each worker
  absl::StatusOr<Literal> first, second;
  std::thread a([&] {
    first = RunLaunch(*executable, *hubs_[0], 1, 0, devices, {S32({1}, {5})});
  });
  std::thread b([&] {
    second = RunLaunch(*executable, *hubs_[1], 2, 1, devices, {S32({1}, {7})});
  });
  a.join();
  b.join();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(Ints(*first), ElementsAre(12));
  EXPECT_THAT(Ints(*second), ElementsAre(12));
}

// f32 sums whose bits depend on the order: (1e8 + 1) rounds to 1e8.
constexpr char kFloatSum[] = R"(HloModule fsum
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  p = f32[2] parameter(0)
  ROOT s = f32[2] all-reduce(p), replica_groups={}, to_apply=add
})";

Literal F32Pair(float a, float b) {
  const float values[] = {a, b};
  return Literal::FromVector<float>(xla::F32, {2}, absl::MakeConstSpan(values));
}

// Four replicas on two workers, each assignment run on both workers' cores.
// {0,1,2,3}: the coordinator (host 0) holds replicas 0 and 1, the start of
// the fold order, and host 1 the rest: host 1 folds onto host 0's partial.
// {2,3,0,1}: host 1 holds the start, so every contribution goes to host 0.
// Both give every replica the bits of a fold in replica order.
TEST_F(PeerHubTest, FloatSumAcrossWorkersFoldsInReplicaOrder) {
  auto executable = Compile(kFloatSum, 4);
  ASSERT_NE(executable, nullptr);
  const float first[] = {1e8f, 1.0f, -1e8f, 1.0f};
  const float second[] = {3.0f, 1e8f, 1.0f, -1e8f};
  float want[2] = {first[0], second[0]};
  for (int r = 1; r < 4; ++r) {
    want[0] += first[r];
    want[1] += second[r];
  }
  ASSERT_EQ(want[0], 1.0f);
  ASSERT_EQ(want[1], 0.0f);
  for (const std::vector<int>& devices :
       {std::vector<int>{0, 1, 2, 3}, std::vector<int>{2, 3, 0, 1}}) {
    std::vector<absl::StatusOr<Literal>> results(4, Literal());
    std::vector<std::thread> threads;
    for (int r = 3; r >= 0; --r) {
      threads.emplace_back([&, r] {
        const int core = devices[r];
        results[r] = RunLaunch(*executable, *hubs_[core / 2], core, r, devices,
                               {F32Pair(first[r], second[r])});
      });
    }
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < 4; ++r) {
      ASSERT_TRUE(results[r].ok()) << r << ": " << results[r].status();
      auto data = results[r]->data<float>();
      EXPECT_EQ(data[0], want[0]) << "replica " << r << " on " << devices[r];
      EXPECT_EQ(data[1], want[1]) << "replica " << r << " on " << devices[r];
    }
  }
  // Nobody waits any more, on either worker.
  EXPECT_EQ(hubs_[0]->LocalReport().remote_waiters_size(), 0);
  const tpu_emulator::WaitReport after = hubs_[0]->SliceReport();
  for (const auto& wait : after.cores()) {
    EXPECT_NE(wait.activity(), tpu_emulator::CoreWait::WAITING) << wait.core();
  }
}

// Host 1's cores gather before they join host 0: one that arrived waits for
// its missing neighbour, which the report names.
TEST_F(PeerHubTest, SuffixWorkerWaitsForItsOwnMissingCore) {
  auto executable = Compile(kFloatSum, 4);
  ASSERT_NE(executable, nullptr);
  const std::vector<int> devices = {0, 1, 2, 3};
  std::atomic<bool> cancelled{false};
  absl::StatusOr<Literal> on2;
  std::thread a([&] {
    on2 = RunLaunch(*executable, *hubs_[1], 2, 2, devices, {F32Pair(1, 2)}, "p",
                    &cancelled);
  });
  tpu_emulator::WaitReport report = AwaitWaiting(2, 3);
  EXPECT_THAT(report.cores(2).diagnosis(),
              ElementsAre("core 3 is idle: it has not started launch 0 of p"));
  cancelled = true;
  hubs_[1]->WakeWaiters();
  a.join();
  EXPECT_EQ(on2.status().code(), absl::StatusCode::kCancelled) << on2.status();
  EXPECT_EQ(hubs_[0]->LocalReport().remote_waiters_size(), 0);
}

// Core 0 waits in X for core 2 while core 2 waits in P for core 0: both
// meetings are held by host 0, and either worker reports the cycle. Closing
// the clients releases both, the remote participant included.
TEST_F(PeerHubTest, CycleAcrossWorkersIsReportedAndCancelReleasesIt) {
  auto x = Compile(TwoReplicaSum("X"), 2);
  auto p = Compile(TwoReplicaSum("P"), 2);
  ASSERT_TRUE(x != nullptr && p != nullptr);
  const std::vector<int> devices = {0, 2};
  std::atomic<bool> cancelled{false};
  absl::StatusOr<Literal> on0, on2;
  std::thread a([&] {
    on0 = RunLaunch(*x, *hubs_[0], 0, 0, devices, {S32({1}, {1})}, "X",
                    &cancelled);
  });
  std::thread b([&] {
    on2 = RunLaunch(*p, *hubs_[1], 2, 1, devices, {S32({1}, {1})}, "P",
                    &cancelled);
  });
  AwaitWaiting(0, 2);
  tpu_emulator::WaitReport report = AwaitWaiting(2, 0);
  for (const auto& from : {report, hubs_[1]->SliceReport()}) {
    ASSERT_EQ(from.cycles_size(), 1);
    EXPECT_THAT(from.cycles(0).cores(), ElementsAre(0, 2));
  }
  ASSERT_EQ(report.cores_size(), 4);
  const tpu_emulator::CoreWait& core2 = report.cores(2);
  EXPECT_EQ(core2.core(), 2);
  EXPECT_EQ(core2.host_id(), 1);
  EXPECT_EQ(core2.program(), "P");
  EXPECT_THAT(core2.diagnosis(),
              ElementsAre("core 0 waits in X launch 0 at all-reduce s "
                          "[s32[1]]: a different program"));
  EXPECT_THAT(report.cores(0).diagnosis(),
              ElementsAre("core 2 (host 1, host1:8470) has not arrived at "
                          "this collective yet"));

  cancelled = true;
  hubs_[0]->WakeWaiters();
  hubs_[1]->WakeWaiters();
  a.join();
  b.join();
  EXPECT_EQ(on0.status().code(), absl::StatusCode::kCancelled) << on0.status();
  EXPECT_EQ(on2.status().code(), absl::StatusCode::kCancelled) << on2.status();
  // Nobody waits any more, on either worker.
  const tpu_emulator::WaitReport after = hubs_[0]->SliceReport();
  for (const auto& wait : after.cores()) {
    EXPECT_NE(wait.activity(), tpu_emulator::CoreWait::WAITING) << wait.core();
  }
  EXPECT_EQ(hubs_[0]->LocalReport().remote_waiters_size(), 0);
}

TEST_F(PeerHubTest, DeadPeerFailsTheMeetingNamingIt) {
  auto executable = Compile(TwoReplicaSum("p"), 2);
  ASSERT_NE(executable, nullptr);
  absl::StatusOr<Literal> result;
  std::thread a([&] {
    result = RunLaunch(*executable, *hubs_[0], 0, 0, {0, 2}, {S32({1}, {5})});
  });
  AwaitWaiting(0, 2);  // alive: it waits
  link_->dead[1] = true;
  a.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("all-reduce s: peer worker host 1 at host1:8470 is "
                        "unreachable"));
}

// A worker without peers cannot meet another worker's core: it says so
// instead of waiting forever.
TEST(LoneHubTest, GroupBeyondTheWorkerFailsWithoutPeers) {
  auto executable = Compile(TwoReplicaSum("p"), 2);
  ASSERT_NE(executable, nullptr);
  CollectiveHub hub(testing_util::HubOptions(2));
  absl::StatusOr<Literal> result =
      RunLaunch(*executable, hub, 0, 0, {0, 2}, {S32({1}, {5})});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("all-reduce s: its group {0,2} includes core 2, "
                        "which this worker does not serve, and it knows no "
                        "other workers: start every worker of the pod slice "
                        "with --pod_addresses="));
}

}  // namespace
}  // namespace tpu::emulator
