#include "proto/pem_file.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tpu {
namespace {

std::string Scratch(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
}

TEST(PemFileTest, ReadsPemAndNamesWhatFails) {
  const std::string pem = Scratch("good.pem");
  std::ofstream(pem) << "-----BEGIN CERTIFICATE-----\nAAAA\n"
                        "-----END CERTIFICATE-----\n";
  absl::StatusOr<std::string> read = ReadPemFile(pem, "the CA");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->substr(0, 11), "-----BEGIN ");

  const std::string der = Scratch("binary.der");
  std::ofstream(der) << "\x30\x82\x01\x0a";
  EXPECT_EQ(ReadPemFile(der, "the CA").status().message(),
            absl::StrCat("the CA \"", der,
                         "\" is not a PEM file (it has no \"-----BEGIN\" "
                         "line)."));
  absl::StatusOr<std::string> missing =
      ReadPemFile(Scratch("missing.pem"), "the key");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            absl::StrCat("Cannot read the key \"", Scratch("missing.pem"),
                         "\": No such file or directory"));
}

}  // namespace
}  // namespace tpu
