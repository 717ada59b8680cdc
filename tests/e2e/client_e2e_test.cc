// TpuClient end to end: every client operation through a real emulator, once
// over grpc:// (an in-process server on a loopback port) and once through
// local:// (the emulator in this process, no network).

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/tpu_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_executable.h"
#include "emulator/service/server.h"
#include "gtest/gtest.h"
#include "tests/e2e/programs.h"
#include "tools/lib/ports.h"

namespace tpu {
namespace {

using e2e::ParseProgram;

Literal F32(std::vector<int64_t> dims, std::vector<float> values) {
  return Literal::FromVector<float>(xla::F32, std::move(dims), values);
}
Literal S32(std::vector<int64_t> dims, std::vector<int32_t> values) {
  return Literal::FromVector<int32_t>(xla::S32, std::move(dims), values);
}
// An array of `type` whose bytes are `bytes` (any element type).
Literal Raw(xla::PrimitiveType type, std::vector<int64_t> dims,
            const std::string& bytes) {
  auto buffer = AlignedBuffer::Allocate(static_cast<int64_t>(bytes.size()));
  std::memcpy(buffer->data(), bytes.data(), bytes.size());
  absl::StatusOr<Literal> literal =
      Literal::FromBuffer(Shape::Array(type, std::move(dims)), buffer);
  EXPECT_TRUE(literal.ok()) << literal.status();
  return *std::move(literal);
}
std::string Bytes(const Literal& literal) {
  return std::string(static_cast<const char*>(literal.untyped_data()),
                     literal.size_bytes());
}

class ClientE2ETest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    emulator::ServerOptions options;
    options.port = 0;
    options.worker.chips = 4;
    options.worker.cores_per_chip = 2;
    options.worker.compute_threads = 2;
    absl::StatusOr<std::unique_ptr<emulator::Server>> server =
        emulator::Server::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  std::string Address() const {
    if (GetParam() == "grpc")
      return absl::StrCat("grpc://", server_->address());
    return "local://?chips=4&cores_per_chip=2&compute_threads=2";
  }

  std::shared_ptr<client::TpuClient> Connect(
      client::ClientOptions options = {}) {
    absl::StatusOr<std::shared_ptr<client::TpuClient>> client =
        client::TpuClient::Get(Address(), options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *client : nullptr;
  }

  std::unique_ptr<client::TpuBuffer> Upload(
      const std::shared_ptr<client::TpuClient>& client, const Literal& literal,
      int device = 0) {
    absl::StatusOr<std::unique_ptr<client::TpuBuffer>> buffer =
        client::TpuBuffer::FromLiteral(literal, client, device);
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    return buffer.ok() ? *std::move(buffer) : nullptr;
  }

  static emulator::Server* server_;
};

emulator::Server* ClientE2ETest::server_ = nullptr;

TEST_P(ClientE2ETest, OneDevicePerCore) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(client->device_count(), 8);
  EXPECT_EQ(client->local_device_count(), 8);
  for (int i = 0; i < 8; ++i) {
    const client::TpuDevice& device = *client->devices()[i];
    EXPECT_EQ(device.id(), i);
    EXPECT_EQ(device.ToString(), absl::StrCat("TPU_", i));
    EXPECT_EQ(device.core_on_chip(), i % 2);
    EXPECT_EQ(device.host_id(), client->host_id());
  }
}

TEST_P(ClientE2ETest, ArraysRoundTripBitExact) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  // NaN payloads, signed zeros, denormals and odd sizes, in every 8/16/32-bit
  // element type the client accepts.
  const std::string f32_bits(
      "\x34\x12\xc0\x7f\x00\x00\x00\x80\x01\x00\x00\x00"
      "\xff\xff\x7f\xff\x00\x00\x80\x3f",
      20);
  std::vector<Literal> literals = {
      Raw(xla::F32, {5}, f32_bits),
      Raw(xla::BF16, {3}, std::string("\xc1\x7f\x80\x00\x49\x40", 6)),
      Raw(xla::F16, {2}, std::string("\x01\x7e\x00\x80", 4)),
      Raw(xla::S8, {3}, std::string("\x80\x7f\x00", 3)),
      Raw(xla::U16, {1, 2}, std::string("\xff\xff\x01\x00", 4)),
      Raw(xla::PRED, {4}, std::string("\x01\x00\x00\x01", 4)),
      Raw(xla::C64, {1}, std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8)),
      S32({2, 3, 1}, {1, -2, 3, -4, 5, 2147483647}),
      F32({}, {42.5f}),
      F32({0}, {}),
  };
  for (int device = 0; device < 8; device += 3) {
    for (const Literal& literal : literals) {
      std::unique_ptr<client::TpuBuffer> buffer =
          Upload(client, literal, device);
      ASSERT_NE(buffer, nullptr);
      EXPECT_TRUE(buffer->BlockHostUntilReady().ok());
      absl::StatusOr<Literal> back = buffer->ToLiteral();
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(back->shape(), literal.shape());
      EXPECT_EQ(Bytes(*back), Bytes(literal)) << literal.shape().ToString();
    }
  }
}

TEST_P(ClientE2ETest, NestedTuplesRoundTrip) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  Literal literal = Literal::Tuple(
      {F32({2}, {1.5f, -2.5f}),
       Literal::Tuple({S32({}, {7}), Literal::Tuple({S32({1}, {-9})})})});
  std::unique_ptr<client::TpuBuffer> buffer = Upload(client, literal, 4);
  ASSERT_NE(buffer, nullptr);
  ASSERT_TRUE(buffer->CopyToHostAsync().ok());
  absl::StatusOr<Literal> back = buffer->ToLiteral();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, literal);

  absl::StatusOr<std::vector<std::unique_ptr<client::TpuBuffer>>> elements =
      buffer->DestructureTuple();
  ASSERT_TRUE(elements.ok()) << elements.status();
  ASSERT_EQ(elements->size(), 2u);
  buffer.reset();  // the elements keep their memory
  EXPECT_EQ(*(*elements)[0]->ToLiteral(), literal.element(0));
  EXPECT_EQ(*(*elements)[1]->ToLiteral(), literal.element(1));
}

TEST_P(ClientE2ETest, AllocateMakeTupleAndDelete) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  Shape shape = Shape::Tuple({Shape::Array(xla::F32, {128}),
                              Shape::Tuple({Shape::Array(xla::S32, {3})})});
  absl::StatusOr<std::unique_ptr<client::TpuBuffer>> allocated =
      client::TpuBuffer::AllocateBuffer(shape, client, 2);
  ASSERT_TRUE(allocated.ok()) << allocated.status();
  EXPECT_TRUE((*allocated)->BlockHostUntilReady().ok());
  EXPECT_EQ((*allocated)->on_host_shape(), shape);

  std::unique_ptr<client::TpuBuffer> a = Upload(client, F32({2}, {1, 2}), 2);
  std::unique_ptr<client::TpuBuffer> b = Upload(client, S32({}, {3}), 2);
  std::vector<client::TpuBuffer*> elements = {a.get(), b.get()};
  absl::StatusOr<std::unique_ptr<client::TpuBuffer>> tuple =
      client::TpuBuffer::MakeTuple(elements, client, 2);
  ASSERT_TRUE(tuple.ok()) << tuple.status();
  a->Delete();
  EXPECT_TRUE(a->IsDeleted());
  EXPECT_EQ(a->ToLiteral().status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Literal> back = (*tuple)->ToLiteral();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Literal::Tuple({F32({2}, {1, 2}), S32({}, {3})}));
  (*allocated)->Delete();
  EXPECT_EQ((*allocated)->BlockHostUntilReady().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(ClientE2ETest, CopyToDevice) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  Literal literal = S32({2, 2}, {11, -22, 33, -44});
  std::unique_ptr<client::TpuBuffer> src = Upload(client, literal, 0);
  ASSERT_NE(src, nullptr);

  absl::StatusOr<std::unique_ptr<client::TpuBuffer>> same =
      src->CopyToDevice(0);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ((*same)->device_buffer(), src->device_buffer());

  std::vector<std::unique_ptr<client::TpuBuffer>> copies;
  for (int d = 1; d < 8; ++d) {
    absl::StatusOr<std::unique_ptr<client::TpuBuffer>> copy =
        src->CopyToDevice(d);
    ASSERT_TRUE(copy.ok()) << copy.status();
    EXPECT_EQ((*copy)->device()->id(), d);
    copies.push_back(*std::move(copy));
  }
  src.reset();  // copies must not depend on the source any more
  same->reset();
  for (auto& copy : copies) {
    absl::StatusOr<Literal> back = copy->ToLiteral();
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, literal);
  }
  // A copy of a copy, back to core 0.
  absl::StatusOr<std::unique_ptr<client::TpuBuffer>> back_home =
      copies[6]->CopyToDevice(0);
  ASSERT_TRUE(back_home.ok());
  EXPECT_EQ(*(*back_home)->ToLiteral(), literal);

  std::unique_ptr<client::TpuBuffer> tuple =
      Upload(client, Literal::Tuple({literal}), 0);
  absl::StatusOr<std::unique_ptr<client::TpuBuffer>> tuple_copy =
      tuple->CopyToDevice(1);
  EXPECT_EQ(tuple_copy.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(tuple_copy.status().message(),
            "CopyToDevice for tuples is not supported.");
}

TEST_P(ClientE2ETest, Rejects64BitTypes) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::unique_ptr<client::TpuBuffer>> buffer =
      client::TpuBuffer::FromLiteral(
          Literal::FromVector<double>(xla::F64, {2}, {1.0, 2.0}), client, 0);
  ASSERT_FALSE(buffer.ok());
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(buffer.status().message(),
            "64-bit data types are not yet supported on the TPU driver API. "
            "Convert inputs to float32/int32 before using.");
  buffer = client::TpuBuffer::FromLiteral(
      Literal::FromVector<int64_t>(xla::S64, {1}, {int64_t{5}}), client, 0);
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(ClientE2ETest, MatmulBiasRelu) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::unique_ptr<client::TpuExecutable>> executable =
      client::TpuExecutable::Compile(ParseProgram(e2e::kMatmulBiasRelu), {},
                                     client);
  ASSERT_TRUE(executable.ok()) << executable.status();
  EXPECT_EQ((*executable)->result_shape(), Shape::Array(xla::F32, {2, 4}));

  const std::vector<float> x = {1, -2, 3, 0.5f, 4, -1};
  const std::vector<float> w = {1, 0, -1, 2, 0.25f, 1, 0, -3, 2, -1, 1, 0.5f};
  const std::vector<float> b = {0.5f, -10, 1, 0};
  std::vector<float> expected(8);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      float sum = 0;  // exact: every term and partial sum fits in f32
      for (int k = 0; k < 3; ++k) sum += x[i * 3 + k] * w[k * 4 + j];
      sum += b[j];
      expected[i * 4 + j] = sum > 0 ? sum : 0;
    }
  }
  std::unique_ptr<client::TpuBuffer> xb = Upload(client, F32({2, 3}, x));
  std::unique_ptr<client::TpuBuffer> wb = Upload(client, F32({3, 4}, w));
  std::unique_ptr<client::TpuBuffer> bb = Upload(client, F32({4}, b));
  std::vector<client::TpuBuffer*> args = {xb.get(), wb.get(), bb.get()};
  absl::StatusOr<std::vector<std::unique_ptr<client::TpuBuffer>>> result =
      (*executable)->Execute(args);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->size(), 1u);
  absl::StatusOr<Literal> out = (*result)[0]->ToLiteral();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Bytes(*out), Bytes(F32({2, 4}, expected)));
  // Twice, to run a loaded program again with the same inputs.
  result = (*executable)->Execute(args);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Bytes(*(*result)[0]->ToLiteral()), Bytes(F32({2, 4}, expected)));
}

TEST_P(ClientE2ETest, TupleArgumentsAndResults) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::unique_ptr<client::TpuExecutable>> executable =
      client::TpuExecutable::Compile(ParseProgram(e2e::kTuples), {}, client);
  ASSERT_TRUE(executable.ok()) << executable.status();
  std::unique_ptr<client::TpuBuffer> t = Upload(
      client, Literal::Tuple({F32({2}, {1.5f, -0.0f}), S32({3}, {1, 2, 3})}));
  std::unique_ptr<client::TpuBuffer> s = Upload(client, S32({}, {10}));
  std::vector<client::TpuBuffer*> args = {t.get(), s.get()};
  absl::StatusOr<std::vector<std::unique_ptr<client::TpuBuffer>>> result =
      (*executable)->Execute(args);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->size(), 2u);
  absl::StatusOr<Literal> inner = (*result)[0]->ToLiteral();
  ASSERT_TRUE(inner.ok()) << inner.status();
  EXPECT_EQ(*inner,
            Literal::Tuple({F32({2}, {-1.5f, 0.0f}), S32({3}, {11, 12, 13})}));
  EXPECT_EQ(*(*result)[1]->ToLiteral(), S32({}, {10}));
}

TEST_P(ClientE2ETest, EightReplicasWithPerReplicaInputs) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  client::CompileOptions options;
  options.num_replicas = 8;
  absl::StatusOr<std::unique_ptr<client::TpuExecutable>> executable =
      client::TpuExecutable::Compile(ParseProgram(e2e::kTwiceXPlusOne), options,
                                     client);
  ASSERT_TRUE(executable.ok()) << executable.status();
  ASSERT_EQ((*executable)->local_devices().size(), 8u);

  std::vector<std::unique_ptr<client::TpuBuffer>> inputs;
  std::vector<std::vector<client::TpuBuffer*>> args;
  for (int r = 0; r < 8; ++r) {
    inputs.push_back(Upload(
        client, F32({4}, {float(r), -float(r), r * 0.5f, 100.0f + r}), r));
    args.push_back({inputs.back().get()});
  }
  absl::StatusOr<std::vector<std::vector<std::unique_ptr<client::TpuBuffer>>>>
      results = (*executable)->ExecutePerReplica(args);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 8u);
  for (int r = 0; r < 8; ++r) {
    ASSERT_EQ((*results)[r].size(), 1u);
    EXPECT_EQ((*results)[r][0]->device()->id(), r);
    absl::StatusOr<Literal> out = (*results)[r][0]->ToLiteral();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(*out,
              F32({4}, {2.0f * r + 1, 1 - 2.0f * r, r + 1.0f, 201.0f + 2 * r}))
        << "replica " << r;
  }

  args.pop_back();
  results = (*executable)->ExecutePerReplica(args);
  EXPECT_EQ(results.status().message(),
            "Attempted to execute with 7 argument lists when local device "
            "count is 8 (total replica count: 8, partition count: 1).");
}

TEST_P(ClientE2ETest, ConcurrentExecutesOfOneProgram) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  auto executable = client::TpuExecutable::Compile(
      ParseProgram(e2e::kTwiceXPlusOne), {}, client);
  ASSERT_TRUE(executable.ok()) << executable.status();
  constexpr int kThreads = 8;
  constexpr int kRunsPerThread = 4;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRunsPerThread; ++i) {
        const float v = t * 100.0f + i;
        absl::StatusOr<std::unique_ptr<client::TpuBuffer>> input =
            client::TpuBuffer::FromLiteral(F32({4}, {v, -v, 0, 1}), client, 0);
        if (!input.ok()) {
          failures[t] = input.status().ToString();
          return;
        }
        std::vector<client::TpuBuffer*> args = {input->get()};
        auto result = (*executable)->Execute(args);
        // The inputs may go before the results are read.
        input->reset();
        if (!result.ok()) {
          failures[t] = result.status().ToString();
          return;
        }
        absl::StatusOr<Literal> out = (*result)[0]->ToLiteral();
        if (!out.ok() || *out != F32({4}, {2 * v + 1, 1 - 2 * v, 1, 3})) {
          failures[t] = absl::StrCat(
              "thread ", t, " run ", i, ": ",
              out.ok() ? out->ToString() : out.status().ToString());
          return;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& failure : failures) EXPECT_EQ(failure, "");
}

TEST_P(ClientE2ETest, ArgumentChecksHappenBeforeLaunch) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  auto executable = client::TpuExecutable::Compile(
      ParseProgram(e2e::kTwiceXPlusOne), {}, client);
  ASSERT_TRUE(executable.ok()) << executable.status();
  std::unique_ptr<client::TpuBuffer> wrong =
      Upload(client, F32({3}, {1, 2, 3}));
  std::vector<client::TpuBuffer*> args = {wrong.get()};
  auto result = (*executable)->Execute(args);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(result.status().message(),
                                "has shape f32[3] but the program expects "
                                "f32[4]"))
      << result.status();
}

TEST_P(ClientE2ETest, CompileErrorsAreReported) {
  std::shared_ptr<client::TpuClient> client = Connect();
  ASSERT_NE(client, nullptr);
  xla::HloModuleProto module = ParseProgram(e2e::kTwiceXPlusOne);
  // Point the root at an instruction that does not exist.
  module.mutable_computations(0)->set_root_id(987654);
  auto executable = client::TpuExecutable::Compile(module, {}, client);
  ASSERT_FALSE(executable.ok());
  EXPECT_NE(executable.status().code(), absl::StatusCode::kOk);
}

TEST_P(ClientE2ETest, ExecuteDeadlineFiresWithTheReferenceMessage) {
  absl::Mutex mu;
  std::vector<std::string> warnings;
  client::ClientOptions options;
  options.execute_warn_interval = absl::Milliseconds(20);
  options.execute_max_time = absl::Milliseconds(200);
  options.warning_handler = [&](absl::string_view line) {
    absl::MutexLock lock(&mu);
    warnings.emplace_back(line);
  };
  std::shared_ptr<client::TpuClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::unique_ptr<client::TpuExecutable>> executable =
      client::TpuExecutable::Compile(ParseProgram(e2e::kSpinForever), {},
                                     client);
  ASSERT_TRUE(executable.ok()) << executable.status();
  absl::StatusOr<std::vector<std::unique_ptr<client::TpuBuffer>>> result =
      (*executable)->Execute({});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(result.status().message(),
            "TPU program took more than 0 seconds to complete.");
  {
    absl::MutexLock lock(&mu);
    ASSERT_FALSE(warnings.empty());
    EXPECT_EQ(warnings[0],
              "TPU Execute is taking a long time. This might be due to a "
              "deadlock between multiple TPU cores or a very slow program.");
  }
  // Closing the client stops the program; nothing may hang here.
  executable->reset();
  client.reset();
}

INSTANTIATE_TEST_SUITE_P(Backends, ClientE2ETest,
                         ::testing::Values("grpc", "local"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(ClientConnectTest, UnreachableAddressIsUnavailable) {
  client::ClientOptions options;
  options.connection_timeout = absl::Seconds(1);
  absl::StatusOr<int> port = tools::UnusedLoopbackPort();
  ASSERT_TRUE(port.ok()) << port.status();
  const std::string address = absl::StrCat("grpc://127.0.0.1:", *port);
  absl::StatusOr<std::shared_ptr<client::TpuClient>> client =
      client::TpuClient::Get(address, options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(client.status().message(), address))
      << client.status();
}

TEST(ClientConnectTest, NegativeConnectTimeoutIsInvalidArgument) {
  client::ClientOptions options;
  options.connect_timeout = absl::Seconds(-1);
  absl::StatusOr<std::shared_ptr<client::TpuClient>> client =
      client::TpuClient::Get("grpc://127.0.0.1:8470", options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.status().message(),
            "Negative connection timeout (connect_timeout -1s, "
            "connection_timeout 30s).");
}

TEST(ClientConnectTest, UnknownSchemeIsInvalidArgument) {
  absl::StatusOr<std::shared_ptr<client::TpuClient>> client =
      client::TpuClient::Get("carrier-pigeon://tpu");
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(client.status().message(), "carrier-pigeon"))
      << client.status();
}

}  // namespace
}  // namespace tpu
