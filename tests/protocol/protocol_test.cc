// The emulator over real gRPC on a loopback port, driven with the generated
// stub exactly as a real TPU client drives a Cloud TPU worker.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "emulator/service/server.h"
#include "emulator/worker/test_programs.h"
#include "emulator/worker/test_requests.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "hlo/shape.h"
#include "tests/protocol/protocol_client.h"

namespace tpu {
namespace {

using namespace emulator::test_requests;  // NOLINT: builders read best
                                          // unqualified
using absl::StatusCode;

constexpr int64_t kHbm = int64_t{256} << 20;

int C(StatusCode code) { return static_cast<int>(code); }

class ProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    emulator::ServerOptions options;
    options.port = 0;
    options.worker.hbm_bytes_per_core = kHbm;
    options.worker.unknown_handle_wait_ms = 300;
    options.worker.compute_threads = 1;
    auto server = emulator::Server::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = NewStub(server_->address());
  }

  void TearDown() override {
    streams_.clear();
    stub_.reset();
    server_.reset();
  }

  uint32_t Open() {
    grpc::ClientContext context;
    tpu_driver::OpenRequest request;
    tpu_driver::OpenResponse response;
    grpc::Status status = stub_->Open(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.client_id();
  }

  grpc::Status Close(uint32_t client) {
    grpc::ClientContext context;
    tpu_driver::CloseRequest request;
    request.set_client_id(client);
    tpu_driver::CloseResponse response;
    return stub_->Close(&context, request, &response);
  }

  grpc::Status Reset() {
    grpc::ClientContext context;
    tpu_driver::ResetResponse response;
    return stub_->Reset(&context, tpu_driver::ResetRequest(), &response);
  }

  tpu_driver::SystemInfo Info() {
    grpc::ClientContext context;
    tpu_driver::QuerySystemInfoResponse response;
    grpc::Status status = stub_->QuerySystemInfo(
        &context, tpu_driver::QuerySystemInfoRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.system_info();
  }

  int64_t Available(int core) {
    const tpu_driver::SystemInfo info = Info();
    for (const auto& c : info.local_core()) {
      if (c.id() == core) return c.hbm_bytes_available();
    }
    return -1;
  }

  // Polls (bounded) until core `core` has `bytes` available.
  bool AwaitAvailable(int core, int64_t bytes) {
    for (int i = 0; i < 400; ++i) {
      if (Available(core) == bytes) return true;
      absl::SleepFor(absl::Milliseconds(25));
    }
    return false;
  }

  ProtocolStream& NewStream() {
    streams_.push_back(std::make_unique<ProtocolStream>(stub_.get()));
    return *streams_.back();
  }

  std::unique_ptr<emulator::Server> server_;
  std::unique_ptr<tpu_driver::CloudTpuDriver::Stub> stub_;
  std::vector<std::unique_ptr<ProtocolStream>> streams_;
};

TEST_F(ProtocolTest, SystemInfoDescribesAV3EightWorker) {
  const tpu_driver::SystemInfo info = Info();
  EXPECT_EQ(info.tpu_chip_size(), 4);
  EXPECT_EQ(info.local_core_size(), 8);
  EXPECT_EQ(info.core_count(), 8);
  EXPECT_EQ(info.chip_count(), 4);
  EXPECT_EQ(info.host_count(), 1);
  EXPECT_EQ(info.host_id(), 0);
  for (const auto& chip : info.tpu_chip()) {
    EXPECT_TRUE(chip.has_chip_coord());
    EXPECT_TRUE(chip.has_host_id());
  }
  EXPECT_EQ(info.local_core(5).hbm_bytes_available(), kHbm);
  EXPECT_EQ(info.local_core(5).hbm_bytes_allocatable(), kHbm);
  EXPECT_GT(info.cpu().num_cpu_cores(), 0);
  EXPECT_GT(info.cpu().ram_bytes_total(), 0);
}

TEST_F(ProtocolTest, EveryStatusCarriesItsCodeEvenWhenOk) {
  const uint32_t c = Open();
  ProtocolStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 0, 0), TransferFrom(Id(c, 2), Id(c, 1))});
  auto alloc = s.Await(Id(c, 1));
  ASSERT_TRUE(alloc.has_value());
  EXPECT_TRUE(alloc->status().has_code());
  EXPECT_EQ(alloc->status().code(), 0);
  EXPECT_EQ(alloc->operation_id(), Id(c, 1));
  // An empty buffer's transfer still carries the (required) data field.
  auto empty = s.Await(Id(c, 2));
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->status().has_code());
  EXPECT_TRUE(empty->has_transfer_from());
  EXPECT_TRUE(empty->transfer_from().has_data());
  EXPECT_EQ(empty->transfer_from().data(), "");
  // Re-encode and check the bytes: field 10 (status) holds field 1 (code).
  std::string wire;
  ASSERT_TRUE(empty->SerializeToString(&wire));
  tpu_driver::StreamResponse::Entry reparsed;
  ASSERT_TRUE(reparsed.ParseFromString(wire));  // required fields all there
}

TEST_F(ProtocolTest, ManyEntriesComeBackBatched) {
  const uint32_t c = Open();
  ProtocolStream& s = NewStream();
  std::vector<Entry> entries;
  for (int i = 1; i <= 100; ++i) entries.push_back(AllocBytes(Id(c, i), 3, 16));
  s.Send(std::move(entries));
  for (int i = 1; i <= 100; ++i) ASSERT_EQ(s.Code(Id(c, i)), 0) << i;
  EXPECT_EQ(s.messages(), 1);
  EXPECT_EQ(Available(3), kHbm - 1600);
}

TEST_F(ProtocolTest, OutOfOrderDependenciesAcrossTwoStreams) {
  const uint32_t c = Open();
  ProtocolStream& core0 = NewStream();
  ProtocolStream& host = NewStream();
  // The dependent arrives first, on another stream, naming a handle and a
  // wait_for_id that do not exist yet.
  host.Send({TransferFrom(Id(c, 3), Id(c, 1), {Id(c, 2)})});
  EXPECT_EQ(host.Code(Id(c, 3), absl::Milliseconds(50)), -1);
  core0.Send({AllocShape(Id(c, 1), 0, Shape::Array(xla::F32, {2}))});
  core0.Send({TransferTo(Id(c, 2), Id(c, 1), F32Bytes({1.5f, -2.0f}))});
  auto r = host.Await(Id(c, 3));
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->status().code(), 0) << r->status().message();
  EXPECT_EQ(FromF32Bytes(r->transfer_from().data()),
            (std::vector<float>{1.5f, -2.0f}));
}

TEST_F(ProtocolTest, ErrorsHaveExactCodes) {
  const uint32_t c = Open();
  const uint32_t other = Open();
  ProtocolStream& s_other = NewStream();
  s_other.Send({AllocBytes(Id(other, 1), 0, 4)});
  ASSERT_EQ(s_other.Code(Id(other, 1)), 0);
  ProtocolStream& s = NewStream();
  xla::ShapeProto negative = Shape::Array(xla::F32, {4}).ToProto();
  negative.set_dimensions(0, -1);
  Entry bad_shape = Base(Id(c, 8));
  bad_shape.mutable_alloc()->set_core_id(0);
  bad_shape.mutable_alloc()->set_region(tpu_driver::HBM);
  *bad_shape.mutable_alloc()->mutable_shape() = negative;
  s.Send({
      TransferFrom(Id(c, 100), Id(c, 99)),   // unknown handle
      TransferFrom(Id(c, 1), Id(c, 900)),    // a later op's id
      TransferFrom(Id(c, 2), Id(other, 1)),  // another client's
      Base(Id(c, 3)),                        // empty oneof
      AllocShape(Id(c, 4), 0, Shape::Array(xla::F32, {4})),
      TransferTo(Id(c, 5), Id(c, 4), std::string(15, 'x')),  // wrong size
      AllocBytes(Id(c, 6), 0, kHbm + 1),                     // over capacity
      AllocBytes(Id(c, 7), 12, 4),                           // no such core
      bad_shape,                            // negative dimension
      AllocBytes(Id(c, 9), 0, -4),          // negative size
      AllocBytes(Id(c, 10), 0, INT64_MAX),  // huge size
      Compile(Id(c, 11), emulator::test_programs::UnknownOpcode()),
      Compile(Id(c, 12), xla::HloProto()),      // no module at all
      TransferTo(Id(c, 13), Id(c, 7), "abcd"),  // failed dependency
  });
  EXPECT_EQ(s.Code(Id(c, 100)), C(StatusCode::kNotFound));
  EXPECT_EQ(s.Code(Id(c, 1)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 2)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 3)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 4)), 0);
  EXPECT_EQ(s.Code(Id(c, 5)), C(StatusCode::kInvalidArgument));
  auto over = s.Await(Id(c, 6));
  EXPECT_EQ(over->status().code(), C(StatusCode::kResourceExhausted));
  EXPECT_NE(over->status().message().find(absl::StrCat(
                "requested ", kHbm + 1, " bytes, 20 bytes in use of ", kHbm,
                " bytes capacity")),
            std::string::npos)
      << over->status().message();
  EXPECT_EQ(s.Code(Id(c, 7)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 8)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 9)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(s.Code(Id(c, 10)), C(StatusCode::kResourceExhausted));
  auto garbage = s.Await(Id(c, 11));
  EXPECT_EQ(garbage->status().code(), C(StatusCode::kUnimplemented))
      << garbage->status().message();
  EXPECT_EQ(s.Code(Id(c, 12)), C(StatusCode::kInvalidArgument));
  auto dependent = s.Await(Id(c, 13));
  EXPECT_EQ(dependent->status().code(), C(StatusCode::kInvalidArgument));
  EXPECT_NE(dependent->status().message().find(
                absl::StrCat("operation 7 (client ", c, ") failed")),
            std::string::npos)
      << dependent->status().message();
  // The stream survived all of it.
  s.Send({AllocBytes(Id(c, 14), 0, 4)});
  EXPECT_EQ(s.Code(Id(c, 14)), 0);
}

// Sends raw bytes on StreamExecute, as a client with its own encoder (or a
// broken one) might: protobuf's typed stub refuses to send what we test.
std::vector<tpu_driver::StreamResponse> RawStream(
    const std::string& address, const std::vector<std::string>& messages,
    grpc::Status* final_status) {
  auto channel =
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                RealClientChannelArguments());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  auto call = stub.PrepareCall(&context,
                               "/tpu_driver.CloudTpuDriver/StreamExecute", &cq);
  void* tag = nullptr;
  bool ok = false;
  auto step = [&](intptr_t expected) {
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(reinterpret_cast<intptr_t>(tag), expected);
    return ok;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  step(1);
  for (const std::string& m : messages) {
    grpc::Slice slice(m);
    grpc::ByteBuffer bytes(&slice, 1);
    call->Write(bytes, reinterpret_cast<void*>(2));
    EXPECT_TRUE(step(2));
  }
  call->WritesDone(reinterpret_cast<void*>(3));
  step(3);
  std::vector<tpu_driver::StreamResponse> responses;
  while (true) {
    grpc::ByteBuffer bytes;
    call->Read(&bytes, reinterpret_cast<void*>(4));
    if (!step(4)) break;
    std::vector<grpc::Slice> slices;
    EXPECT_TRUE(bytes.Dump(&slices).ok());
    std::string joined;
    for (const auto& sl : slices) {
      joined.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
    }
    tpu_driver::StreamResponse response;
    EXPECT_TRUE(response.ParseFromString(joined));  // required fields present
    responses.push_back(response);
  }
  call->Finish(final_status, reinterpret_cast<void*>(5));
  step(5);
  return responses;
}

TEST_F(ProtocolTest, UnparseableMessagesAndMissingFieldsDoNotEndTheStream) {
  const uint32_t c = Open();
  tpu_driver::StreamRequest partial;
  Entry no_id = AllocBytes(0, 0, 4);
  no_id.clear_operation_id();  // a required field
  *partial.add_entry() = no_id;
  Entry no_region = AllocBytes(Id(c, 1), 0, 4);
  no_region.mutable_alloc()->clear_region();  // required, defaults to HBM
  *partial.add_entry() = no_region;
  tpu_driver::StreamRequest valid;
  *valid.add_entry() = AllocBytes(Id(c, 2), 0, 4);
  grpc::Status status;
  auto responses =
      RawStream(server_->address(),
                {std::string("\xff\xff\xff\xff garbage"),
                 partial.SerializePartialAsString(), valid.SerializeAsString()},
                &status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  std::map<int64_t, std::vector<int>> codes;
  for (const auto& r : responses) {
    for (const auto& e : r.entry()) {
      codes[e.operation_id()].push_back(e.status().code());
    }
  }
  EXPECT_EQ(codes[0], (std::vector<int>{C(StatusCode::kInvalidArgument),
                                        C(StatusCode::kInvalidArgument)}));
  EXPECT_EQ(codes[Id(c, 1)], std::vector<int>{0});
  EXPECT_EQ(codes[Id(c, 2)], std::vector<int>{0});
}

TEST_F(ProtocolTest, TwoClientsAtOnceAreIsolated) {
  const uint32_t a = Open();
  const uint32_t b = Open();
  ProtocolStream& sa = NewStream();
  ProtocolStream& sb = NewStream();
  // Same operation numbers, different clients: no interference.
  sa.Send({AllocBytes(Id(a, 1), 0, 4), TransferTo(Id(a, 2), Id(a, 1), "AAAA"),
           TransferFrom(Id(a, 3), Id(a, 1), {Id(a, 2)})});
  sb.Send({AllocBytes(Id(b, 1), 0, 4), TransferTo(Id(b, 2), Id(b, 1), "BBBB"),
           TransferFrom(Id(b, 3), Id(b, 1), {Id(b, 2)})});
  EXPECT_EQ(sa.Await(Id(a, 3))->transfer_from().data(), "AAAA");
  EXPECT_EQ(sb.Await(Id(b, 3))->transfer_from().data(), "BBBB");
  sb.Send({TransferFrom(Id(b, 4), Id(a, 1)), Dealloc(Id(b, 5), Id(a, 1))});
  EXPECT_EQ(sb.Code(Id(b, 4)), C(StatusCode::kInvalidArgument));
  EXPECT_EQ(sb.Code(Id(b, 5)), C(StatusCode::kInvalidArgument));
  ASSERT_TRUE(Close(a).ok());
  sb.Send({TransferFrom(Id(b, 6), Id(b, 1))});
  EXPECT_EQ(sb.Await(Id(b, 6))->transfer_from().data(), "BBBB");
}

TEST_F(ProtocolTest, CloseAndResetReleaseMemory) {
  const uint32_t a = Open();
  const uint32_t b = Open();
  ProtocolStream& sa = NewStream();
  ProtocolStream& s = NewStream();
  sa.Send({AllocBytes(Id(a, 1), 1, 1 << 20)});
  s.Send({AllocBytes(Id(b, 1), 1, 2 << 20)});
  ASSERT_EQ(sa.Code(Id(a, 1)), 0);
  ASSERT_EQ(s.Code(Id(b, 1)), 0);
  EXPECT_EQ(Available(1), kHbm - (3 << 20));
  ASSERT_TRUE(Close(a).ok());
  EXPECT_EQ(Available(1), kHbm - (2 << 20));
  ASSERT_TRUE(Reset().ok());
  EXPECT_EQ(Available(1), kHbm);
  s.Send({AllocBytes(Id(b, 2), 1, 4)});
  EXPECT_EQ(s.Code(Id(b, 2)), C(StatusCode::kFailedPrecondition));
  // Close of an id nobody has (the real client closes after Reset).
  EXPECT_TRUE(Close(b).ok());
  EXPECT_TRUE(Close(777777).ok());
}

TEST_F(ProtocolTest, SixtyFourMebibyteTransferInOneMessage) {
  const uint32_t c = Open();
  ProtocolStream& s = NewStream();
  const int64_t n = int64_t{64} << 20;
  std::string data(n, '\0');
  for (int64_t i = 0; i < n; i += 4096) data[i] = static_cast<char>(i / 4096);
  data[n - 1] = 'z';
  s.Send({AllocBytes(Id(c, 1), 2, n), TransferTo(Id(c, 2), Id(c, 1), data),
          TransferFrom(Id(c, 3), Id(c, 1), {Id(c, 2)})});
  auto r = s.Take(Id(c, 3), absl::Seconds(120));
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->status().code(), 0) << r->status().message();
  EXPECT_TRUE(r->transfer_from().data() == data);
}

TEST_F(ProtocolTest, HalfCloseEndsCallAfterAnsweringInFlight) {
  const uint32_t c = Open();
  ProtocolStream s(stub_.get());
  // Still waiting (for a handle that never comes) when the client is done.
  s.Send({TransferFrom(Id(c, 2), Id(c, 1)), AllocBytes(Id(c, 3), 0, 8)});
  grpc::Status status = s.Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(s.Code(Id(c, 2), absl::ZeroDuration()), C(StatusCode::kNotFound));
  EXPECT_EQ(s.Code(Id(c, 3), absl::ZeroDuration()), 0);
  // The client itself lives on: a half-close is not a broken stream.
  EXPECT_EQ(Available(0), kHbm - 8);
}

TEST_F(ProtocolTest, BrokenStreamReleasesItsClient) {
  const uint32_t c = Open();
  {
    ProtocolStream s(stub_.get());
    s.Send({AllocBytes(Id(c, 1), 4, 4096)});
    ASSERT_EQ(s.Code(Id(c, 1)), 0);
    EXPECT_EQ(Available(4), kHbm - 4096);
    s.Cancel();
  }
  EXPECT_TRUE(AwaitAvailable(4, kHbm));
}

TEST_F(ProtocolTest, WaitForZeroIsAccepted) {
  const uint32_t c = Open();
  ProtocolStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 0, 4, {0})});
  EXPECT_EQ(s.Code(Id(c, 1)), 0);
}

TEST_F(ProtocolTest, IdleConnectionSurvivesKeepalivePings) {
  // The real client pings every 1.5 s even when idle; gRPC's default server
  // policy would answer with GOAWAY "too_many_pings" after a few seconds.
  const uint32_t c = Open();
  ProtocolStream& s = NewStream();
  s.Send({AllocBytes(Id(c, 1), 0, 4)});
  ASSERT_EQ(s.Code(Id(c, 1)), 0);
  absl::SleepFor(absl::Seconds(5));
  ASSERT_TRUE(s.Send({AllocBytes(Id(c, 2), 0, 4)}));
  EXPECT_EQ(s.Code(Id(c, 2)), 0);
  EXPECT_EQ(Available(0), kHbm - 8);
}

TEST_F(ProtocolTest, AllocTransferCompileLoadExecuteTransferBack) {
  const uint32_t c = Open();
  ProtocolStream& core0 = NewStream();
  ProtocolStream& core6 = NewStream();
  const Shape f32 = Shape::Array(xla::F32, {4});
  // Compile on core 0's stream, load and execute on core 6's, as the real
  // client does.
  core0.Send({Compile(Id(c, 1), emulator::test_programs::AddF32(4))});
  core6.Send({AllocShape(Id(c, 2), 6, f32), AllocShape(Id(c, 3), 6, f32),
              AllocShape(Id(c, 4), 6, f32),
              TransferTo(Id(c, 5), Id(c, 2), F32Bytes({1, -2, 3.25f, 1e30f})),
              TransferTo(Id(c, 6), Id(c, 3), F32Bytes({4, 2, 0.75f, 1e30f})),
              Load(Id(c, 7), 6, Id(c, 1)),
              Execute(Id(c, 8), Id(c, 7), {Id(c, 2), Id(c, 3)}, {Id(c, 4)}, 6,
                      {Id(c, 5), Id(c, 6)}),
              TransferFrom(Id(c, 9), Id(c, 4), {Id(c, 8)})});
  auto compiled = core0.Await(Id(c, 1));
  ASSERT_EQ(compiled->status().code(), 0) << compiled->status().message();
  EXPECT_EQ(compiled->compile().metadata().program_shape().parameters_size(),
            2);
  auto r = core6.Await(Id(c, 9));
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(core6.Code(Id(c, 8)), 0)
      << core6.Await(Id(c, 8))->status().message();
  EXPECT_EQ(FromF32Bytes(r->transfer_from().data()),
            (std::vector<float>{5, 0, 4, 2e30f}));
}

TEST_F(ProtocolTest, ExecuteWithWrongShapeIsInvalidArgument) {
  const uint32_t c = Open();
  ProtocolStream& s = NewStream();
  s.Send({Compile(Id(c, 1), emulator::test_programs::AddF32(4)),
          Load(Id(c, 2), 0, Id(c, 1)),
          AllocShape(Id(c, 3), 0, Shape::Array(xla::F32, {4})),
          AllocShape(Id(c, 4), 0, Shape::Array(xla::F32, {5})),
          Execute(Id(c, 5), Id(c, 2), {Id(c, 3), Id(c, 4)}, {Id(c, 3)}, 0)});
  EXPECT_EQ(s.Code(Id(c, 5)), C(StatusCode::kInvalidArgument));
}

TEST_F(ProtocolTest, CloseAndResetReleaseAHeldProgram) {
  // A program that never ends (while (true)) holds its core until the client
  // is closed; this is what lets clients test deadlines.
  for (bool reset : {false, true}) {
    const uint32_t c = Open();
    ProtocolStream& s = NewStream();
    const Shape s32 = Shape::Scalar(xla::S32);
    s.Send({Compile(Id(c, 1), emulator::test_programs::InfiniteLoop()),
            Load(Id(c, 2), 7, Id(c, 1)), AllocShape(Id(c, 3), 7, s32),
            Execute(Id(c, 4), Id(c, 2), {Id(c, 3)}, {Id(c, 3)}, 7)});
    ASSERT_EQ(s.Code(Id(c, 2)), 0);
    EXPECT_EQ(s.Code(Id(c, 4), absl::Milliseconds(100)), -1);
    ASSERT_TRUE(reset ? Reset().ok() : Close(c).ok());
    EXPECT_EQ(s.Code(Id(c, 4)), C(StatusCode::kCancelled)) << reset;
    EXPECT_EQ(Available(7), kHbm);
  }
}

}  // namespace
}  // namespace tpu
