// Parses every module of ../shared/xla_hlo and ../shared/jax_hlo (HLO text
// that XLA and JAX wrote, not us) and round-trips it through the printer:
// parse(print(parse(x))) == parse(x), and printing is a fixed point.
//
// Modules that are known not to parse are listed with the reason in
// testdata/corpus_expected_failures.txt; a listed module that parses, or an
// unlisted one that does not, fails the test.
//
// The corpus is found through $HLO_CORPUS_ROOT (the folder holding xla_hlo/
// and jax_hlo/), else as ../shared next to the workspace, which is where the
// symlinks of this test's runfiles point. Without it the test is skipped.
//
//   bazel test //hlo/text:corpus_parse_test --test_output=all

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "hlo/text/hlo_parser.h"
#include "hlo/text/hlo_printer.h"
#include "hlo/text/test_util.h"

namespace tpu::hlo {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCorpora[] = {"xla_hlo", "jax_hlo"};

std::string ReadFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

// The folder holding the corpora, or empty if there is none.
fs::path CorpusRoot() {
  if (const char* root = std::getenv("HLO_CORPUS_ROOT")) return root;
  // A data file of this test is a symlink into the workspace.
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return "../shared";
  std::error_code error;
  const fs::path data = fs::path(srcdir) / workspace / "hlo/text/testdata" /
                        "corpus_expected_failures.txt";
  const fs::path target = fs::canonical(data, error);
  if (error) return {};
  // <workspace>/hlo/text/testdata/<file> -> <workspace>/../shared
  return target.parent_path().parent_path().parent_path().parent_path() / ".." /
         "shared";
}

// "corpus/file" -> reason, from the expected-failures file.
std::map<std::string, std::string> ExpectedFailures() {
  std::map<std::string, std::string> failures;
  const std::string text =
      testing::ReadTestData("corpus_expected_failures.txt");
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> parts =
        absl::StrSplit(line, absl::MaxSplits('\t', 1));
    failures[std::string(parts[0])] =
        parts.size() > 1 ? std::string(parts[1]) : "";
  }
  return failures;
}

TEST(CorpusParseTest, EveryModuleParsesAndRoundTrips) {
  const fs::path root = CorpusRoot();
  std::error_code error;
  if (root.empty() || !fs::is_directory(root / "xla_hlo" / "modules", error)) {
    GTEST_SKIP() << "no corpus at '" << root.string()
                 << "' (set HLO_CORPUS_ROOT to the folder holding xla_hlo/ "
                    "and jax_hlo/)";
  }
  const std::map<std::string, std::string> expected = ExpectedFailures();
  for (const char* corpus : kCorpora) {
    int parsed = 0, round_tripped = 0, total = 0;
    std::vector<fs::path> files;
    for (const auto& entry :
         fs::directory_iterator(root / corpus / "modules")) {
      const std::string ext = entry.path().extension().string();
      if (ext == ".hlo" || ext == ".txt") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& path : files) {
      ++total;
      const std::string key =
          absl::StrCat(corpus, "/", path.filename().string());
      const bool listed = expected.count(key) > 0;
      absl::StatusOr<xla::HloModuleProto> first =
          ParseHloModule(ReadFile(path));
      if (!first.ok()) {
        EXPECT_TRUE(listed) << key << ": " << first.status();
        if (listed) {
          std::cout << "expected failure " << key << " (" << expected.at(key)
                    << "): " << first.status() << "\n";
        }
        continue;
      }
      ++parsed;
      EXPECT_FALSE(listed) << key << " parses now; remove it from "
                           << "testdata/corpus_expected_failures.txt";
      const std::string printed = PrintHloModule(*first);
      absl::StatusOr<xla::HloModuleProto> second = ParseHloModule(printed);
      if (!second.ok()) {
        ADD_FAILURE() << key
                      << ": printed text does not parse: " << second.status();
        continue;
      }
      const std::string diff = testing::Diff(*first, *second);
      EXPECT_EQ(diff, "") << key;
      EXPECT_EQ(PrintHloModule(*second), printed) << key;
      if (diff.empty()) ++round_tripped;
    }
    std::cout << corpus << ": " << parsed << " of " << total << " parse, "
              << round_tripped << " round-trip\n";
  }
}

// The stack-frame tables of a module's text: the lines from "FileNames" to
// the first computation, without blank lines; empty if it has none.
std::vector<std::string> StackFrameTables(const std::string& text) {
  std::vector<std::string> lines;
  bool inside = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line == "FileNames") inside = true;
    if (!inside) continue;
    // Table headers, then numbered entries; anything else (the first
    // computation) ends the tables.
    const bool header = line == "FileNames" || line == "FunctionNames" ||
                        line == "FileLocations" || line == "StackFrames";
    if (!line.empty() && !header && !absl::ascii_isdigit(line[0])) break;
    if (!line.empty()) lines.emplace_back(line);
  }
  return lines;
}

int CountOf(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// Every dump with stack-frame tables (the 27 TPU dumps of jax_hlo) keeps
// them through parse and print: the tables print back line for line, every
// instruction's stack_frame_id survives, and the printed module parses to
// the same proto.
TEST(CorpusParseTest, EveryTpuDumpKeepsItsStackFrames) {
  const fs::path root = CorpusRoot();
  std::error_code error;
  if (root.empty() || !fs::is_directory(root / "jax_hlo" / "modules", error)) {
    GTEST_SKIP() << "no corpus at '" << root.string() << "'";
  }
  int tpu_dumps = 0, checked = 0;
  for (const char* corpus : kCorpora) {
    for (const auto& entry :
         fs::directory_iterator(root / corpus / "modules")) {
      const std::string name = entry.path().filename().string();
      const std::string text = ReadFile(entry.path());
      const bool tpu_dump = absl::StrContains(name, "_tpu_v6e_");
      tpu_dumps += tpu_dump;
      const std::vector<std::string> tables = StackFrameTables(text);
      if (tables.empty()) {
        EXPECT_FALSE(tpu_dump) << name << " is a TPU dump without tables";
        continue;
      }
      ++checked;
      absl::StatusOr<xla::HloModuleProto> module = ParseHloModule(text);
      ASSERT_TRUE(module.ok()) << name << ": " << module.status();
      const xla::StackFrameIndexProto& index = module->stack_frame_index();
      EXPECT_GT(index.file_names_size(), 0) << name;
      EXPECT_GT(index.function_names_size(), 0) << name;
      EXPECT_GT(index.file_locations_size(), 0) << name;
      EXPECT_GT(index.stack_frames_size(), 0) << name;
      EXPECT_EQ(index.file_names_size() + index.function_names_size() +
                    index.file_locations_size() + index.stack_frames_size() + 4,
                static_cast<int>(tables.size()))
          << name << ": one entry per table line, plus four headers";
      int with_frame = 0;
      for (const auto& computation : module->computations()) {
        for (const auto& instruction : computation.instructions()) {
          with_frame += instruction.metadata().stack_frame_id() != 0;
        }
      }
      const int written = CountOf(text, "stack_frame_id=");
      EXPECT_GT(written, 0) << name;
      EXPECT_EQ(with_frame, written) << name;
      const std::string printed = PrintHloModule(*module);
      EXPECT_EQ(StackFrameTables(printed), tables) << name;
      EXPECT_EQ(CountOf(printed, "stack_frame_id="), written) << name;
      absl::StatusOr<xla::HloModuleProto> again = ParseHloModule(printed);
      ASSERT_TRUE(again.ok()) << name << ": " << again.status();
      EXPECT_EQ(testing::Diff(*module, *again), "") << name;
    }
  }
  EXPECT_EQ(tpu_dumps, 27);
  EXPECT_EQ(checked, tpu_dumps) << "dumps with stack-frame tables";
  std::cout << checked << " dumps keep their stack frames\n";
}

}  // namespace
}  // namespace tpu::hlo
