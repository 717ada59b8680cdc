// Helpers for the //hlo/text tests: reading test data and comparing protos.

#ifndef HLO_TEXT_TEST_UTIL_H_
#define HLO_TEXT_TEST_UTIL_H_

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/message_differencer.h"

namespace tpu::hlo::testing {

// Contents of hlo/text/testdata/<name> from the test's runfiles; empty if
// missing.
inline std::string ReadTestData(const std::string& name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  std::string path = "hlo/text/testdata/" + name;
  if (srcdir != nullptr && workspace != nullptr) {
    path = std::string(srcdir) + "/" + workspace + "/" + path;
  }
  std::ifstream file(path, std::ios::binary);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

// Deterministic bytes (map entries sorted), so NaNs compare bit-exactly.
inline std::string Canonical(const google::protobuf::Message& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// Empty if equal, else a report of the differences.
inline std::string Diff(const google::protobuf::Message& a,
                        const google::protobuf::Message& b) {
  if (Canonical(a) == Canonical(b)) return "";
  std::string report;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&report);
  differencer.Compare(a, b);
  return report.empty() ? "serializations differ" : report;
}

}  // namespace tpu::hlo::testing

#endif  // HLO_TEXT_TEST_UTIL_H_
