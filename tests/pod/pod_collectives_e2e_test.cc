// Collectives across the workers of a pod slice, through real tpu_emulator
// processes: two workers of four cores each (--pod_hosts=2,
// --pod_addresses) used as grpc+pod://, compared bit for bit with one worker
// of eight cores; a dead peer fails the collective with UNAVAILABLE naming
// it; any worker's wait report shows the whole slice; tpu_run runs a
// collective program on grpc://, local:// and grpc+pod://.

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/tpu_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_executable.h"
#include "driver/driver_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hlo/literal.h"
#include "hlo/text/hlo_parser.h"
#include "tests/e2e/driver_launches.h"
#include "tests/pod/loopback_slice.h"
#include "tools/lib/ports.h"
#include "tools/lib/subprocess.h"
#include "tools/tpu_run/npy.h"

namespace tpu {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using tools::RunfilePath;
using tools::ScratchDir;
using tools::ServerProcess;

constexpr int kReplicas = 8;

// One data-parallel training step of a two-layer MLP: each replica computes
// the gradient of a squared error on its own batch, the gradients are summed
// across replicas (one variadic all-reduce), and every replica applies the
// same update. Outputs the new parameters.
constexpr char kTrainingStep[] = R"(
HloModule mlp_training_step
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY step {
  w1 = f32[3,5] parameter(0)
  w2 = f32[5,2] parameter(1)
  x = f32[4,3] parameter(2)
  y = f32[4,2] parameter(3)
  z = f32[4,5] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h = f32[4,5] tanh(z)
  out = f32[4,2] dot(h, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d_out = f32[4,2] subtract(out, y)
  g2 = f32[5,2] dot(h, d_out), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  dh = f32[4,5] dot(d_out, w2), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  one = f32[] constant(1)
  ones = f32[4,5] broadcast(one), dimensions={}
  hh = f32[4,5] multiply(h, h)
  slope = f32[4,5] subtract(ones, hh)
  dz = f32[4,5] multiply(dh, slope)
  g1 = f32[3,5] dot(x, dz), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  sums = (f32[3,5], f32[5,2]) all-reduce(g1, g2), replica_groups={}, to_apply=add
  s1 = f32[3,5] get-tuple-element(sums), index=0
  s2 = f32[5,2] get-tuple-element(sums), index=1
  rate = f32[] constant(0.0123)
  r1 = f32[3,5] broadcast(rate), dimensions={}
  r2 = f32[5,2] broadcast(rate), dimensions={}
  u1 = f32[3,5] multiply(s1, r1)
  u2 = f32[5,2] multiply(s2, r2)
  n1 = f32[3,5] subtract(w1, u1)
  n2 = f32[5,2] subtract(w2, u2)
  ROOT t = (f32[3,5], f32[5,2]) tuple(n1, n2)
}
)";

// Every other collective, with groups that cross the two workers (cores
// 0-3 on host 0, 4-7 on host 1). Input p = s32[8] with p[i] = 10 r + i.
constexpr char kEveryCollective[] = R"(
HloModule every_collective
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY e {
  p = s32[8] parameter(0)
  id = u32[] replica-id()
  ids = s32[] convert(id)
  one = s32[1] reshape(ids)
  gathered = s32[8] all-gather(one), dimensions={0}, replica_groups={}
  scattered = s32[1] reduce-scatter(p), dimensions={0}, replica_groups={}, to_apply=add
  exchanged = s32[8] all-to-all(p), dimensions={0}, replica_groups={}
  shifted = s32[1] collective-permute(one), source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}
  pairs = s32[8] all-reduce(p), replica_groups={{0,4},{1,5},{2,6},{3,7}}, to_apply=add
  ROOT t = (s32[8], s32[1], s32[8], s32[1], s32[8]) tuple(gathered, scattered, exchanged, shifted, pairs)
}
)";

// Replicas 0 and 1 (placed on cores 0 and 4) meet at one all-reduce.
constexpr char kTwoReplicaSum[] = R"(
HloModule two_replica_sum
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY e {
  p = s32[1] parameter(0)
  ROOT s = s32[1] all-reduce(p), replica_groups={}, to_apply=add
}
)";

Literal S32(std::vector<int64_t> dims, std::vector<int32_t> values) {
  return Literal::FromVector<int32_t>(xla::S32, std::move(dims), values);
}

// Deterministic, distinct per replica and element, not round numbers.
Literal F32Pattern(std::vector<int64_t> dims, int seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> values;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t h = (static_cast<uint32_t>(seed) * 2654435761u) ^
                       (static_cast<uint32_t>(i + 1) * 40503u);
    values.push_back(static_cast<float>(h % 2000) / 1000.0f - 1.0f);
  }
  return Literal::FromVector<float>(xla::F32, std::move(dims), values);
}

std::string Bits(const Literal& literal) {
  return std::string(static_cast<const char*>(literal.untyped_data()),
                     literal.size_bytes());
}

class PodCollectivesE2ETest : public ::testing::Test {
 protected:
  std::string Name() const {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  // Two workers of 2 chips x 2 cores, hosts 0 and 1 of one slice.
  void StartSlice() {
    auto slice = tests::StartLoopbackSlice(2, Name());
    ASSERT_TRUE(slice.ok()) << slice.status();
    slice_ = *std::move(slice);
  }

  // One worker of 4 chips x 2 cores.
  void StartSingle() {
    auto worker = ServerProcess::Start(
        {RunfilePath("tools/tpu_emulator/tpu_emulator"), "--port=0",
         "--chips=4", "--cores_per_chip=2", "--compute_threads=2"},
        ScratchDir(), absl::StrCat(Name(), "_single"));
    ASSERT_TRUE(worker.ok()) << worker.status();
    single_ = *std::move(worker);
  }

  std::string SliceTarget() const {
    return absl::StrCat("grpc+pod://", slice_[0]->address(), ",",
                        slice_[1]->address());
  }
  std::string SingleTarget() const {
    return absl::StrCat("grpc://", single_->address());
  }

  // Runs `hlo` on 8 replicas with `inputs[r]` for replica r; returns each
  // replica's outputs.
  std::vector<std::vector<Literal>> Run(
      const std::string& target, const std::string& hlo,
      const std::vector<std::vector<Literal>>& inputs) {
    std::vector<std::vector<Literal>> outputs;
    auto client = client::TpuClient::Get(target);
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return outputs;
    auto module = hlo::ParseHloModule(hlo);
    EXPECT_TRUE(module.ok()) << module.status();
    if (!module.ok()) return outputs;
    client::CompileOptions options;
    options.num_replicas = kReplicas;
    auto executable = client::TpuExecutable::Compile(*module, options, *client);
    EXPECT_TRUE(executable.ok()) << executable.status();
    if (!executable.ok()) return outputs;
    std::vector<std::unique_ptr<client::TpuBuffer>> buffers;
    std::vector<std::vector<client::TpuBuffer*>> arguments(kReplicas);
    for (int r = 0; r < kReplicas; ++r) {
      for (const Literal& input : inputs[r]) {
        auto buffer = client::TpuBuffer::FromLiteral(input, *client, r);
        EXPECT_TRUE(buffer.ok()) << buffer.status();
        if (!buffer.ok()) return outputs;
        buffers.push_back(*std::move(buffer));
        arguments[r].push_back(buffers.back().get());
      }
    }
    auto results = (*executable)->ExecutePerReplica(arguments);
    EXPECT_TRUE(results.ok()) << results.status();
    if (!results.ok()) return outputs;
    for (int r = 0; r < kReplicas; ++r) {
      outputs.emplace_back();
      for (auto& buffer : (*results)[r]) {
        auto literal = buffer->ToLiteral();
        EXPECT_TRUE(literal.ok()) << literal.status();
        if (literal.ok()) outputs.back().push_back(*std::move(literal));
      }
    }
    return outputs;
  }

  // Three training steps from the same start, each replica on its own
  // batch; returns every replica's final parameters.
  std::vector<std::vector<Literal>> Train(const std::string& target) {
    std::vector<Literal> params = {F32Pattern({3, 5}, 1),
                                   F32Pattern({5, 2}, 2)};
    std::vector<std::vector<Literal>> outputs;
    for (int step = 0; step < 3; ++step) {
      std::vector<std::vector<Literal>> inputs;
      for (int r = 0; r < kReplicas; ++r) {
        inputs.push_back({params[0], params[1],
                          F32Pattern({4, 3}, 100 + 10 * step + r),
                          F32Pattern({4, 2}, 200 + 10 * step + r)});
      }
      outputs = Run(target, kTrainingStep, inputs);
      if (outputs.size() != kReplicas || outputs[0].size() != 2) return {};
      params = {outputs[0][0], outputs[0][1]};
    }
    return outputs;
  }

  std::vector<std::unique_ptr<ServerProcess>> slice_;
  std::unique_ptr<ServerProcess> single_;
};

TEST_F(PodCollectivesE2ETest, TrainingStepIsBitIdenticalOnOneWorkerAndSlice) {
  StartSingle();
  StartSlice();
  std::vector<std::vector<Literal>> single = Train(SingleTarget());
  std::vector<std::vector<Literal>> slice = Train(SliceTarget());
  ASSERT_EQ(single.size(), kReplicas);
  ASSERT_EQ(slice.size(), kReplicas);
  for (int r = 0; r < kReplicas; ++r) {
    ASSERT_EQ(single[r].size(), 2u);
    ASSERT_EQ(slice[r].size(), 2u);
    for (int p = 0; p < 2; ++p) {
      EXPECT_EQ(Bits(slice[r][p]), Bits(single[r][p]))
          << "replica " << r << " parameter " << p;
      // Every replica holds the same parameters.
      EXPECT_EQ(Bits(slice[r][p]), Bits(slice[0][p]));
    }
  }
  // The step did change the parameters.
  EXPECT_NE(Bits(slice[0][0]), Bits(F32Pattern({3, 5}, 1)));
}

TEST_F(PodCollectivesE2ETest, EveryCollectiveIsExactAcrossWorkers) {
  StartSlice();
  std::vector<std::vector<Literal>> inputs;
  for (int r = 0; r < kReplicas; ++r) {
    std::vector<int32_t> p;
    for (int i = 0; i < 8; ++i) p.push_back(10 * r + i);
    inputs.push_back({S32({8}, p)});
  }
  for (int launch = 0; launch < 2; ++launch) {  // back to back
    std::vector<std::vector<Literal>> outputs =
        Run(SliceTarget(), kEveryCollective, inputs);
    ASSERT_EQ(outputs.size(), kReplicas);
    for (int r = 0; r < kReplicas; ++r) {
      ASSERT_EQ(outputs[r].size(), 5u);
      EXPECT_EQ(outputs[r][0], S32({8}, {0, 1, 2, 3, 4, 5, 6, 7}));
      // Element r of every replica's p, summed: 10 * 28 + 8 r.
      EXPECT_EQ(outputs[r][1], S32({1}, {280 + 8 * r})) << "replica " << r;
      std::vector<int32_t> received;
      for (int from = 0; from < 8; ++from) received.push_back(10 * from + r);
      EXPECT_EQ(outputs[r][2], S32({8}, received)) << "replica " << r;
      EXPECT_EQ(outputs[r][3], S32({1}, {(r + 7) % 8})) << "replica " << r;
      const int partner = (r + 4) % 8;
      std::vector<int32_t> pair_sum;
      for (int i = 0; i < 8; ++i) {
        pair_sum.push_back(10 * r + i + 10 * partner + i);
      }
      EXPECT_EQ(outputs[r][4], S32({8}, pair_sum)) << "replica " << r;
    }
  }
}

// Replica 0 of a program whose replica 1 sits on the other worker: while
// that worker lives, the core waits (and any worker's report shows whom it
// waits for); once it is killed, the collective fails with UNAVAILABLE
// naming it.
TEST_F(PodCollectivesE2ETest, DeadPeerFailsTheCollectiveNamingIt) {
  StartSlice();
  auto driver = driver::DriverRegistry::Open(
      absl::StrCat("grpc://", slice_[0]->address()));
  ASSERT_TRUE(driver.ok()) << driver.status();
  e2e::DriverLaunches launches(driver->get());
  auto executed = launches.Launch(std::string(kTwoReplicaSum), 0, {0, 4});

  // Host 1 answers for the whole slice: core 0 (host 0) waits for core 4.
  std::string json;
  for (int attempt = 0; attempt < 600; ++attempt) {
    auto result =
        tools::RunCommand({RunfilePath("tools/tpu_ctl/tpu_ctl"),
                           absl::StrCat("--target=", slice_[1]->address()),
                           "waits", "--format=json"},
                          absl::Seconds(30));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->exit_code, 0) << result->err;
    json = result->out;
    if (json.find("\"waiting_for\": [4]") != std::string::npos) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_THAT(json, HasSubstr("{\"core\": 0, \"host_id\": 0, \"state\": "
                              "\"waiting\", \"program\": \"two_replica_sum\""));
  EXPECT_THAT(json, HasSubstr("\"waiting_for\": [4]"));
  EXPECT_THAT(json, HasSubstr("{\"core\": 4, \"host_id\": 1, \"state\": "
                              "\"idle\""));
  EXPECT_FALSE(executed->AwaitWithTimeout(absl::ZeroDuration()).has_value())
      << "the collective must wait while its peer lives";

  slice_[1]->Kill();
  std::optional<absl::Status> status =
      executed->AwaitWithTimeout(absl::Seconds(60));
  ASSERT_TRUE(status.has_value()) << "the collective still waits";
  EXPECT_EQ(status->code(), absl::StatusCode::kUnavailable) << *status;
  EXPECT_THAT(status->message(),
              HasSubstr(absl::StrCat("all-reduce s: peer worker host 1 at ",
                                     slice_[1]->address(), " is unreachable")));
}

// The participant on the other side: host 1's core 4 joins a meeting that
// host 0 holds, and host 0 is gone.
TEST_F(PodCollectivesE2ETest, DeadCoordinatorFailsTheCollectiveNamingIt) {
  StartSlice();
  slice_[0]->Kill();
  auto driver = driver::DriverRegistry::Open(
      absl::StrCat("grpc://", slice_[1]->address()));
  ASSERT_TRUE(driver.ok()) << driver.status();
  e2e::DriverLaunches launches(driver->get());
  auto executed = launches.Launch(std::string(kTwoReplicaSum), 4, {0, 4});
  std::optional<absl::Status> status =
      executed->AwaitWithTimeout(absl::Seconds(60));
  ASSERT_TRUE(status.has_value()) << "the collective still waits";
  EXPECT_EQ(status->code(), absl::StatusCode::kUnavailable) << *status;
  EXPECT_THAT(status->message(),
              HasSubstr(absl::StrCat("peer worker host 0 at ",
                                     slice_[0]->address(), " is unreachable")));
}

NpyArray IntArray(std::vector<int64_t> shape, std::vector<int32_t> values) {
  NpyArray a;
  a.dtype = {'i', 4};
  a.shape = std::move(shape);
  a.data.assign(reinterpret_cast<const char*>(values.data()),
                values.size() * sizeof(int32_t));
  return a;
}

// tpu_run --replicas=8 with every collective, on the three drivers: the
// same exact outputs.
TEST_F(PodCollectivesE2ETest, TpuRunRunsCollectivesOnEveryDriver) {
  StartSingle();
  StartSlice();
  const std::string dir = absl::StrCat(ScratchDir(), "/", Name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string module = absl::StrCat(dir, "/every_collective.hlo");
  std::ofstream(module) << kEveryCollective;
  for (int r = 0; r < kReplicas; ++r) {
    const std::string in = absl::StrCat(dir, "/in/replica_", r);
    fs::create_directories(in);
    std::vector<int32_t> p;
    for (int i = 0; i < 8; ++i) p.push_back(10 * r + i);
    ASSERT_TRUE(
        WriteNpyFile(absl::StrCat(in, "/arg_0.npy"), IntArray({8}, p)).ok());
  }
  for (const std::string& target :
       {SingleTarget(), std::string("local://?chips=4&cores_per_chip=2"),
        SliceTarget()}) {
    SCOPED_TRACE(target);
    const std::string out = absl::StrCat(dir, "/out");
    fs::remove_all(out);
    auto result = tools::RunCommand(
        {RunfilePath("tools/tpu_run/tpu_run"),
         absl::StrCat("--target=", target), absl::StrCat("--module=", module),
         "--replicas=8", absl::StrCat("--inputs_dir=", dir, "/in"),
         absl::StrCat("--outputs_dir=", out)},
        absl::Seconds(120));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->exit_code, 0) << result->err;
    for (int r = 0; r < kReplicas; ++r) {
      auto read = [&](int j) {
        auto array =
            ReadNpyFile(absl::StrCat(out, "/replica_", r, "/out_", j, ".npy"));
        EXPECT_TRUE(array.ok()) << array.status();
        return array.ok() ? SerializeNpy(*array) : std::string();
      };
      std::vector<int32_t> received, pair_sum;
      for (int from = 0; from < 8; ++from) received.push_back(10 * from + r);
      for (int i = 0; i < 8; ++i) {
        pair_sum.push_back(10 * r + i + 10 * ((r + 4) % 8) + i);
      }
      EXPECT_EQ(read(0), SerializeNpy(IntArray({8}, {0, 1, 2, 3, 4, 5, 6, 7})));
      EXPECT_EQ(read(1), SerializeNpy(IntArray({1}, {280 + 8 * r})));
      EXPECT_EQ(read(2), SerializeNpy(IntArray({8}, received)));
      EXPECT_EQ(read(3), SerializeNpy(IntArray({1}, {(r + 7) % 8})));
      EXPECT_EQ(read(4), SerializeNpy(IntArray({8}, pair_sum)));
    }
  }
}

}  // namespace
}  // namespace tpu
