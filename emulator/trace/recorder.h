#ifndef SOFTWARE_TPU_EMULATOR_TRACE_RECORDER_H_
#define SOFTWARE_TPU_EMULATOR_TRACE_RECORDER_H_

// The worker's timeline recorder: slices per track (one track per core, one
// per client for its transfers and compiles), instants and flow arrows,
// exported as Chrome trace-event JSON (chrome_json.h) that Perfetto and
// chrome://tracing open.
//
// Cost: when not recording, every hook is one relaxed atomic load (`on()`);
// callers build names and arguments only after it returned true. While
// recording, events are appended to one mutex-guarded vector.
//
// Slices are begun and ended (so that a slice still open, e.g. a core stuck
// in a collective, appears in a trace taken meanwhile: Stop ends it at the
// stop time with "unfinished": true) or recorded complete.
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace tpu::emulator::trace {

// Track ids (the trace's "tid") of one worker (its "pid" is the host id).
inline int64_t CoreTrack(int core) { return core; }
// Clients' tracks are split into lanes at export so that overlapping
// transfers of one client never overlap on one track.
constexpr int64_t kClientTrackBase = 1'000'000;
constexpr int64_t kLanesPerClient = 64;
inline int64_t ClientTrack(uint32_t client_id) {
  return kClientTrackBase + int64_t{client_id} * kLanesPerClient;
}

// Event arguments as a JSON object's members, built only while recording.
class Args {
 public:
  Args& Add(const std::string& key, int64_t value);
  Args& Add(const std::string& key, const std::string& value);
  Args& Add(const std::string& key, const char* value) {
    return Add(key, std::string(value));
  }
  // Without braces: "\"key\": value, ...".
  const std::string& members() const { return members_; }

 private:
  std::string members_;
};

// One trace event, as chrome_json.h writes it.
struct Event {
  // 'X' complete slice, 'i' instant, 's'/'f' flow start/end.
  char phase = 'X';
  std::string name;
  std::string category;
  int64_t tid = 0;
  int64_t ts_micros = 0;
  int64_t dur_micros = 0;
  // JSON object members (Args::members()).
  std::string args;
  // Flow events: the arrow's id, shared by its 's' and 'f'.
  uint64_t flow_id = 0;
};

struct Trace {
  int pid = 0;
  std::vector<Event> events;
  // Track names, by tid.
  std::vector<std::pair<int64_t, std::string>> track_names;
};

class Recorder {
 public:
  // `pid`: the worker's host id, so that traces of a slice's workers merge.
  explicit Recorder(int pid);
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // The hooks' one check; relaxed: an event at the edge of Start or Stop may
  // be kept or dropped.
  bool on() const { return on_.load(std::memory_order_relaxed); }
  // Whether programs' top-level instructions are recorded too.
  bool instructions() const {
    return instructions_.load(std::memory_order_relaxed);
  }

  // FAILED_PRECONDITION if already recording.
  absl::Status Start(bool instructions);
  // Ends recording and returns what was recorded, open slices ended now.
  // FAILED_PRECONDITION if not recording.
  absl::StatusOr<Trace> Stop();

  // Microseconds on the trace's clock (monotonic, from the recorder's
  // creation).
  int64_t NowMicros() const;

  // Opens a slice at `ts_micros` (now if negative); 0 when not recording.
  uint64_t Begin(int64_t tid, std::string name, std::string category,
                 std::string args = "", int64_t ts_micros = -1);
  // Ends a slice at `ts_micros` (now if negative), adding `args`. Ignores 0
  // and slices of an earlier recording.
  void End(uint64_t slice, const std::string& args = "",
           int64_t ts_micros = -1);
  void Complete(int64_t tid, std::string name, std::string category,
                int64_t ts_micros, int64_t dur_micros, std::string args = "");
  void Instant(int64_t tid, std::string name, std::string category,
               std::string args = "");
  // An arrow from (from_tid, from_ts) to (to_tid, to_ts); each end binds to
  // the slice enclosing it on its track.
  void Flow(std::string name, int64_t from_tid, int64_t from_ts, int64_t to_tid,
            int64_t to_ts);

  // Names a track (kept across recordings).
  void NameTrack(int64_t tid, std::string name);

 private:
  void Append(Event event);

  const int pid_;
  const std::chrono::steady_clock::time_point epoch_;
  std::atomic<bool> on_{false};
  std::atomic<bool> instructions_{false};

  absl::Mutex mu_;
  // Open slices sit here too, with a negative duration until they end: a
  // slice id is its recording's generation (high bits) and index + 1.
  std::vector<Event> events_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, std::string> track_names_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_flow_id_ ABSL_GUARDED_BY(mu_) = 1;
};

// A slice that ends when the guard goes out of scope; inert when the
// recorder was off at construction.
class ScopedSlice {
 public:
  ScopedSlice() = default;
  ScopedSlice(Recorder* recorder, uint64_t slice)
      : recorder_(recorder), slice_(slice) {}
  ~ScopedSlice() { End(); }
  ScopedSlice(const ScopedSlice&) = delete;
  ScopedSlice& operator=(const ScopedSlice&) = delete;
  // Adds `args` to the slice when it ends.
  void AddArgs(const std::string& args) { end_args_ = args; }
  void End() {
    if (slice_ != 0) recorder_->End(slice_, end_args_);
    slice_ = 0;
  }

 private:
  Recorder* recorder_ = nullptr;
  uint64_t slice_ = 0;
  std::string end_args_;
};

}  // namespace tpu::emulator::trace

#endif  // SOFTWARE_TPU_EMULATOR_TRACE_RECORDER_H_
