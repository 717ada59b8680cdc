#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/tpu_ctl/stats_text.h"
#include "tools/tpu_ctl/trace_svg.h"
#include "tools/tpu_ctl/xml_check.h"

namespace tpu::tools {
namespace {

using ::testing::HasSubstr;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

constexpr char kTrace[] = R"({"traceEvents": [
{"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "core 0"}},
{"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 1, "args": {"name": "core 1"}},
{"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 1000064, "args": {"name": "client <1> & co"}},
{"name": "P #0", "cat": "program", "ph": "X", "ts": 0, "dur": 100, "pid": 0, "tid": 0},
{"name": "s wait", "cat": "collective wait", "ph": "X", "ts": 10, "dur": 50, "pid": 0, "tid": 0},
{"name": "P #0", "cat": "program", "ph": "X", "ts": 55, "dur": 45, "pid": 0, "tid": 1},
{"name": "transfer_to 4 B", "cat": "transfer", "ph": "X", "ts": 1, "dur": 2, "pid": 0, "tid": 1000064},
{"name": "waited", "cat": "flow", "ph": "s", "id": 7, "ts": 10, "pid": 0, "tid": 0},
{"name": "waited", "cat": "flow", "ph": "f", "id": 7, "bp": "e", "ts": 60, "pid": 0, "tid": 1}
]})";

TEST(TraceSvgTest, OneRowPerTrackWellFormedAndEscaped) {
  absl::StatusOr<std::string> svg = TraceJsonToSvg(kTrace);
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_TRUE(CheckWellFormedXml(*svg).ok()) << CheckWellFormedXml(*svg);
  EXPECT_EQ(Count(*svg, "<g class=\"row\""), 3);
  EXPECT_THAT(*svg, HasSubstr("data-track=\"core 0\""));
  EXPECT_THAT(*svg, HasSubstr("data-track=\"client &lt;1&gt; &amp; co\""));
  // Four slices, one flow arrow.
  EXPECT_EQ(Count(*svg, "<rect x=\"") - 1, 4);
  EXPECT_EQ(Count(*svg, "class=\"flow\""), 1);
  // Cores come before the client.
  EXPECT_LT(svg->find("data-track=\"core 1\""),
            svg->find("data-track=\"client"));
}

TEST(TraceSvgTest, RejectsWhatIsNotATrace) {
  EXPECT_EQ(TraceJsonToSvg("nope").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(TraceJsonToSvg("{\"a\": 1}").status().message()),
              HasSubstr("no \"traceEvents\" list"));
}

TEST(XmlCheckTest, CatchesWhatIsNotWellFormed) {
  EXPECT_TRUE(CheckWellFormedXml("<a><b x=\"1\"/>t &amp; u</a>").ok());
  EXPECT_FALSE(CheckWellFormedXml("<a><b></a>").ok());
  EXPECT_FALSE(CheckWellFormedXml("<a>x & y</a>").ok());
  EXPECT_FALSE(CheckWellFormedXml("<a></a><b></b>").ok());
  EXPECT_FALSE(CheckWellFormedXml("<a>").ok());
}

TEST(StatsTextTest, TablesOfCoresAndClients) {
  tpu_emulator::WorkerStats stats;
  stats.set_host_rss_bytes(3 << 20);
  auto* core = stats.add_cores();
  core->set_core(0);
  core->set_state(tpu_emulator::CoreWait::WAITING);
  core->set_queue_depth(2);
  core->set_hbm_in_use(1536);
  core->set_hbm_capacity(int64_t{16} << 30);
  core->set_live_buffers(3);
  core->set_programs_loaded(1);
  core->set_programs_run(4);
  core->set_busy_micros(2500);
  auto* client = stats.add_clients();
  client->set_client_id(7);
  client->set_hbm_in_use(1536);
  client->set_live_buffers(3);
  const std::string text = FormatStats(stats);
  EXPECT_THAT(text, HasSubstr("host 0: resident memory 3.0 MiB, 1 client\n"));
  EXPECT_THAT(text, HasSubstr("0      waiting      2      1.5 KiB/16.0 GiB "
                              "       3       1       4       2.500 ms\n"));
  EXPECT_THAT(text, HasSubstr("7           1.5 KiB        3"));
}

TEST(StatsTextTest, ProfileTableSharesAndTop) {
  tpu_emulator::GetProfileResponse profile;
  auto* program = profile.add_programs();
  program->set_program("m");
  program->set_fingerprint("f");
  program->set_runs(2);
  for (auto [name, nanos] : {std::pair{"dot.1", 3000}, {"add.2", 1000}}) {
    auto* row = program->add_instructions();
    row->set_name(name);
    row->set_opcode(std::string(name).substr(0, 3));
    row->set_count(2);
    row->set_total_nanos(nanos);
    row->set_bytes(2048);
  }
  const std::string text = FormatProfile(profile, 1);
  EXPECT_THAT(text, HasSubstr("program m (f): 2 runs, 0.004 ms in top-level "
                              "instructions\n"));
  EXPECT_THAT(text, HasSubstr("  75.0% dot.1"));
  EXPECT_THAT(text, HasSubstr("(1 more; --top=N shows more)"));
  EXPECT_THAT(FormatProfile({}, 5), HasSubstr("--profile_programs"));
}

}  // namespace
}  // namespace tpu::tools
