#include "emulator/trace/recorder.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "emulator/trace/chrome_json.h"

namespace tpu::emulator::trace {

// Slice ids: the recording's generation above these bits, index + 1 below.
constexpr int kIndexBits = 40;

Args& Args::Add(const std::string& key, int64_t value) {
  absl::StrAppend(&members_, members_.empty() ? "" : ", ", JsonQuote(key), ": ",
                  value);
  return *this;
}

Args& Args::Add(const std::string& key, const std::string& value) {
  absl::StrAppend(&members_, members_.empty() ? "" : ", ", JsonQuote(key), ": ",
                  JsonQuote(value));
  return *this;
}

Recorder::Recorder(int pid)
    : pid_(pid), epoch_(std::chrono::steady_clock::now()) {}

absl::Status Recorder::Start(bool instructions) {
  absl::MutexLock lock(&mu_);
  if (on_.load()) {
    return absl::FailedPreconditionError(
        "a trace is already being recorded; stop it first (tpu_ctl trace "
        "stop --out=FILE)");
  }
  events_.clear();
  ++generation_;
  instructions_.store(instructions);
  on_.store(true);
  return absl::OkStatus();
}

absl::StatusOr<Trace> Recorder::Stop() {
  const int64_t now = NowMicros();
  absl::MutexLock lock(&mu_);
  if (!on_.load()) {
    return absl::FailedPreconditionError(
        "no trace is being recorded; start one with `tpu_ctl trace start` or "
        "tpu_emulator --trace_out=FILE");
  }
  on_.store(false);
  instructions_.store(false);
  Trace trace;
  trace.pid = pid_;
  trace.events = std::move(events_);
  events_.clear();
  ++generation_;
  // Still open (e.g. a core blocked in a collective): ends now.
  for (Event& event : trace.events) {
    if (event.dur_micros >= 0) continue;
    event.dur_micros = std::max<int64_t>(0, now - event.ts_micros);
    absl::StrAppend(&event.args, event.args.empty() ? "" : ", ",
                    "\"unfinished\": true");
  }
  trace.track_names.assign(track_names_.begin(), track_names_.end());
  std::sort(trace.track_names.begin(), trace.track_names.end());
  return trace;
}

int64_t Recorder::NowMicros() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now() - epoch_)
      .count();
}

uint64_t Recorder::Begin(int64_t tid, std::string name, std::string category,
                         std::string args, int64_t ts_micros) {
  if (!on()) return 0;
  Event event;
  event.name = std::move(name);
  event.category = std::move(category);
  event.tid = tid;
  event.ts_micros = ts_micros < 0 ? NowMicros() : ts_micros;
  event.args = std::move(args);
  event.dur_micros = -1;
  absl::MutexLock lock(&mu_);
  if (!on_.load()) return 0;
  events_.push_back(std::move(event));
  return (generation_ << kIndexBits) | events_.size();
}

void Recorder::End(uint64_t slice, const std::string& args, int64_t ts_micros) {
  if (slice == 0) return;
  const int64_t end = ts_micros < 0 ? NowMicros() : ts_micros;
  absl::MutexLock lock(&mu_);
  // A slice of an earlier recording, or ended already.
  if (slice >> kIndexBits != generation_) return;
  const uint64_t index = (slice & ((uint64_t{1} << kIndexBits) - 1)) - 1;
  if (index >= events_.size() || events_[index].dur_micros >= 0) return;
  Event& event = events_[index];
  event.dur_micros = std::max<int64_t>(0, end - event.ts_micros);
  if (!args.empty()) {
    absl::StrAppend(&event.args, event.args.empty() ? "" : ", ", args);
  }
}

void Recorder::Complete(int64_t tid, std::string name, std::string category,
                        int64_t ts_micros, int64_t dur_micros,
                        std::string args) {
  Event event;
  event.name = std::move(name);
  event.category = std::move(category);
  event.tid = tid;
  event.ts_micros = ts_micros;
  event.dur_micros = std::max<int64_t>(0, dur_micros);
  event.args = std::move(args);
  Append(std::move(event));
}

void Recorder::Instant(int64_t tid, std::string name, std::string category,
                       std::string args) {
  Event event;
  event.phase = 'i';
  event.name = std::move(name);
  event.category = std::move(category);
  event.tid = tid;
  event.ts_micros = NowMicros();
  event.args = std::move(args);
  Append(std::move(event));
}

void Recorder::Flow(std::string name, int64_t from_tid, int64_t from_ts,
                    int64_t to_tid, int64_t to_ts) {
  if (!on()) return;
  Event start;
  start.phase = 's';
  start.name = name;
  start.category = "flow";
  start.tid = from_tid;
  start.ts_micros = from_ts;
  Event finish = start;
  finish.phase = 'f';
  finish.name = std::move(name);
  finish.tid = to_tid;
  finish.ts_micros = to_ts;
  absl::MutexLock lock(&mu_);
  if (!on_.load()) return;
  start.flow_id = finish.flow_id = next_flow_id_++;
  events_.push_back(std::move(start));
  events_.push_back(std::move(finish));
}

void Recorder::NameTrack(int64_t tid, std::string name) {
  absl::MutexLock lock(&mu_);
  track_names_[tid] = std::move(name);
}

void Recorder::Append(Event event) {
  if (!on()) return;
  absl::MutexLock lock(&mu_);
  if (!on_.load()) return;
  events_.push_back(std::move(event));
}

}  // namespace tpu::emulator::trace
