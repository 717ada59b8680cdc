#include "emulator/service/unix_socket.h"

#include <stdlib.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tpu::emulator {
namespace {

// A short directory of our own: TEST_TMPDIR can be longer than a socket
// address holds.
std::string ShortDir() {
  char dir[] = "/tmp/unix_socket_test.XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  return dir;
}

TEST(UnixSocketTest, FreshPathsAreUsable) {
  EXPECT_TRUE(CheckUnixSocketPath(ShortDir() + "/w.sock").ok());
}

TEST(UnixSocketTest, UnusablePathsSayWhy) {
  EXPECT_EQ(CheckUnixSocketPath("").message(),
            "The Unix socket path is empty.");
  const std::string long_path = "/tmp/" + std::string(110, 'x');
  EXPECT_EQ(CheckUnixSocketPath(long_path).message(),
            absl::StrCat("Unix socket path \"", long_path,
                         "\" is 115 bytes long; a socket address holds at "
                         "most 107. Use a shorter path (e.g. in /tmp)."));
  const std::string dir = ShortDir();
  EXPECT_EQ(CheckUnixSocketPath(dir + "/none/w.sock").message(),
            absl::StrCat("Cannot create Unix socket \"", dir,
                         "/none/w.sock\": directory \"", dir,
                         "/none\": No such file or directory."));
  const std::string file = dir + "/file";
  std::ofstream(file) << "data";
  absl::Status not_socket = CheckUnixSocketPath(file);
  EXPECT_EQ(not_socket.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(not_socket.message(),
            absl::StrCat("\"", file,
                         "\" exists and is not a socket; refusing to replace "
                         "it. Pick another --unix_socket path."));
}

}  // namespace
}  // namespace tpu::emulator
