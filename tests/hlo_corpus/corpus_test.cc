// Runs every module of the shared HLO corpora (../shared/xla_hlo/modules and
// ../shared/jax_hlo/modules next to the repository) through the HLO text
// parser, Executable::Compile and Execute with deterministic random inputs,
// one test case per module. Modules listed in expected_failures.txt must
// fail, with an error containing the listed text; a listed module that
// passes fails the test so that the list shrinks as support grows.
//
// The corpus folder is found, in order, from $TPU_SHARED_DIR (e.g.
// `bazel test --test_env=TPU_SHARED_DIR=/path/to/shared`), else by resolving
// this test's data file expected_failures.txt to the source tree and taking
// ../shared next to the repository root. A missing corpus fails
// CorpusTest.FoldersExist with a message saying where it looked.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "emulator/interpreter/executable.h"
#include "gtest/gtest.h"
#include "hlo/literal.h"
#include "hlo/text/hlo_parser.h"
#include "tools/tpu_run/random_literal.h"

namespace tpu {
namespace {

namespace fs = std::filesystem;
using emulator::interpreter::CompileOptions;
using emulator::interpreter::Executable;
using emulator::interpreter::ExecutionContext;

constexpr char kExpectedFailures[] = "tests/hlo_corpus/expected_failures.txt";
constexpr const char* kCorpora[] = {"xla_hlo", "jax_hlo"};
// A module still running after this long is stopped and fails.
constexpr auto kTimeLimit = std::chrono::seconds(120);

// Where the runfile `relative` is, resolved through its symlink to the source
// tree when the runfiles tree links to it.
fs::path ResolveRunfile(const std::string& relative) {
  std::vector<fs::path> roots;
  for (const char* var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* dir = std::getenv(var)) roots.push_back(dir);
  }
  const char* workspace = std::getenv("TEST_WORKSPACE");
  for (const fs::path& root : roots) {
    for (const fs::path& candidate :
         {root / (workspace ? workspace : "") / relative,
          root / "__main__" / relative}) {
      std::error_code ec;
      if (fs::exists(candidate, ec)) return fs::canonical(candidate, ec);
    }
  }
  return fs::path(relative);
}

// The folder holding xla_hlo/ and jax_hlo/, and where it was looked for.
struct SharedDir {
  fs::path path;
  std::string looked;
};

SharedDir FindSharedDir() {
  SharedDir found;
  if (const char* env = std::getenv("TPU_SHARED_DIR")) {
    found.path = env;
    found.looked = absl::StrCat("$TPU_SHARED_DIR=", env);
    return found;
  }
  // <repo>/tests/hlo_corpus/expected_failures.txt -> <repo>/../shared
  const fs::path list = ResolveRunfile(kExpectedFailures);
  const fs::path repo = list.parent_path().parent_path().parent_path();
  found.path = repo.parent_path() / "shared";
  found.looked = absl::StrCat(found.path.string(), " (../shared next to ",
                              repo.string(), ")");
  return found;
}

struct Module {
  std::string corpus;  // "xla_hlo"
  std::string file;    // "045_rng.hlo"
  fs::path path;
  std::string id() const { return absl::StrCat(corpus, "/", file); }
};

void PrintTo(const Module& module, std::ostream* os) { *os << module.id(); }

std::vector<Module> ListModules() {
  std::vector<Module> modules;
  const SharedDir shared = FindSharedDir();
  for (const char* corpus : kCorpora) {
    const fs::path dir = shared.path / corpus / "modules";
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<Module> found;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() != ".hlo") continue;
      found.push_back({corpus, entry.path().filename().string(), entry.path()});
    }
    std::sort(found.begin(), found.end(),
              [](const Module& a, const Module& b) { return a.file < b.file; });
    modules.insert(modules.end(), found.begin(), found.end());
  }
  return modules;
}

// One line of expected_failures.txt: `module | text in the error | reason`.
struct ExpectedFailure {
  std::string match;
  std::string reason;
};

std::map<std::string, ExpectedFailure> LoadExpectedFailures() {
  std::map<std::string, ExpectedFailure> list;
  std::ifstream in(ResolveRunfile(kExpectedFailures));
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> fields =
        absl::StrSplit(text, absl::MaxSplits('|', 2));
    for (std::string& f : fields) {
      f = std::string(absl::StripAsciiWhitespace(f));
    }
    fields.resize(3);
    list[fields[0]] = {fields[1], fields[2]};
  }
  return list;
}

// The module header's replica_count (the parser drops it; 1 without it).
int ReplicaCount(const std::string& text) {
  const size_t header = text.find("HloModule");
  if (header == std::string::npos) return 1;
  const std::string line =
      text.substr(header, text.find('\n', header) - header);
  const size_t at = line.find("replica_count=");
  int count = 1;
  if (at != std::string::npos) {
    const std::string digits = line.substr(at + 14);
    size_t end = 0;
    while (end < digits.size() && absl::ascii_isdigit(digits[end])) ++end;
    if (!absl::SimpleAtoi(digits.substr(0, end), &count)) count = 1;
  }
  return std::max(count, 1);
}

// Parse, compile and run every replica (concurrently, one thread each, so
// that replicas can meet in collectives), stopping them after kTimeLimit.
absl::Status RunModule(const Module& module) {
  std::ifstream in(module.path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  absl::StatusOr<xla::HloModuleProto> proto = hlo::ParseHloModule(text);
  if (!proto.ok()) {
    return absl::Status(proto.status().code(),
                        absl::StrCat("parse: ", proto.status().message()));
  }
  CompileOptions options;
  options.num_replicas = ReplicaCount(text);
  absl::StatusOr<std::unique_ptr<Executable>> exe =
      Executable::Compile(*proto, options);
  if (!exe.ok()) {
    return absl::Status(exe.status().code(),
                        absl::StrCat("compile: ", exe.status().message()));
  }
  const xla::ProgramShapeProto& program = (*exe)->program_shape();
  std::vector<absl::Status> results(options.num_replicas);
  std::atomic<bool> cancelled{false};
  std::mutex mu;
  std::condition_variable done_cv;
  int running = options.num_replicas;
  std::vector<std::thread> threads;
  for (int r = 0; r < options.num_replicas; ++r) {
    threads.emplace_back([&, r] {
      std::vector<Literal> args;
      absl::Status status;
      for (int i = 0; i < program.parameters_size() && status.ok(); ++i) {
        absl::StatusOr<Shape> shape = Shape::FromProto(program.parameters(i));
        absl::StatusOr<Literal> arg =
            shape.ok() ? RandomLiteral(*shape, uint64_t{1000003} * r + i)
                       : absl::StatusOr<Literal>(shape.status());
        if (!arg.ok()) status = arg.status();
        if (arg.ok()) args.push_back(*std::move(arg));
      }
      if (status.ok()) {
        ExecutionContext context;
        context.replica_id = r;
        context.cancelled = &cancelled;
        status = (*exe)->Execute(std::move(args), context, nullptr).status();
      }
      std::lock_guard<std::mutex> lock(mu);
      results[r] = status;
      --running;
      done_cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    if (!done_cv.wait_for(lock, kTimeLimit, [&] { return running == 0; })) {
      cancelled = true;
    }
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < options.num_replicas; ++r) {
    if (!results[r].ok()) {
      if (cancelled) {
        return absl::DeadlineExceededError(absl::StrCat(
            "execute: still running after ", kTimeLimit.count(), " s"));
      }
      return absl::Status(
          results[r].code(),
          absl::StrCat("execute (replica ", r, "): ", results[r].message()));
    }
  }
  return absl::OkStatus();
}

// Totals for the summary printed after all cases.
struct Tally {
  std::mutex mu;
  std::map<std::string, int> passed, expected_failures, unexpected;
};
Tally& Totals() {
  static Tally* tally = new Tally();
  return *tally;
}

class CorpusTest : public ::testing::TestWithParam<Module> {};

TEST_P(CorpusTest, ParsesCompilesAndRuns) {
  static const std::map<std::string, ExpectedFailure>* expected =
      new std::map<std::string, ExpectedFailure>(LoadExpectedFailures());
  const Module& module = GetParam();
  const absl::Status status = RunModule(module);
  auto it = expected->find(module.id());
  Tally& tally = Totals();
  std::lock_guard<std::mutex> lock(tally.mu);
  if (it == expected->end()) {
    (status.ok() ? tally.passed : tally.unexpected)[module.corpus]++;
    EXPECT_TRUE(status.ok()) << module.id() << ": " << status;
    return;
  }
  if (status.ok()) {
    tally.unexpected[module.corpus]++;
    ADD_FAILURE() << module.id()
                  << " now passes: remove it from expected_failures.txt (it "
                     "was listed as: "
                  << it->second.reason << ")";
    return;
  }
  const bool matches =
      status.message().find(it->second.match) != absl::string_view::npos;
  (matches ? tally.expected_failures : tally.unexpected)[module.corpus]++;
  EXPECT_TRUE(matches) << module.id() << " fails, but not with \""
                       << it->second.match << "\" (" << it->second.reason
                       << "): " << status;
  std::cout << "expected failure (" << it->second.reason << "): " << status
            << std::endl;
}

std::string CaseName(const ::testing::TestParamInfo<Module>& info) {
  std::string name = absl::StrCat(info.param.corpus, "_", info.param.file);
  for (char& c : name) {
    if (!absl::ascii_isalnum(c)) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusTest, ::testing::ValuesIn(ListModules()),
                         CaseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CorpusTest);

TEST(CorpusFolders, Exist) {
  const SharedDir shared = FindSharedDir();
  for (const char* corpus : kCorpora) {
    const fs::path dir = shared.path / corpus / "modules";
    std::error_code ec;
    EXPECT_TRUE(fs::is_directory(dir, ec))
        << "HLO corpus folder " << dir << " not found (looked in "
        << shared.looked
        << "); set TPU_SHARED_DIR with --test_env=TPU_SHARED_DIR=<dir holding "
           "xla_hlo/ and jax_hlo/>";
  }
}

// Prints how many modules of each corpus ran, failed as listed, or failed
// otherwise.
class SummaryPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    Tally& tally = Totals();
    std::lock_guard<std::mutex> lock(tally.mu);
    for (const char* corpus : kCorpora) {
      std::cout << "corpus " << corpus << ": " << tally.passed[corpus]
                << " run, " << tally.expected_failures[corpus]
                << " expected failures, " << tally.unexpected[corpus]
                << " unexpected" << std::endl;
    }
  }
};

const ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new SummaryPrinter());

}  // namespace
}  // namespace tpu
