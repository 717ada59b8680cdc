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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "emulator/collectives/collective_hub.h"
#include "emulator/interpreter/collectives.h"
#include "emulator/interpreter/executable.h"
#include "gtest/gtest.h"
#include "hlo/literal.h"
#include "hlo/text/hlo_parser.h"
#include "tests/hlo_corpus/known_inputs.h"
#include "tools/tpu_run/random_literal.h"

namespace tpu {
namespace {

namespace fs = std::filesystem;
using emulator::interpreter::CompileOptions;
using emulator::interpreter::DeviceAssignment;
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

// The integer after `key=` in the module's header line, or 0.
int HeaderValue(const std::string& text, absl::string_view key) {
  const size_t header = text.find("HloModule");
  if (header == std::string::npos) return 0;
  const std::string line =
      text.substr(header, text.find('\n', header) - header);
  const size_t at = line.find(absl::StrCat(key, "="));
  if (at == std::string::npos) return 0;
  const std::string digits = line.substr(at + key.size() + 1);
  size_t end = 0;
  while (end < digits.size() && absl::ascii_isdigit(digits[end])) ++end;
  int value = 0;
  return absl::SimpleAtoi(digits.substr(0, end), &value) ? value : 0;
}

// The largest id inside `attribute={...}` anywhere in the text, or -1. The
// test modules XLA's own tests run name their participants this way
// (replica_groups={{0,1},{2,3}}, source_target_pairs={{0,1},{1,0}}) and
// the tests that own them choose the replica count to match.
int LargestIdIn(const std::string& text, absl::string_view attribute) {
  int largest = -1;
  const std::string key = absl::StrCat(attribute, "={");
  for (size_t at = text.find(key); at != std::string::npos;
       at = text.find(key, at + 1)) {
    int depth = 0, value = -1;
    for (size_t i = at + key.size() - 1; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '{') ++depth;
      if (c == '}' && --depth == 0) break;
      if (absl::ascii_isdigit(c)) {
        value = (value < 0 ? 0 : value * 10) + (c - '0');
      } else {
        largest = std::max(largest, value);
        value = -1;
      }
    }
  }
  return largest;
}

// The largest participant of iota groups `attribute=[g,n]<=[d...]...`
// anywhere in the text (the product of the reshape dims, minus one), or -1.
int LargestIotaIdIn(const std::string& text, absl::string_view attribute) {
  int largest = -1;
  const std::string key = absl::StrCat(attribute, "=[");
  for (size_t at = text.find(key); at != std::string::npos;
       at = text.find(key, at + 1)) {
    const size_t arrow = text.find("<=[", at);
    const size_t close = text.find(']', arrow);
    if (arrow == std::string::npos || close == std::string::npos ||
        text.find('\n', at) < arrow) {
      continue;
    }
    int64_t product = 1;
    for (absl::string_view dim : absl::StrSplit(
             absl::string_view(text).substr(arrow + 3, close - arrow - 3),
             ',')) {
      int64_t value = 0;
      if (!absl::SimpleAtoi(dim, &value) || value <= 0) product = 0;
      product *= value;
    }
    if (product > 0 && product <= 1024) {
      largest = std::max(largest, static_cast<int>(product) - 1);
    }
  }
  return largest;
}

// Replicas and partitions a module runs with: the header's replica_count
// and num_partitions when it has them; otherwise as many replicas as its
// collectives name participants, explicitly or as iota groups.
struct Launches {
  int replicas = 1;
  int partitions = 1;
};
Launches LaunchesFor(const std::string& text) {
  Launches launches;
  launches.replicas = std::max(HeaderValue(text, "replica_count"), 1);
  launches.partitions = std::max(HeaderValue(text, "num_partitions"), 1);
  if (HeaderValue(text, "replica_count") == 0 && launches.partitions == 1) {
    const int named = std::max({LargestIdIn(text, "replica_groups"),
                                LargestIotaIdIn(text, "replica_groups"),
                                LargestIdIn(text, "source_target_pairs")});
    launches.replicas = std::max(launches.replicas, named + 1);
  }
  return launches;
}

// Send and recv between devices name their peers in a frontend attribute,
// partition ids with a channel_id and replica ids without (as XLA's GPU
// runtime reads them): a module whose header gives no counts runs with as
// many as its pairs name.
void AddSendRecvPeers(const xla::HloModuleProto& module, Launches* launches) {
  for (const xla::HloComputationProto& computation : module.computations()) {
    for (const xla::HloInstructionProto& instruction :
         computation.instructions()) {
      const auto& attributes = instruction.frontend_attributes().map();
      auto it = attributes.find("_xla_send_recv_source_target_pairs");
      if (it == attributes.end()) continue;
      const int largest = LargestIdIn(absl::StrCat("p=", it->second), "p");
      int& count = instruction.channel_id() > 0 ? launches->partitions
                                                : launches->replicas;
      count = std::max(count, largest + 1);
    }
  }
}

// Parse, compile and run every replica and partition (concurrently, one
// thread each on a core of its own, meeting at a CollectiveHub as on a
// worker), stopping them after kTimeLimit.
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
  Launches launches = LaunchesFor(text);
  if (HeaderValue(text, "replica_count") == 0 &&
      HeaderValue(text, "num_partitions") == 0) {
    AddSendRecvPeers(*proto, &launches);
  }
  CompileOptions options;
  options.num_replicas = launches.replicas;
  absl::StatusOr<std::unique_ptr<Executable>> exe =
      Executable::Compile(*proto, options);
  if (!exe.ok()) {
    return absl::Status(exe.status().code(),
                        absl::StrCat("compile: ", exe.status().message()));
  }
  const xla::ProgramShapeProto& program = (*exe)->program_shape();
  const int cores = launches.replicas * launches.partitions;
  emulator::CollectiveHubOptions hub_options;
  for (int c = 0; c < cores; ++c) hub_options.cores.push_back(c);
  hub_options.report_waits_after = absl::ZeroDuration();
  emulator::CollectiveHub hub(hub_options);
  DeviceAssignment assignment;
  assignment.num_replicas = launches.replicas;
  assignment.num_partitions = launches.partitions;
  for (int c = 0; c < cores; ++c) assignment.devices.push_back(c);
  // Modules whose random inputs mean nothing run with known ones and must
  // compute the known results.
  const std::optional<KnownInputs> known =
      KnownInputsFor(module.file, program, cores);

  std::vector<absl::Status> results(cores);
  std::atomic<bool> cancelled{false};
  std::mutex mu;
  std::condition_variable done_cv;
  int running = cores;
  std::vector<std::thread> threads;
  for (int core = 0; core < cores; ++core) {
    threads.emplace_back([&, core] {
      std::vector<Literal> args;
      absl::Status status;
      if (known.has_value()) args = known->arguments[core];
      for (int i = static_cast<int>(args.size());
           i < program.parameters_size() && status.ok(); ++i) {
        absl::StatusOr<Shape> shape = Shape::FromProto(program.parameters(i));
        absl::StatusOr<Literal> arg =
            shape.ok() ? RandomLiteral(*shape, uint64_t{1000003} * core + i)
                       : absl::StatusOr<Literal>(shape.status());
        if (!arg.ok()) status = arg.status();
        if (arg.ok()) args.push_back(*std::move(arg));
      }
      std::unique_ptr<emulator::Launch> launch;
      if (status.ok()) {
        emulator::LaunchInfo info;
        info.core = core;
        info.client_id = 1;
        info.program = module.file;
        info.fingerprint = module.id();
        info.assignment = assignment.devices;
        info.cancelled = &cancelled;
        absl::StatusOr<std::unique_ptr<emulator::Launch>> begun =
            hub.BeginLaunch(info);
        if (begun.ok()) launch = *std::move(begun);
        status = begun.status();
      }
      if (status.ok()) {
        ExecutionContext context;
        context.replica_id = core / launches.partitions;
        context.partition_id = core % launches.partitions;
        context.assignment = &assignment;
        context.collectives = launch.get();
        context.cancelled = &cancelled;
        absl::StatusOr<Literal> result =
            (*exe)->Execute(std::move(args), context, nullptr);
        status = result.status();
        if (result.ok() && known.has_value() &&
            *result != known->expected[core]) {
          status = absl::InternalError(
              absl::StrCat("core ", core, " computed ", result->ToString(),
                           " where the known inputs give ",
                           known->expected[core].ToString()));
        }
      }
      launch.reset();
      std::lock_guard<std::mutex> lock(mu);
      results[core] = status;
      --running;
      done_cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    if (!done_cv.wait_for(lock, kTimeLimit, [&] { return running == 0; })) {
      cancelled = true;
      hub.WakeWaiters();
    }
  }
  for (std::thread& t : threads) t.join();
  for (int core = 0; core < cores; ++core) {
    if (!results[core].ok()) {
      if (cancelled) {
        return absl::DeadlineExceededError(absl::StrCat(
            "execute: still running after ", kTimeLimit.count(), " s"));
      }
      return absl::Status(
          results[core].code(),
          absl::StrCat("execute (replica ", core / launches.partitions,
                       " partition ", core % launches.partitions,
                       "): ", results[core].message()));
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
