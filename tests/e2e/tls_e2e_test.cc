// Exposure and TLS end to end: tpu_emulator refuses plaintext on a
// non-loopback address unless told otherwise, serves TLS and mutual TLS with
// certificates this test makes with Debian's openssl, and tpu_run reaches it
// through grpcs:// addresses; wrong CAs, missing client certificates and
// plaintext clients fail UNAVAILABLE with a message saying what to fix.

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/e2e/cli.h"
#include "tools/lib/subprocess.h"

namespace tpu {
namespace {

using e2e::ConnectErrorLine;
using e2e::TpuEmulatorPath;
using e2e::TpuRunPath;
using tools::CommandResult;
using tools::ServerProcess;

constexpr char kOpenssl[] = "/usr/bin/openssl";

// Runs openssl with `args`; false (and a test failure saying why) if it
// fails.
bool Openssl(std::vector<std::string> args) {
  args.insert(args.begin(), kOpenssl);
  CommandResult result = e2e::RunToCompletion(args);
  if (result.exit_code != 0) {
    ADD_FAILURE() << "openssl " << args[1] << " failed: " << result.err;
    return false;
  }
  return true;
}

class TlsE2ETest : public ::testing::Test {
 protected:
  // Two CAs; a worker certificate for localhost and 127.0.0.1 and a client
  // certificate, both signed by the first.
  static void SetUpTestSuite() {
    dir_ = new std::string(absl::StrCat(tools::ScratchDir(), "/tls"));
    std::filesystem::remove_all(*dir_);
    std::filesystem::create_directories(*dir_);
    for (const char* ca : {"ca", "other_ca"}) {
      ASSERT_TRUE(
          Openssl({"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                   "2", "-subj", absl::StrCat("/CN=", ca), "-keyout",
                   File(ca, "key"), "-out", File(ca, "pem")}));
    }
    std::ofstream(File("san", "ext"))
        << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    for (const char* name : {"worker", "client"}) {
      ASSERT_TRUE(Openssl({"req", "-newkey", "rsa:2048", "-nodes", "-subj",
                           absl::StrCat("/CN=", name), "-keyout",
                           File(name, "key"), "-out", File(name, "csr")}));
      ASSERT_TRUE(Openssl(
          {"x509", "-req", "-days", "2", "-in", File(name, "csr"), "-CA",
           File("ca", "pem"), "-CAkey", File("ca", "key"), "-CAcreateserial",
           "-extfile", File("san", "ext"), "-out", File(name, "pem")}));
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static std::string File(const std::string& name, const std::string& ext) {
    return absl::StrCat(*dir_, "/", name, ".", ext);
  }

  // A worker with `flags` (beside --port=0).
  std::unique_ptr<ServerProcess> StartWorker(const std::string& name,
                                             std::vector<std::string> flags) {
    flags.insert(flags.begin(), {TpuEmulatorPath(), "--port=0", "--chips=1"});
    absl::StatusOr<std::unique_ptr<ServerProcess>> worker =
        ServerProcess::Start(flags, *dir_, name);
    EXPECT_TRUE(worker.ok()) << worker.status();
    return worker.ok() ? *std::move(worker) : nullptr;
  }

  std::vector<std::string> TlsFlags() const {
    return {absl::StrCat("--tls_cert=", File("worker", "pem")),
            absl::StrCat("--tls_key=", File("worker", "key"))};
  }

  CommandResult Run(const std::string& target) {
    return e2e::RunTwiceXPlusOne(target, "tls_module");
  }

  CommandResult RunEmulator(std::vector<std::string> flags) {
    flags.insert(flags.begin(), TpuEmulatorPath());
    return e2e::RunToCompletion(std::move(flags));
  }

  static std::string* dir_;
};

std::string* TlsE2ETest::dir_ = nullptr;

TEST_F(TlsE2ETest, PlaintextOnANonLoopbackAddressIsRefused) {
  CommandResult refused = RunEmulator({"--bind=0.0.0.0", "--port=0"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err,
            "tpu_emulator: INVALID_ARGUMENT: Refusing to serve plaintext on "
            "0.0.0.0, which other machines may reach: anyone who can connect "
            "could run programs and read every client's device memory. Serve "
            "TLS (--tls_cert, --tls_key), bind loopback (--bind=127.0.0.1), "
            "or pass --allow_insecure_remote on a network you trust.\n");
  CommandResult half = RunEmulator(
      {"--port=0", absl::StrCat("--tls_cert=", File("worker", "pem"))});
  EXPECT_EQ(half.exit_code, 2);
  EXPECT_EQ(half.err,
            "tpu_emulator: INVALID_ARGUMENT: TLS needs both a certificate "
            "(--tls_cert) and its private key (--tls_key); only one was "
            "given.\n");
  const std::string missing = File("missing", "pem");
  CommandResult absent =
      RunEmulator({"--port=0", absl::StrCat("--tls_cert=", missing),
                   absl::StrCat("--tls_key=", File("worker", "key"))});
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_EQ(absent.err,
            absl::StrCat("tpu_emulator: NOT_FOUND: Cannot read the TLS "
                         "certificate (--tls_cert) \"",
                         missing, "\": No such file or directory\n"));
}

TEST_F(TlsE2ETest, NonLoopbackServesWithTlsOrWhenAllowed) {
  // Both listen on every interface; the client dials loopback.
  for (std::vector<std::string> flags :
       {std::vector<std::string>{"--bind=0.0.0.0", "--allow_insecure_remote"},
        std::vector<std::string>{"--bind=0.0.0.0"}}) {
    const bool tls = flags.size() == 1;
    if (tls) {
      for (const std::string& flag : TlsFlags()) flags.push_back(flag);
    }
    std::unique_ptr<ServerProcess> worker =
        StartWorker(tls ? "any_tls" : "any_plain", flags);
    ASSERT_NE(worker, nullptr);
    const std::string target =
        tls ? absl::StrCat("grpcs://127.0.0.1:", worker->port(),
                           "?ca=", File("ca", "pem"))
            : absl::StrCat("grpc://127.0.0.1:", worker->port());
    CommandResult result = Run(target);
    EXPECT_EQ(result.exit_code, 0) << result.err;
  }
}

TEST_F(TlsE2ETest, TlsSessionRunsAProgramAndRejectsAWrongCa) {
  std::unique_ptr<ServerProcess> worker = StartWorker("tls", TlsFlags());
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(tools::ReadFileOrEmpty(absl::StrCat(*dir_, "/tls.out")),
            absl::StrCat("tpu_emulator listening on 127.0.0.1:", worker->port(),
                         " (TLS)\n"));
  const std::string base = absl::StrCat("grpcs://127.0.0.1:", worker->port());
  for (const char* host : {"127.0.0.1", "localhost"}) {
    CommandResult ok = Run(absl::StrCat("grpcs://", host, ":", worker->port(),
                                        "?ca=", File("ca", "pem")));
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_TRUE(absl::StrContains(ok.out, "replica 0 out_0: f32[4]")) << ok.out;
  }

  const std::string wrong_ca =
      absl::StrCat(base, "?ca=", File("other_ca", "pem"));
  EXPECT_EQ(e2e::TwiceXPlusOneError(wrong_ca, "tls_module"),
            ConnectErrorLine(wrong_ca,
                             "the TLS handshake failed: the worker's "
                             "certificate was not accepted. Check that ca= "
                             "names the CA that signed it and that it names "
                             "the host dialed (or set server_name= to a name "
                             "it carries)."));

  const std::string plaintext =
      absl::StrCat("grpc://127.0.0.1:", worker->port());
  EXPECT_EQ(e2e::TwiceXPlusOneError(plaintext, "tls_module"),
            ConnectErrorLine(plaintext,
                             "the worker closed the connection. If it serves "
                             "TLS (tpu_emulator --tls_cert), dial "
                             "grpcs://HOST:PORT?ca=CA.pem; otherwise check "
                             "the address (--target)."));
}

TEST_F(TlsE2ETest, MutualTlsNeedsAClientCertificate) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back(absl::StrCat("--tls_client_ca=", File("ca", "pem")));
  std::unique_ptr<ServerProcess> worker = StartWorker("mtls", flags);
  ASSERT_NE(worker, nullptr);
  const std::string base = absl::StrCat("grpcs://127.0.0.1:", worker->port(),
                                        "?ca=", File("ca", "pem"));
  CommandResult ok = Run(absl::StrCat(base, "&cert=", File("client", "pem"),
                                      "&key=", File("client", "key")));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;

  EXPECT_EQ(e2e::TwiceXPlusOneError(base, "tls_module"),
            ConnectErrorLine(base,
                             "the worker closed the connection during the TLS "
                             "handshake. If it requires client certificates "
                             "(tpu_emulator --tls_client_ca), give cert= and "
                             "key= signed by a CA it trusts; if it serves "
                             "plaintext, dial grpc://."));
}

}  // namespace
}  // namespace tpu
