// Hostile requests against a real tpu_emulator process: each gets its exact
// error, and the worker goes on serving a fresh client afterwards (a small
// alloc, transfer, compile, execute and read back, bit for bit).
//
// The worker runs with a 256 MiB host memory budget and small per-client
// limits, so every refusal is reached with little memory.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "emulator/worker/test_programs.h"
#include "emulator/worker/test_requests.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hlo/shape.h"
#include "hlo/text/hlo_parser.h"
#include "tests/protocol/protocol_client.h"
#include "tools/lib/subprocess.h"

namespace tpu {
namespace {

using namespace emulator::test_requests;  // NOLINT
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int kHandleLimit = 64;
constexpr int kPendingLimit = 16;
constexpr const char* kBudgetText =
    "the worker's host memory budget (--host_memory_budget) is 256.00 MiB "
    "(268435456 bytes)";

int Code(absl::StatusCode code) { return static_cast<int>(code); }

xla::HloProto FromText(const std::string& text) {
  absl::StatusOr<xla::HloModuleProto> module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  xla::HloProto proto;
  if (module.ok()) *proto.mutable_hlo_module() = *std::move(module);
  return proto;
}

class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }

  void Start(std::vector<std::string> extra) {
    std::vector<std::string> argv = {
        tools::RunfilePath("tools/tpu_emulator/tpu_emulator"),
        "--port=0",
        "--chips=1",
        "--cores_per_chip=1",
        absl::StrCat("--hbm_bytes_per_core=", 32 * kGiB),
        "--host_memory_budget=256MiB",
        absl::StrCat("--max_handles_per_client=", kHandleLimit),
        absl::StrCat("--max_pending_operations_per_client=", kPendingLimit),
        "--max_bytes_in_flight_per_client=512MiB",
    };
    argv.insert(argv.end(), extra.begin(), extra.end());
    server_.reset();
    absl::StatusOr<std::unique_ptr<tools::ServerProcess>> server =
        tools::ServerProcess::Start(argv, tools::ScratchDir(), "hostile");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = NewStub(server_->address());
  }

  uint32_t OpenClient() {
    grpc::ClientContext context;
    tpu_driver::OpenResponse opened;
    grpc::Status status =
        stub_->Open(&context, tpu_driver::OpenRequest(), &opened);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return status.ok() ? opened.client_id() : 0;
  }

  // The worker is alive and serves a new client end to end: x + x on
  // [1, 2, 3, 4] reads back [2, 4, 6, 8].
  void ExpectServesAFreshClient() {
    ASSERT_FALSE(server_->process().Wait(absl::ZeroDuration()).ok())
        << "the worker exited: " << server_->Stderr();
    const uint32_t c = OpenClient();
    ASSERT_NE(c, 0u);
    ProtocolStream s(stub_.get());
    const Shape f32x4 = Shape::Array(xla::F32, {4});
    s.Send({AllocShape(Id(c, 1), 0, f32x4),
            TransferTo(Id(c, 2), Id(c, 1), F32Bytes({1, 2, 3, 4})),
            Compile(Id(c, 3), emulator::test_programs::AddF32(4)),
            Load(Id(c, 4), 0, Id(c, 3)), AllocShape(Id(c, 5), 0, f32x4),
            Execute(Id(c, 6), Id(c, 4), {Id(c, 1), Id(c, 1)}, {Id(c, 5)}, 0,
                    {Id(c, 2)}),
            TransferFrom(Id(c, 7), Id(c, 5), {Id(c, 6)})});
    for (int op = 1; op <= 6; ++op) {
      auto e = s.Await(Id(c, op));
      ASSERT_TRUE(e.has_value()) << op;
      ASSERT_EQ(e->status().code(), 0) << op << ": " << e->status().message();
    }
    auto read = s.Await(Id(c, 7));
    ASSERT_TRUE(read.has_value());
    ASSERT_EQ(read->status().code(), 0) << read->status().message();
    EXPECT_EQ(FromF32Bytes(read->transfer_from().data()),
              (std::vector<float>{2, 4, 6, 8}));
    EXPECT_TRUE(s.Finish().ok());
  }

  std::unique_ptr<tools::ServerProcess> server_;
  std::unique_ptr<tpu_driver::CloudTpuDriver::Stub> stub_;
};

TEST_F(HostileTest, ConstantWithoutItsDataIsRefusedBeforeAllocating) {
  // 4 TiB of f32 claimed by a constant that carries no values: about a
  // hundred bytes on the wire.
  xla::HloProto hlo = FromText(R"(
HloModule huge_constant
ENTRY e {
  ROOT c = f32[2] constant({1, 2})
})");
  auto* computation = hlo.mutable_hlo_module()->mutable_computations(0);
  auto* constant = computation->mutable_instructions(0);
  constant->mutable_shape()->set_dimensions(0, int64_t{1} << 40);
  *constant->mutable_literal()->mutable_shape() = constant->shape();
  constant->mutable_literal()->clear_f32s();
  *computation->mutable_program_shape()->mutable_result() = constant->shape();
  *hlo.mutable_hlo_module()->mutable_host_program_shape()->mutable_result() =
      constant->shape();
  const uint32_t c = OpenClient();
  ProtocolStream s(stub_.get());
  s.Send({Compile(Id(c, 1), hlo)});
  auto e = s.Await(Id(c, 1));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status().code(), Code(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(e->status().message(),
              HasSubstr("literal of shape f32[1099511627776] has 0 values in "
                        "f32s but its shape needs 1099511627776; a literal "
                        "must carry every value of its shape"));
  EXPECT_TRUE(s.Finish().ok());
  ExpectServesAFreshClient();
}

TEST_F(HostileTest, ValueLargerThanTheBudgetFailsAtCompile) {
  const uint32_t c = OpenClient();
  ProtocolStream s(stub_.get());
  s.Send({Compile(Id(c, 1), FromText(R"(
HloModule huge_broadcast
ENTRY e {
  p = f32[] parameter(0)
  ROOT b = f32[68719476736] broadcast(p), dimensions={}
})"))});
  auto e = s.Await(Id(c, 1));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status().code(), Code(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(e->status().message(),
            absl::StrCat(
                "operation 1 (client ", c,
                ") compile: HLO computation e, instruction b (broadcast): its "
                "value f32[68719476736] takes 256.00 GiB (274877906944 "
                "bytes), more than the worker's host memory budget "
                "(--host_memory_budget) of 256.00 MiB (268435456 bytes) "
                "allows in all; make the program smaller or raise the "
                "budget."));
  EXPECT_TRUE(s.Finish().ok());
  ExpectServesAFreshClient();
}

TEST_F(HostileTest, IntermediatesBeyondTheBudgetFailAtExecute) {
  // Each value (160 MiB) fits the budget; both live at once do not.
  const uint32_t c = OpenClient();
  ProtocolStream s(stub_.get());
  const Shape big = Shape::Array(xla::F32, {41943040});
  s.Send({Compile(Id(c, 1), FromText(R"(
HloModule two_broadcasts
ENTRY e {
  p = f32[] parameter(0)
  a = f32[41943040] broadcast(p), dimensions={}
  n = f32[41943040] negate(a)
  ROOT t = (f32[41943040], f32[41943040]) tuple(a, n)
})")),
          Load(Id(c, 2), 0, Id(c, 1)),
          AllocShape(Id(c, 3), 0, Shape::Scalar(xla::F32)),
          TransferTo(Id(c, 4), Id(c, 3), F32Bytes({1})),
          AllocShape(Id(c, 5), 0, big), AllocShape(Id(c, 6), 0, big),
          AllocTuple(Id(c, 7), 0, {Id(c, 5), Id(c, 6)}),
          Execute(Id(c, 8), Id(c, 2), {Id(c, 3)}, {Id(c, 7)}, 0, {Id(c, 4)})});
  for (int op = 1; op <= 7; ++op) ASSERT_EQ(s.Code(Id(c, op)), 0) << op;
  auto e = s.Await(Id(c, 8));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status().code(), Code(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(e->status().message(),
              StartsWith(absl::StrCat("operation 8 (client ", c,
                                      ") execute: host memory exhausted: this "
                                      "needs 160.00 MiB (167772160 bytes) "
                                      "more, ")));
  EXPECT_THAT(e->status().message(), HasSubstr(kBudgetText));
  // The failed execute left nothing committed: the same client still runs.
  EXPECT_TRUE(s.Finish().ok());
  ExpectServesAFreshClient();
}

TEST_F(HostileTest, TransferBeyondTheBudgetIsRefused) {
  const uint32_t c = OpenClient();
  ProtocolStream s(stub_.get());
  const int64_t size = 300 * kMiB;
  s.Send({AllocBytes(Id(c, 1), 0, size),
          TransferTo(Id(c, 2), Id(c, 1), std::string(size, 'x'))});
  ASSERT_EQ(s.Code(Id(c, 1)), 0);
  auto e = s.Await(Id(c, 2));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status().code(), Code(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(e->status().message(),
            absl::StrCat("operation 2 (client ", c,
                         ") transfer_to target: host memory exhausted: this "
                         "needs 300.00 MiB (314572800 bytes) more, 0 bytes are "
                         "committed, and ",
                         kBudgetText,
                         ". Free buffers, make the request smaller, or raise "
                         "the budget."));
  EXPECT_TRUE(s.Finish().ok());
  ExpectServesAFreshClient();
}

TEST_F(HostileTest, NeverWrittenBuffersCostNoMemory) {
  const uint32_t c = OpenClient();
  ProtocolStream s(stub_.get());
  // More than the budget, read back whole: zeros that were never made.
  const int64_t size = 384 * kMiB;
  s.Send({AllocBytes(Id(c, 1), 0, size), TransferFrom(Id(c, 2), Id(c, 1)),
          AllocBytes(Id(c, 3), 0, 16 * kGiB),
          TransferFrom(Id(c, 4), Id(c, 3))});
  ASSERT_EQ(s.Code(Id(c, 1)), 0);
  auto read = s.Take(Id(c, 2), absl::Seconds(120));
  ASSERT_TRUE(read.has_value());
  ASSERT_EQ(read->status().code(), 0) << read->status().message();
  const std::string& data = read->transfer_from().data();
  ASSERT_EQ(static_cast<int64_t>(data.size()), size);
  EXPECT_TRUE(
      std::all_of(data.begin(), data.end(), [](char b) { return b == 0; }));
  read.reset();
  // 16 GiB is more than one response message may carry (no partial reads
  // in this protocol): refused, not materialized.
  ASSERT_EQ(s.Code(Id(c, 3)), 0);
  auto huge = s.Await(Id(c, 4));
  ASSERT_TRUE(huge.has_value());
  EXPECT_EQ(huge->status().code(), Code(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(huge->status().message(),
              HasSubstr("more than one protocol message can carry"));
  EXPECT_TRUE(s.Finish().ok());
  ExpectServesAFreshClient();
}

TEST_F(HostileTest, NeverWrittenInputLargerThanTheBudgetLeftFailsAtExecute) {
  const uint32_t c = OpenClient();
  ProtocolStream s(stub_.get());
  const Shape input = Shape::Array(xla::F32, {26214400});  // 100 MiB
  s.Send({Compile(Id(c, 1), FromText(R"(
HloModule negate
ENTRY e {
  p = f32[26214400] parameter(0)
  ROOT n = f32[26214400] negate(p)
})")),
          Load(Id(c, 2), 0, Id(c, 1)), AllocShape(Id(c, 3), 0, input),
          AllocShape(Id(c, 4), 0, input),
          // 200 MiB held by the client's own written buffer.
          AllocBytes(Id(c, 5), 0, 200 * kMiB),
          TransferTo(Id(c, 6), Id(c, 5), std::string(200 * kMiB, 'y')),
          Execute(Id(c, 7), Id(c, 2), {Id(c, 3)}, {Id(c, 4)}, 0, {Id(c, 6)})});
  for (int op = 1; op <= 6; ++op) ASSERT_EQ(s.Code(Id(c, op)), 0) << op;
  auto e = s.Await(Id(c, 7));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status().code(), Code(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(e->status().message(),
              StartsWith(absl::StrCat(
                  "operation 7 (client ", c,
                  ") execute input 0 (never written, read as zeros): host "
                  "memory exhausted: this needs 100.00 MiB (104857600 bytes) "
                  "more, 200.00 MiB (209715200 bytes) are committed")));
  // Freeing the written buffer gives the memory back (input and result
  // now fit).
  s.Send({Dealloc(Id(c, 8), Id(c, 5)),
          Execute(Id(c, 9), Id(c, 2), {Id(c, 3)}, {Id(c, 4)}, 0, {Id(c, 8)})});
  EXPECT_EQ(s.Code(Id(c, 8)), 0);
  auto retried = s.Await(Id(c, 9), absl::Seconds(120));
  ASSERT_TRUE(retried.has_value());
  EXPECT_EQ(retried->status().code(), 0) << retried->status().message();
  EXPECT_TRUE(s.Finish().ok());
  ExpectServesAFreshClient();
}

TEST_F(HostileTest, DeepNestingIsRefused) {
  // A call chain 300 computations deep.
  std::string chain = "HloModule deep_calls\n";
  for (int i = 300; i >= 1; --i) {
    absl::StrAppend(
        &chain, i == 1 ? "ENTRY " : "", "c", i,
        " {\n  p = f32[] parameter(0)\n  ROOT r = f32[] ",
        i == 300 ? "negate(p)" : absl::StrCat("call(p), to_apply=c", i + 1),
        "\n}\n");
  }
  const uint32_t c = OpenClient();
  ProtocolStream s(stub_.get());
  s.Send({Compile(Id(c, 1), FromText(chain))});
  auto e = s.Await(Id(c, 1));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status().code(), Code(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(e->status().message(),
              HasSubstr("computations call each other more than 256 levels "
                        "deep"));
  // HLO text nested 300 deep is refused by the parser itself.
  std::string nested_shape(300, '(');
  absl::StrAppend(&nested_shape, "f32[]", std::string(300, ')'));
  absl::StatusOr<xla::HloModuleProto> parsed = hlo::ParseHloModule(
      absl::StrCat("HloModule deep_tuple\nENTRY e {\n  ROOT p = ", nested_shape,
                   " parameter(0)\n}\n"));
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("nesting deeper than 256"));
  // A shape proto nested past protobuf's own limit: the message is refused
  // whole, with an answer on id 0.
  xla::HloProto deep = emulator::test_programs::AddF32(4);
  xla::ShapeProto* shape = deep.mutable_hlo_module()
                               ->mutable_computations(0)
                               ->mutable_instructions(0)
                               ->mutable_shape();
  for (int i = 0; i < 300; ++i) {
    shape->set_element_type(xla::TUPLE);
    shape = shape->add_tuple_shapes();
  }
  shape->set_element_type(xla::F32);
  s.Send({Compile(Id(c, 2), deep)});
  auto dropped = s.Await(0);
  ASSERT_TRUE(dropped.has_value());
  EXPECT_EQ(dropped->status().code(), Code(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(dropped->status().message(),
            "A StreamRequest message could not be parsed; its entries were "
            "dropped.");
  EXPECT_TRUE(s.Finish().ok());
  ExpectServesAFreshClient();
}

TEST_F(HostileTest, GarbageInEveryFieldGetsErrors) {
  const uint32_t c = OpenClient();
  ProtocolStream s(stub_.get());
  Entry no_request = Base(Id(c, 1));
  Entry bad_type = AllocShape(Id(c, 3), 0, Shape::Array(xla::F32, {4}));
  bad_type.mutable_alloc()->mutable_shape()->set_element_type(
      static_cast<xla::PrimitiveType>(12345));
  Entry negative_dim = AllocShape(Id(c, 4), 0, Shape::Array(xla::F32, {4}));
  negative_dim.mutable_alloc()->mutable_shape()->set_dimensions(0, -7);
  Entry overflowing = AllocShape(Id(c, 5), 0, Shape::Array(xla::F32, {4}));
  overflowing.mutable_alloc()->mutable_shape()->set_dimensions(0, INT64_MAX);
  Entry no_module = Compile(Id(c, 8), xla::HloProto());
  Entry replicas = Compile(Id(c, 9), emulator::test_programs::AddF32(4), -3);
  s.Send({no_request, AllocBytes(Id(c, 2), 0, -5), bad_type, negative_dim,
          overflowing, AllocBytes(Id(c, 6), 99, 4),
          AllocBytes(Id(c, 7), 0, 4 * 32 * kGiB), no_module, replicas,
          Compile(Id(c, 10), emulator::test_programs::UnknownOpcode()),
          AllocBytes(Id(c, 11), 0, 8),
          TransferTo(Id(c, 12), Id(c, 11), "too short"),
          Execute(Id(c, 13), Id(c, 11), {}, {Id(c, 11)}, 0),
          TransferFrom(Id(c, 14), Id(c + 1, 11))});
  const absl::StatusCode invalid = absl::StatusCode::kInvalidArgument;
  const std::vector<std::pair<int, absl::StatusCode>> expected = {
      {1, invalid},
      {2, invalid},
      {3, invalid},
      {4, invalid},
      {5, invalid},
      {6, invalid},
      {7, absl::StatusCode::kResourceExhausted},
      {8, invalid},
      {9, invalid},
      {10, absl::StatusCode::kUnimplemented},
      {11, absl::StatusCode::kOk},
      {12, invalid},
      {13, invalid},
      {14, invalid}};
  for (const auto& [op, code] : expected) {
    auto e = s.Await(Id(c, op));
    ASSERT_TRUE(e.has_value()) << op;
    EXPECT_EQ(e->status().code(), Code(code))
        << op << ": " << e->status().message();
  }
  EXPECT_TRUE(s.Finish().ok());
  ExpectServesAFreshClient();
}

TEST_F(HostileTest, AnotherClientsIdIsRefused) {
  const uint32_t a = OpenClient();
  const uint32_t b = OpenClient();
  ProtocolStream sb(stub_.get());
  sb.Send({AllocBytes(Id(b, 1), 0, 4), TransferTo(Id(b, 2), Id(b, 1), "BBBB")});
  ASSERT_EQ(sb.Code(Id(b, 2)), 0);
  ProtocolStream sa(stub_.get());
  sa.Send({AllocBytes(Id(a, 1), 0, 4),
           // a's operation naming b's handle.
           TransferFromTo(Id(a, 2), Id(b, 1), Id(a, 1)),
           // b's id on a's stream.
           Dealloc(Id(b, 3), Id(b, 1))});
  EXPECT_EQ(sa.Code(Id(a, 1)), 0);
  auto borrowed = sa.Await(Id(a, 2));
  ASSERT_TRUE(borrowed.has_value());
  EXPECT_EQ(borrowed->status().code(),
            Code(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(
      borrowed->status().message(),
      HasSubstr(absl::StrCat("belongs to client ", b, ", not to client ", a)));
  EXPECT_EQ(sa.Code(Id(b, 3)), Code(absl::StatusCode::kPermissionDenied));
  sb.Send({TransferFrom(Id(b, 4), Id(b, 1))});
  auto intact = sb.Await(Id(b, 4));
  ASSERT_TRUE(intact.has_value());
  EXPECT_EQ(intact->transfer_from().data(), "BBBB");
  EXPECT_TRUE(sa.Finish().ok());
  EXPECT_TRUE(sb.Finish().ok());
  ExpectServesAFreshClient();
}

TEST_F(HostileTest, AFloodOfHandlesHitsOnlyTheFloodingClient) {
  const uint32_t a = OpenClient();
  const uint32_t b = OpenClient();
  ProtocolStream sa(stub_.get());
  std::vector<Entry> flood;
  for (int op = 1; op <= kHandleLimit + 6; ++op) {
    flood.push_back(AllocBytes(Id(a, op), 0, 1));
  }
  sa.Send(flood);
  int ok = 0;
  for (int op = 1; op <= kHandleLimit + 6; ++op) {
    auto e = sa.Await(Id(a, op));
    ASSERT_TRUE(e.has_value()) << op;
    if (e->status().code() == 0) {
      ++ok;
      continue;
    }
    EXPECT_EQ(e->status().code(), Code(absl::StatusCode::kResourceExhausted));
    EXPECT_EQ(e->status().message(),
              absl::StrCat("operation ", op, " (client ", a, "): client ", a,
                           " already holds ", kHandleLimit,
                           " live handles, the most one client may hold "
                           "(--max_handles_per_client); deallocate buffers "
                           "or unload programs first."));
  }
  EXPECT_EQ(ok, kHandleLimit);
  // Another client is unaffected.
  ProtocolStream sb(stub_.get());
  sb.Send({AllocBytes(Id(b, 1), 0, 1)});
  EXPECT_EQ(sb.Code(Id(b, 1)), 0);
  // A freed handle makes room again.
  sa.Send({Dealloc(Id(a, 100), Id(a, 1)),
           AllocBytes(Id(a, 101), 0, 1, {Id(a, 100)})});
  EXPECT_EQ(sa.Code(Id(a, 100)), 0);
  EXPECT_EQ(sa.Code(Id(a, 101)), 0);
  EXPECT_TRUE(sa.Finish().ok());
  EXPECT_TRUE(sb.Finish().ok());
  ExpectServesAFreshClient();
}

TEST_F(HostileTest, AFloodOfPendingOperationsHitsOnlyTheFloodingClient) {
  // Operations waiting for one that has not arrived stay pending.
  Start({"--unknown_handle_wait_ms=600000"});
  const uint32_t a = OpenClient();
  const uint32_t b = OpenClient();
  ProtocolStream sa(stub_.get());
  std::vector<Entry> waiting;
  for (int op = 100; op < 100 + kPendingLimit; ++op) {
    waiting.push_back(AllocBytes(Id(a, op), 0, 1, {Id(a, 1)}));
  }
  sa.Send(waiting);
  sa.Send({AllocBytes(Id(a, 200), 0, 1)});
  auto refused = sa.Await(Id(a, 200));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status().code(),
            Code(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(refused->status().message(),
            absl::StrCat("operation 200 (client ", a, "): client ", a,
                         " already has ", kPendingLimit,
                         " operations pending, the most one client may have "
                         "(--max_pending_operations_per_client); wait for "
                         "some to complete before sending more."));
  ProtocolStream sb(stub_.get());
  sb.Send({AllocBytes(Id(b, 1), 0, 1)});
  EXPECT_EQ(sb.Code(Id(b, 1)), 0);
  // The awaited operation was refused too (the client was at its limit),
  // so every waiting operation fails with it.
  sa.Send({AllocBytes(Id(a, 1), 0, 1)});
  EXPECT_EQ(sa.Code(Id(a, 1)), Code(absl::StatusCode::kResourceExhausted));
  for (int op = 100; op < 100 + kPendingLimit; ++op) {
    EXPECT_NE(sa.Code(Id(a, op)), 0) << op;
  }
  // Once answered, the client may send again.
  sa.Send({AllocBytes(Id(a, 300), 0, 1)});
  EXPECT_EQ(sa.Code(Id(a, 300)), 0);
  EXPECT_TRUE(sa.Finish().ok());
  EXPECT_TRUE(sb.Finish().ok());
  ExpectServesAFreshClient();
}

}  // namespace
}  // namespace tpu
