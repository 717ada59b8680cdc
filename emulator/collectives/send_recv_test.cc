// send/recv between devices (_xla_send_recv_source_target_pairs), with the
// values XLA's own tests expect (collective_ops_test.cc and
// collective_pipeline_parallelism_test.cc): across replicas and across
// partitions, two chains at once, validation bounds, a loop, the pipelined
// form whose contexts travel through while-loop state, and a receiver
// whose sender never comes, as the wait report shows it.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "emulator/collectives/multi_core_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_util::CompileFor;
using testing_util::RunOnCores;

template <typename T>
std::vector<T> ValuesOf(const absl::StatusOr<Literal>& literal) {
  EXPECT_TRUE(literal.ok()) << literal.status();
  if (!literal.ok()) return {};
  auto data = literal->data<T>();
  return std::vector<T>(data.begin(), data.end());
}

std::vector<absl::StatusOr<Literal>> RunProgram(
    const std::string& text, int replicas, int partitions,
    const std::vector<std::vector<Literal>>& args = {}) {
  auto exe = CompileFor(text, replicas);
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!exe.ok()) return {};
  return RunOnCores(**exe, replicas, partitions, args);
}

// collective_ops_test.cc, SendRecv_Simple.
TEST(SendRecvTest, AcrossReplicasWithoutChannel) {
  auto results = RunProgram(R"(
HloModule test
ENTRY test_computation {
  %replica = u32[] replica-id()
  %ten = u32[] constant(10)
  %sum = u32[] add(%replica, %ten)
  %p = u32[2] broadcast(%sum), dimensions={}
  %after-all = token[] after-all()
  %recv = (u32[2], u32[], token[]) recv(%after-all), channel_id=0,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{1,0}}"}
  %send = (u32[2], u32[], token[]) send(%p, %after-all), channel_id=0,
    control-predecessors={%recv},
    frontend_attributes={_xla_send_recv_source_target_pairs="{{1,0}}"}
  %recv-done = (u32[2], token[]) recv-done(%recv), channel_id=0
  %recv-data = u32[2] get-tuple-element(%recv-done), index=0
  %send-done = token[] send-done(%send), channel_id=0,
    control-predecessors={%recv}
  ROOT copy = u32[2] copy(%recv-data)
})",
                            2, 1);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_THAT(ValuesOf<uint32_t>(results[0]), ElementsAre(11, 11));
  EXPECT_THAT(ValuesOf<uint32_t>(results[1]), ElementsAre(0, 0));
}

// SendRecvCrossPartition: with a channel_id the ids are partitions.
TEST(SendRecvTest, AcrossPartitionsWithChannel) {
  auto results = RunProgram(R"(
HloModule test
ENTRY computation {
  rid = u32[] partition-id()
  c10 = u32[] constant(10)
  rid_plus_ten = u32[] add(rid, c10)
  after_all = token[] after-all()
  send = (u32[], u32[], token[]) send(rid_plus_ten, after_all), channel_id=1,
      frontend_attributes={_xla_send_recv_source_target_pairs="{{1,0}}"}
  recv = (u32[], u32[], token[]) recv(after_all), channel_id=1,
      frontend_attributes={_xla_send_recv_source_target_pairs="{{1,0}}"}
  send_done = token[] send-done(send), channel_id=1
  recv_done = (u32[], token[]) recv-done(recv), channel_id=1
  ROOT recv_data = u32[] get-tuple-element(recv_done), index=0
})",
                            1, 2);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_THAT(ValuesOf<uint32_t>(results[0]), ElementsAre(11));
  EXPECT_THAT(ValuesOf<uint32_t>(results[1]), ElementsAre(0));
}

// SendRecv_TwoConcurrentChains (and, with validation, ValidationAttr1).
std::string TwoChains(const std::string& chain0_validation) {
  return R"(
HloModule test
ENTRY test_computation {
  c0 = u32[] constant(0)
  c1 = u32[] constant(1)
  replica = u32[] replica-id()
  a = u32[] add(c1, replica)
  send-data = u32[2] broadcast(a), dimensions={}
  after-all.0 = token[] after-all()
  recv.0 = (u32[2], u32[], token[]) recv(after-all.0), channel_id=0,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{1,0}}")" +
         chain0_validation + R"(}
  send.0 = (u32[2], u32[], token[]) send(send-data, after-all.0),
    channel_id=0, frontend_attributes={
      _xla_send_recv_source_target_pairs="{{1,0}}")" +
         chain0_validation + R"(}
  after-all.1 = token[] after-all()
  recv.1 = (u32[2], u32[], token[]) recv(after-all.1), channel_id=0,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  send.1 = (u32[2], u32[], token[]) send(send-data, after-all.1),
    channel_id=0,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  recv-done.0 = (u32[2], token[]) recv-done(recv.0), channel_id=0
  recv-data.0 = u32[2] get-tuple-element(recv-done.0), index=0
  recv-done.1 = (u32[2], token[]) recv-done(recv.1), channel_id=0
  recv-data.1 = u32[2] get-tuple-element(recv-done.1), index=0
  compare0 = pred[] compare(replica, c0), direction=EQ
  compare = pred[2] broadcast(compare0), dimensions={}
  recv-data = u32[2] select(compare, recv-data.0, recv-data.1)
  send-done.0 = token[] send-done(send.0), channel_id=0
  send-done.1 = token[] send-done(send.1), channel_id=0
  c1b = u32[2] broadcast(c1), dimensions={}
  ROOT result = u32[2] add(c1b, recv-data)
})";
}

TEST(SendRecvTest, TwoChainsAtOnce) {
  auto results = RunProgram(TwoChains(""), 2, 1);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_THAT(ValuesOf<uint32_t>(results[0]), ElementsAre(3, 3));
  EXPECT_THAT(ValuesOf<uint32_t>(results[1]), ElementsAre(2, 2));
}

TEST(SendRecvTest, InvalidTransfersAreSkippedAndReceiveZeros) {
  auto results =
      RunProgram(TwoChains(R"(, _xla_send_recv_validation="invalid")"), 2, 1);
  ASSERT_EQ(results.size(), 2u);
  // XLA leaves replica 0's buffer unwritten; the emulator gives zeros.
  EXPECT_THAT(ValuesOf<uint32_t>(results[0]), ElementsAre(1, 1));
  EXPECT_THAT(ValuesOf<uint32_t>(results[1]), ElementsAre(2, 2));
}

// SendRecv_ValidationAttr2's loop with bounds {first, last} runs of the
// pair 1->0: {0,1} lets both iterations transfer (XLA's expected values),
// {0,0} only the first, so replica 0's second receive gives zeros.
std::string BoundedLoop(const std::string& bounds) {
  return R"(
HloModule test
cond {
  param = (u32[], u32[2]) parameter(0)
  count = get-tuple-element(param), index=0
  ub = u32[] constant(2)
  ROOT result = pred[] compare(count, ub), direction=LT
}
body {
  param = (u32[], u32[2]) parameter(0)
  count = get-tuple-element(param), index=0
  send-data = get-tuple-element(param), index=1
  after-all.0 = token[] after-all()
  recv.0 = (u32[2], u32[], token[]) recv(after-all.0), channel_id=0,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{1,0}}",
      _xla_send_recv_validation=")" +
         bounds + R"("}
  send.0 = (u32[2], u32[], token[]) send(send-data, after-all.0),
    channel_id=0,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{1,0}}",
      _xla_send_recv_validation=")" +
         bounds + R"("}
  recv-done.0 = (u32[2], token[]) recv-done(recv.0), channel_id=0
  recv-data.0 = u32[2] get-tuple-element(recv-done.0), index=0
  send-done.0 = token[] send-done(send.0), channel_id=0
  after-all.1 = token[] after-all()
  recv.1 = (u32[2], u32[], token[]) recv(after-all.1), channel_id=0,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  send.1 = (u32[2], u32[], token[]) send(send-data, after-all.1),
    channel_id=0,
    frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  recv-done.1 = (u32[2], token[]) recv-done(recv.1), channel_id=0
  recv-data.1 = u32[2] get-tuple-element(recv-done.1), index=0
  send-done.1 = token[] send-done(send.1), channel_id=0
  replica = u32[] replica-id()
  constant0 = u32[] constant(0)
  compare0 = pred[] compare(replica, constant0), direction=EQ
  compare = pred[2] broadcast(compare0), dimensions={}
  recv-data = u32[2] select(compare, recv-data.0, recv-data.1)
  c1 = u32[] constant(1)
  new_count = u32[] add(count, c1)
  r = u32[2] broadcast(c1), dimensions={}
  s = u32[2] add(r, recv-data)
  ROOT result = (u32[], u32[2]) tuple(new_count, s)
}
ENTRY test_computation {
  c0 = u32[] constant(0)
  r = u32[] replica-id()
  init = u32[2] broadcast(r), dimensions={}
  while_init = (u32[], u32[2]) tuple(c0, init)
  while_result = (u32[], u32[2]) while(while_init), body=body, condition=cond
  ROOT result = u32[2] get-tuple-element(while_result), index=1
})";
}

TEST(SendRecvTest, ValidationBoundsCountRunsOfTheInstruction) {
  auto both = RunProgram(BoundedLoop("{{0,1}}"), 2, 1);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_THAT(ValuesOf<uint32_t>(both[0]), ElementsAre(2, 2));
  EXPECT_THAT(ValuesOf<uint32_t>(both[1]), ElementsAre(3, 3));
  auto first = RunProgram(BoundedLoop("{{0,0}}"), 2, 1);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_THAT(ValuesOf<uint32_t>(first[0]), ElementsAre(1, 1));
  EXPECT_THAT(ValuesOf<uint32_t>(first[1]), ElementsAre(3, 3));
}

Literal Fill(float value) {
  return Literal::FromVector<float>(xla::F32, {2, 2},
                                    {value, value, value, value});
}

// collective_pipeline_parallelism_test.cc, SendRecvLoop2Devices: the send
// on channel 1 pairs with the recv on channel 2.
TEST(SendRecvTest, SendAndRecvOnDifferentChannelsPairInALoop) {
  auto results = RunProgram(R"(
HloModule test, num_partitions=2
while_condidtion {
  param = (u32[], f32[2,2]) parameter(0)
  i = u32[] get-tuple-element(param), index=0
  c1 = u32[] constant(1)
  ROOT cmp = pred[] compare(i, c1), direction=LT
}
while_body {
  param = (u32[], f32[2,2]) parameter(0)
  i = u32[] get-tuple-element(param), index=0
  data = f32[2,2] get-tuple-element(param), index=1
  after_all = token[] after-all()
  send_ctx = (f32[2,2], u32[], token[]) send(data, after_all),
      frontend_attributes={_xla_send_recv_source_target_pairs={{0,1}}},
      channel_id=1
  recv_ctx = (f32[2,2], u32[], token[]) recv(after_all),
      frontend_attributes={_xla_send_recv_source_target_pairs={{0,1}}},
      channel_id=2
  send_done = token[] send-done(send_ctx), channel_id=1
  recv_done = (f32[2,2], token[]) recv-done(recv_ctx), channel_id=2
  data_ = f32[2,2] get-tuple-element(recv_done), index=0
  c1 = u32[] constant(1)
  i_ = u32[] add(i, c1)
  ROOT result = (u32[], f32[2,2]) tuple(i_, data_)
}
ENTRY test_computation {
  data = f32[2,2] parameter(0)
  i = u32[] constant(0)
  init = (u32[], f32[2,2]) tuple(i, data)
  while = (u32[], f32[2,2]) while(init), condition=while_condidtion,
      body=while_body
  ROOT data_ = f32[2,2] get-tuple-element(while), index=1
})",
                            1, 2, {{Fill(1)}, {Fill(2)}});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_THAT(ValuesOf<float>(results[0]), ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(ValuesOf<float>(results[1]), ElementsAre(1, 1, 1, 1));
}

// PartiallyPipelinedAsyncSendRecvLoop: the contexts of the entry's send
// and recv travel through the loop's state; each iteration completes the
// previous transfer and starts the next; the entry completes the last.
std::string Pipelined(const std::string& pairs) {
  return R"(
HloModule test
while_condidtion {
  param = (u32[], (f32[2,2], u32[], token[]), (f32[2,2], u32[], token[]))
      parameter(0)
  i = u32[] get-tuple-element(param), index=0
  c2 = u32[] constant(2)
  ROOT cmp = pred[] compare(i, c2), direction=LT
}
while_body {
  param = (u32[], (f32[2,2], u32[], token[]), (f32[2,2], u32[], token[]))
      parameter(0)
  i = u32[] get-tuple-element(param), index=0
  send_ctx = get-tuple-element(param), index=1
  recv_ctx = get-tuple-element(param), index=2
  send_done = token[] send-done(send_ctx), channel_id=1
  recv_done = (f32[2,2], token[]) recv-done(recv_ctx), channel_id=2
  data = get-tuple-element(recv_done), index=0
  after_all = token[] after-all()
  send_ctx_ = (f32[2,2], u32[], token[]) send(data, after_all),
      frontend_attributes={_xla_send_recv_source_target_pairs=)" +
         pairs + R"(}, channel_id=1
  recv_ctx_ = (f32[2,2], u32[], token[]) recv(after_all),
      frontend_attributes={_xla_send_recv_source_target_pairs=)" +
         pairs + R"(}, channel_id=2
  c1 = u32[] constant(1)
  i_ = u32[] add(i, c1)
  ROOT result = (u32[], (f32[2,2], u32[], token[]),
      (f32[2,2], u32[], token[])) tuple(i_, send_ctx_, recv_ctx_)
}
ENTRY test_computation {
  data = f32[2,2] parameter(0)
  i = u32[] constant(0)
  after_all = token[] after-all()
  send_ctx_ = (f32[2,2], u32[], token[]) send(data, after_all),
      frontend_attributes={_xla_send_recv_source_target_pairs=)" +
         pairs + R"(}, channel_id=1
  recv_ctx_ = (f32[2,2], u32[], token[]) recv(after_all),
      frontend_attributes={_xla_send_recv_source_target_pairs=)" +
         pairs + R"(}, channel_id=2
  init = (u32[], (f32[2,2], u32[], token[]), (f32[2,2], u32[], token[]))
      tuple(i, send_ctx_, recv_ctx_)
  while = (u32[], (f32[2,2], u32[], token[]), (f32[2,2], u32[], token[]))
      while(init), condition=while_condidtion, body=while_body
  send_ctx = get-tuple-element(while), index=1
  recv_ctx = get-tuple-element(while), index=2
  send_done = token[] send-done(send_ctx), channel_id=1
  recv_done = (f32[2,2], token[]) recv-done(recv_ctx), channel_id=2
  ROOT data_ = get-tuple-element(recv_done), index=0
})";
}

TEST(SendRecvTest, PipelinedContextsThroughLoopStateOnTwoDevices) {
  auto results = RunProgram(Pipelined("{{0,1}}"), 1, 2, {{Fill(1)}, {Fill(2)}});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_THAT(ValuesOf<float>(results[0]), ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(ValuesOf<float>(results[1]), ElementsAre(0, 0, 0, 0));
}

TEST(SendRecvTest, PipelinedContextsCarryDataDownAChainOfFour) {
  auto results = RunProgram(Pipelined("{{0,1},{1,2},{2,3}}"), 1, 4,
                            {{Fill(1)}, {Fill(2)}, {Fill(3)}, {Fill(4)}});
  ASSERT_EQ(results.size(), 4u);
  for (int p = 0; p < 3; ++p) {
    EXPECT_THAT(ValuesOf<float>(results[p]), ElementsAre(0, 0, 0, 0))
        << "partition " << p;
  }
  EXPECT_THAT(ValuesOf<float>(results[3]), ElementsAre(1, 1, 1, 1));
}

TEST(SendRecvTest, PairsNamingMissingReplicasFailAtCompileTime) {
  auto exe = CompileFor(R"(
HloModule test
ENTRY e {
  t = token[] after-all()
  r = (u32[], u32[], token[]) recv(t),
      frontend_attributes={_xla_send_recv_source_target_pairs="{{0,2}}"}
  d = (u32[], token[]) recv-done(r)
  ROOT x = u32[] get-tuple-element(d), index=0
})",
                        2);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(exe.status().message(), HasSubstr("names replica 2"));
}

// Replica 1 waits for replica 0, which never launches: the wait report
// shows core 1 in recv-done waiting for core 0, and closing the client
// ends the wait with CANCELLED.
TEST(SendRecvTest, AReceiverWhoseSenderNeverComesWaitsAndIsReported) {
  auto exe = CompileFor(R"(
HloModule lonely
ENTRY e {
  t = token[] after-all()
  r = (u32[2], u32[], token[]) recv(t),
      frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  ROOT d = (u32[2], token[]) recv-done(r)
})",
                        2);
  ASSERT_TRUE(exe.ok()) << exe.status();
  CollectiveHubOptions options;
  options.cores = {0, 1};
  options.report_waits_after = absl::ZeroDuration();
  CollectiveHub hub(options);
  interpreter::DeviceAssignment assignment{2, 1, {0, 1}};
  std::atomic<bool> cancelled{false};
  absl::StatusOr<Literal> result;
  std::thread replica1([&] {
    LaunchInfo info;
    info.core = 1;
    info.client_id = 1;
    info.program = "lonely";
    info.fingerprint = "lonely";
    info.assignment = {0, 1};
    info.cancelled = &cancelled;
    auto launch = hub.BeginLaunch(info);
    ASSERT_TRUE(launch.ok());
    interpreter::ExecutionContext context;
    context.replica_id = 1;
    context.assignment = &assignment;
    context.collectives = launch->get();
    context.cancelled = &cancelled;
    result = (*exe)->Execute({}, context, nullptr);
  });
  tpu_emulator::CoreWait wait;
  while (true) {
    tpu_emulator::WaitReport report = hub.Report();
    wait = report.cores(1);
    if (wait.activity() == tpu_emulator::CoreWait::WAITING) break;
    std::this_thread::yield();
  }
  EXPECT_EQ(wait.instruction(), "d");
  EXPECT_EQ(wait.kind(), "recv-done");
  EXPECT_THAT(wait.waiting_for(), ElementsAre(0));
  ASSERT_EQ(wait.diagnosis_size(), 1);
  EXPECT_THAT(wait.diagnosis(0), HasSubstr("core 0 is idle"));
  cancelled = true;
  hub.WakeWaiters();
  replica1.join();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(result.status().message(), HasSubstr("core 0 to send"));
}

}  // namespace
}  // namespace tpu::emulator
