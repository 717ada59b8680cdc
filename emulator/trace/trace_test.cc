#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "emulator/trace/activity.h"
#include "emulator/trace/chrome_json.h"
#include "emulator/trace/merge.h"
#include "emulator/trace/program_profile.h"
#include "emulator/trace/recorder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/event_id.h"

namespace tpu::emulator::trace {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RecorderTest, OffRecordsNothingAndStopSaysHowToStart) {
  Recorder recorder(0);
  EXPECT_FALSE(recorder.on());
  EXPECT_EQ(recorder.Begin(0, "p", "program"), 0u);
  absl::StatusOr<Trace> trace = recorder.Stop();
  EXPECT_EQ(trace.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(trace.status().message(), HasSubstr("tpu_ctl trace start"));
}

TEST(RecorderTest, StartTwiceFails) {
  Recorder recorder(0);
  ASSERT_TRUE(recorder.Start(false).ok());
  EXPECT_EQ(recorder.Start(false).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RecorderTest, SlicesInstantsFlowsAndOpenSlices) {
  Recorder recorder(3);
  recorder.NameTrack(CoreTrack(1), "core 1");
  ASSERT_TRUE(recorder.Start(true).ok());
  EXPECT_TRUE(recorder.instructions());
  uint64_t done = recorder.Begin(1, "P #0", "program",
                                 Args().Add("client", 7).members(), 10);
  recorder.End(done, Args().Add("status", "OK"), 25);
  recorder.Begin(1, "stuck", "collective", "", 30);
  recorder.Flow("waited for", 1, 12, 2, 20);
  absl::StatusOr<Trace> trace = recorder.Stop();
  ASSERT_TRUE(trace.ok());
  ASSERT_EQ(trace->events.size(), 4u);
  EXPECT_EQ(trace->events[0].name, "P #0");
  EXPECT_EQ(trace->events[0].dur_micros, 15);
  EXPECT_EQ(trace->events[0].args, "\"client\": 7, \"status\": \"OK\"");
  // Open slices keep their place, ended at the stop.
  EXPECT_EQ(trace->events[1].name, "stuck");
  EXPECT_EQ(trace->events[1].args, "\"unfinished\": true");
  EXPECT_GE(trace->events[1].dur_micros, 0);
  EXPECT_EQ(trace->events[2].phase, 's');
  EXPECT_EQ(trace->events[3].phase, 'f');
  EXPECT_EQ(trace->events[2].flow_id, trace->events[3].flow_id);
  const std::string json = ToChromeJson(*trace);
  EXPECT_THAT(json, HasSubstr("{\"name\": \"P #0\", \"cat\": \"program\", "
                              "\"ph\": \"X\", \"ts\": 10, \"pid\": 3, "
                              "\"tid\": 1, \"dur\": 15, \"args\": "
                              "{\"client\": 7, \"status\": \"OK\"}}"));
  EXPECT_THAT(json, HasSubstr("\"name\": \"thread_name\", \"cat\": "
                              "\"__metadata\", \"ph\": \"M\", \"ts\": 0, "
                              "\"pid\": 3, \"tid\": 1, \"args\": {\"name\": "
                              "\"core 1\"}"));
  EXPECT_THAT(json, HasSubstr("\"ph\": \"f\", \"ts\": 20, \"pid\": 3, "
                              "\"tid\": 2, \"id\": "));
  // A later recording starts empty and ignores the earlier slice ids.
  ASSERT_TRUE(recorder.Start(false).ok());
  recorder.End(done);
  EXPECT_TRUE(recorder.Stop()->events.empty());
}

// Threads record into their own buffers; a slice begun on one thread and
// ended on another is still one slice; recordings start empty.
TEST(RecorderTest, ThreadsRecordConcurrentlyAndEndsPairAcrossThreads) {
  Recorder recorder(0);
  for (int recording = 0; recording < 3; ++recording) {
    ASSERT_TRUE(recorder.Start(false).ok());
    constexpr int kThreads = 4, kSlices = 500;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&recorder, t] {
        for (int i = 0; i < kSlices; ++i) {
          ScopedSlice slice(
              &recorder,
              recorder.Begin(
                  CoreTrack(t), Name("op", " #", i), "program",
                  Args()
                      .Add("thread", t)
                      .AddOperation(
                          "operation",
                          EventId{3, static_cast<uint64_t>(i)}.AsInt())));
        }
      });
    }
    const uint64_t handed_over =
        recorder.Begin(CoreTrack(9), Name("handed over"), "program");
    std::thread([&] {
      recorder.End(handed_over, Args().AddTrue("late"));
    }).join();
    for (std::thread& thread : threads) thread.join();
    absl::StatusOr<Trace> trace = recorder.Stop();
    ASSERT_TRUE(trace.ok());
    ASSERT_EQ(trace->events.size(), size_t{kThreads * kSlices + 1});
    std::map<int64_t, int> per_track;
    for (const Event& event : trace->events) {
      ++per_track[event.tid];
      EXPECT_EQ(event.phase, 'X');
      EXPECT_GE(event.dur_micros, 0);
      EXPECT_THAT(event.args, Not(HasSubstr("unfinished")));
      if (event.tid == CoreTrack(9)) {
        EXPECT_EQ(event.args, "\"late\": true");
      } else {
        EXPECT_THAT(event.args,
                    HasSubstr(absl::StrCat("\"thread\": ", event.tid)));
        EXPECT_THAT(event.args, HasSubstr("\"operation\": \"operation "));
        EXPECT_THAT(event.args, HasSubstr(" (client 3)\""));
        EXPECT_THAT(event.name, HasSubstr("op #"));
      }
    }
    EXPECT_EQ(per_track[CoreTrack(0)], kSlices);
    EXPECT_EQ(per_track[CoreTrack(3)], kSlices);
  }
}

TEST(ChromeJsonTest, OverlappingClientSlicesGoToSeparateLanes) {
  Trace trace;
  const int64_t client = ClientTrack(5);
  trace.track_names = {{client, "client 5"}};
  trace.events.push_back({'X', "a", "transfer", client, 0, 10, "", 0});
  trace.events.push_back({'X', "b", "transfer", client, 5, 10, "", 0});
  trace.events.push_back({'X', "c", "transfer", client, 12, 1, "", 0});
  const std::string json = ToChromeJson(trace);
  EXPECT_THAT(json, HasSubstr(absl::StrCat("\"name\": \"a\", \"cat\": "
                                           "\"transfer\", \"ph\": \"X\", "
                                           "\"ts\": 0, \"pid\": 0, \"tid\": ",
                                           client, ",")));
  EXPECT_THAT(json, HasSubstr(absl::StrCat("\"name\": \"b\", \"cat\": "
                                           "\"transfer\", \"ph\": \"X\", "
                                           "\"ts\": 5, \"pid\": 0, \"tid\": ",
                                           client + 1, ",")));
  EXPECT_THAT(json, HasSubstr(absl::StrCat("\"name\": \"c\", \"cat\": "
                                           "\"transfer\", \"ph\": \"X\", "
                                           "\"ts\": 12, \"pid\": 0, \"tid\": ",
                                           client, ",")));
  EXPECT_THAT(json, HasSubstr("{\"name\": \"client 5 (2)\"}"));
}

TEST(JsonQuoteTest, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

TEST(ActivityCountersTest, CountsPerCoreAndClient) {
  ActivityCounters counters;
  counters.ProgramRan(0, 1, 10);
  counters.ProgramRan(0, 2, 5);
  counters.ProgramRan(1, 1, 7);
  EXPECT_EQ(counters.Core(0).programs_run, 2);
  EXPECT_EQ(counters.Core(0).busy_micros, 15);
  EXPECT_EQ(counters.Client(1).programs_run, 2);
  EXPECT_EQ(counters.Client(1).busy_micros, 17);
  counters.ForgetClient(1);
  EXPECT_EQ(counters.Client(1).programs_run, 0);
  EXPECT_EQ(counters.Core(3).programs_run, 0);
}

TEST(ProgramProfilesTest, SumsRunsAndSortsByTime) {
  ProgramProfiles profiles;
  profiles.AddRun("m", "f1",
                  {{"add.1", "add", 100, 48}, {"dot.2", "dot", 900, 96}});
  profiles.AddRun("m", "f1",
                  {{"add.1", "add", 50, 48}, {"dot.2", "dot", 800, 96}});
  profiles.AddRun("other", "f2", {{"neg", "negate", 1, 8}});
  tpu_emulator::GetProfileResponse m = profiles.Get("m");
  ASSERT_EQ(m.programs_size(), 1);
  EXPECT_EQ(m.programs(0).runs(), 2);
  ASSERT_EQ(m.programs(0).instructions_size(), 2);
  EXPECT_EQ(m.programs(0).instructions(0).name(), "dot.2");
  EXPECT_EQ(m.programs(0).instructions(0).total_nanos(), 1700);
  EXPECT_EQ(m.programs(0).instructions(0).bytes(), 192);
  EXPECT_EQ(m.programs(0).instructions(0).count(), 2);
  EXPECT_EQ(m.programs(0).instructions(1).total_nanos(), 150);
  EXPECT_EQ(profiles.Get("").programs_size(), 2);
  EXPECT_EQ(profiles.Get("absent").programs_size(), 0);
}

TEST(InstructionTimerTest, RecordsSlicesAndSamples) {
  Recorder recorder(0);
  ASSERT_TRUE(recorder.Start(true).ok());
  InstructionTimer timer(&recorder, 2, /*profile=*/true);
  timer.Started("add.1");
  timer.Finished("add.1", "add", 48);
  ASSERT_EQ(timer.samples().size(), 1u);
  EXPECT_EQ(timer.samples()[0].bytes, 48);
  absl::StatusOr<Trace> trace = recorder.Stop();
  ASSERT_EQ(trace->events.size(), 1u);
  EXPECT_EQ(trace->events[0].tid, 2);
  EXPECT_EQ(trace->events[0].category, "instruction");
  EXPECT_EQ(trace->events[0].args, "\"opcode\": \"add\", \"bytes\": 48");
}

// One worker's trace: a program on `core` from ts to ts + 5 and a flow.
std::string WorkerJson(int host_id, int core, int64_t ts) {
  Trace trace;
  trace.pid = host_id;
  trace.track_names = {{CoreTrack(core), absl::StrCat("core ", core)},
                       {ClientTrack(1), "client 1"}};
  trace.events.push_back(
      {'X', "m #0", "program", CoreTrack(core), ts, 5, "\"launch\": 0", 0});
  trace.events.push_back({'s', "w", "flow", CoreTrack(core), ts + 1, 0, "", 1});
  // Host 0's arrow ends on core 4 (host 1's); host 1's stays on its core.
  trace.events.push_back(
      {'f', "w", "flow", CoreTrack(host_id == 0 ? 4 : core), ts + 2, 0, "", 1});
  return ToChromeJson(trace);
}

TEST(MergeTest, OneProcessPerWorkerWithItsTracksTimesAndFlows) {
  absl::StatusOr<std::string> merged = MergeChromeTraces(
      {{0, "localhost:1", WorkerJson(0, 0, 1000), ""},
       {1, "localhost:2", WorkerJson(1, 4, 2000), ""},
       {2, "localhost:3", "", "UNAVAILABLE: connection refused"}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_TRUE(absl::StartsWith(*merged,
                               "{\"displayTimeUnit\": \"ms\", "
                               "\"traceEvents\": [\n"));
  EXPECT_TRUE(absl::EndsWith(*merged, "}\n]}\n"));
  // Each worker's program keeps its pid, tid (global core id) and time.
  EXPECT_THAT(*merged, HasSubstr("{\"name\": \"m #0\", \"cat\": "
                                 "\"program\", \"ph\": \"X\", \"ts\": 1000, "
                                 "\"pid\": 0, \"tid\": 0, \"dur\": 5"));
  EXPECT_THAT(*merged, HasSubstr("{\"name\": \"m #0\", \"cat\": "
                                 "\"program\", \"ph\": \"X\", \"ts\": 2000, "
                                 "\"pid\": 1, \"tid\": 4, \"dur\": 5"));
  // Processes are named after their workers, once each; the workers' own
  // names are gone.
  EXPECT_THAT(*merged, HasSubstr("\"pid\": 0, \"tid\": 0, \"args\": "
                                 "{\"name\": \"worker 0 (localhost:1)\"}"));
  EXPECT_THAT(*merged, HasSubstr("\"pid\": 1, \"tid\": 0, \"args\": "
                                 "{\"name\": \"worker 1 (localhost:2)\"}"));
  EXPECT_THAT(*merged, Not(HasSubstr("tpu_emulator host")));
  // Track names stay per process.
  EXPECT_THAT(*merged, HasSubstr("\"pid\": 1, \"tid\": 4, \"args\": "
                                 "{\"name\": \"core 4\"}"));
  // The two workers' flow 1 stay two arrows.
  EXPECT_THAT(*merged, HasSubstr("\"ph\": \"s\", \"ts\": 1001, \"pid\": 0, "
                                 "\"tid\": 0, \"id\": 1}"));
  EXPECT_THAT(*merged,
              HasSubstr(absl::StrCat("\"ph\": \"s\", \"ts\": 2001, \"pid\": 1, "
                                     "\"tid\": 4, \"id\": ",
                                     (uint64_t{1} << 32) + 1, "}")));
  // Worker 0's arrow to core 4 (worker 1's) ends on worker 1's process.
  EXPECT_THAT(*merged, HasSubstr("\"ph\": \"f\", \"ts\": 1002, \"pid\": 1, "
                                 "\"tid\": 4, \"id\": 1, \"bp\": \"e\"}"));
  // The missing worker is a named, empty process.
  EXPECT_THAT(*merged,
              HasSubstr("{\"name\": \"worker 2 (localhost:3): no trace "
                        "(UNAVAILABLE: connection refused)\"}"));
  // Every line but the first and last is one event.
  int events = 0;
  for (absl::string_view line : absl::StrSplit(*merged, '\n')) {
    if (absl::StartsWith(line, "{\"name\"")) ++events;
  }
  // Per worker: 2 process metadata + 2 tracks x 2 metadata + 3 events; the
  // missing one: 2.
  EXPECT_EQ(events, 2 * (2 + 4 + 3) + 2);
}

TEST(MergeTest, RejectsWhatIsNotAWorkersTrace) {
  EXPECT_EQ(MergeChromeTraces({{0, "a", "{\"traceEvents\": []}", ""}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Worker 1's events must carry pid 1.
  EXPECT_EQ(
      MergeChromeTraces({{1, "a", WorkerJson(0, 0, 1), ""}}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpu::emulator::trace
