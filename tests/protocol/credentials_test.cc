// What the real client does for grpc://localhost: local credentials
// (LOCAL_TCP). Local credentials perform no handshake on the wire (they only
// check that the peer is on loopback), so the emulator's insecure port serves
// them as well as insecure clients; this test proves it end to end.

#include "grpcpp/security/credentials.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "emulator/service/server.h"
#include "emulator/worker/test_requests.h"
#include "gtest/gtest.h"
#include "tests/protocol/protocol_client.h"

namespace tpu {
namespace {

using namespace emulator::test_requests;  // NOLINT

class CredentialsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CredentialsTest, LocalTcpCredentialsWorkOnTheInsecurePort) {
  emulator::ServerOptions options;
  options.port = 0;
  options.worker.hbm_bytes_per_core = 1 << 20;
  auto server = emulator::Server::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = absl::StrCat(GetParam(), ":", (*server)->port());
  auto stub = NewStub(address, grpc::experimental::LocalCredentials(LOCAL_TCP));

  grpc::ClientContext open_context;
  open_context.set_deadline(
      absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  tpu_driver::OpenResponse opened;
  grpc::Status status =
      stub->Open(&open_context, tpu_driver::OpenRequest(), &opened);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const uint32_t c = opened.client_id();
  {
    ProtocolStream s(stub.get());
    s.Send({AllocBytes(Id(c, 1), 0, 3), TransferTo(Id(c, 2), Id(c, 1), "tpu"),
            TransferFrom(Id(c, 3), Id(c, 1), {Id(c, 2)})});
    auto r = s.Await(Id(c, 3));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->transfer_from().data(), "tpu");
    EXPECT_TRUE(s.Finish().ok());
  }
  // Insecure clients are served on the same port at the same time.
  auto insecure = NewStub(absl::StrCat("127.0.0.1:", (*server)->port()));
  grpc::ClientContext close_context;
  tpu_driver::CloseRequest close;
  close.set_client_id(c);
  tpu_driver::CloseResponse closed;
  status = insecure->Close(&close_context, close, &closed);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

INSTANTIATE_TEST_SUITE_P(Addresses, CredentialsTest,
                         ::testing::Values("127.0.0.1", "localhost"));

}  // namespace
}  // namespace tpu
