// Helpers for the //hlo/text tests: reading test data, comparing protos,
// finding instructions and round-tripping text.

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
#include "gtest/gtest.h"
#include "hlo/text/hlo_parser.h"
#include "hlo/text/hlo_printer.h"

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

// The instruction called `name` anywhere in `module`, or null.
inline const xla::HloInstructionProto* FindInstruction(
    const xla::HloModuleProto& module, const std::string& name) {
  for (const auto& c : module.computations()) {
    for (const auto& i : c.instructions()) {
      if (i.name() == name) return &i;
    }
  }
  return nullptr;
}

// Parses `text`, prints it and parses the print again. Empty if both parses
// succeed with the same proto and printing again gives the same text; else
// what went wrong.
inline std::string RoundTripProblem(const std::string& text) {
  absl::StatusOr<xla::HloModuleProto> first = ParseHloModule(text);
  if (!first.ok()) return "first parse: " + first.status().ToString();
  const std::string printed = PrintHloModule(*first);
  absl::StatusOr<xla::HloModuleProto> second = ParseHloModule(printed);
  if (!second.ok()) {
    return "parse of printed text: " + second.status().ToString() + "\n" +
           printed;
  }
  const std::string diff = Diff(*first, *second);
  if (!diff.empty()) return diff + "\n" + printed;
  if (PrintHloModule(*second) != printed) return "print is not a fixed point";
  return "";
}

// The message of the error ParseHloModule(text) returns; empty (and a test
// failure) if it parses or the code is not INVALID_ARGUMENT.
inline std::string ParseErrorOf(const std::string& text) {
  absl::StatusOr<xla::HloModuleProto> m = ParseHloModule(text);
  if (m.ok()) {
    ADD_FAILURE() << "parsed: " << text;
    return "";
  }
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(m.status().message());
}

}  // namespace tpu::hlo::testing

#endif  // HLO_TEXT_TEST_UTIL_H_
