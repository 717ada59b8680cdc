#ifndef SOFTWARE_TPU_EMULATOR_TRACE_RECORDER_H_
#define SOFTWARE_TPU_EMULATOR_TRACE_RECORDER_H_

// The worker's timeline recorder: slices per track (one track per core, one
// per client for its transfers and compiles), instants and flow arrows,
// exported as Chrome trace-event JSON (chrome_json.h) that Perfetto and
// chrome://tracing open.
//
// Cost: when not recording, every hook is one relaxed atomic load (`on()`).
// While recording, a hook appends one fixed-size record to its thread's own
// buffer: names and string arguments are copied (not formatted) into the
// buffer's byte arena, numbers stay numbers, and everything is formatted at
// Stop. A thread's buffer is locked only by that thread and by Start/Stop,
// so the lock is never contended while recording, and buffers keep their
// capacity across recordings (no allocation once warm).
//
// Slices are begun and ended (so that a slice still open, e.g. a core stuck
// in a collective, appears in a trace taken meanwhile: Stop ends it at the
// stop time with "unfinished": true) or recorded complete.
//
// Timestamps are microseconds since the Unix epoch: CLOCK_REALTIME read once
// when the recorder is created, advanced by the monotonic clock since. Every
// process on one machine shares that base, so the traces of a pod slice's
// workers (loopback slices) merge without offsets (merge.h).
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
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

// Up to kMaxArgs event arguments, kept as numbers and borrowed strings until
// the recorder copies them: keys must be string literals (they are kept as
// pointers), string values need only live until the recording call returns.
class Args {
 public:
  static constexpr int kMaxArgs = 4;
  enum class Kind : uint8_t { kNumber, kString, kTrue, kOperation };
  struct Arg {
    const char* key;
    Kind kind;
    int64_t number;
    std::string_view text;
  };

  // Arguments beyond kMaxArgs are dropped (no call site has that many).
  Args& Add(const char* key, int64_t value) {
    return Push({key, Kind::kNumber, value, {}});
  }
  Args& Add(const char* key, std::string_view value) {
    return Push({key, Kind::kString, 0, value});
  }
  Args& Add(const char* key, const char* value) {
    return Add(key, std::string_view(value));
  }
  Args& Add(const char* key, const std::string& value) {
    return Add(key, std::string_view(value));
  }
  Args& AddTrue(const char* key) { return Push({key, Kind::kTrue, 0, {}}); }
  // An operation's wire id (proto/event_id.h), written as the string
  // "operation N (client C)" at export rather than formatted per event.
  Args& AddOperation(const char* key, int64_t wire_id) {
    return Push({key, Kind::kOperation, wire_id, {}});
  }

  int size() const { return size_; }
  const Arg& operator[](int i) const { return args_[i]; }
  // As JSON object members without braces: "\"key\": value, ...".
  std::string members() const;

 private:
  Args& Push(const Arg& arg) {
    if (size_ < kMaxArgs) args_[size_++] = arg;
    return *this;
  }
  Arg args_[kMaxArgs];
  int size_ = 0;
};

// An event's name, formatted at export: `text` + `after_text`, then, if
// `has_number`, `number` + `after_number` ("transfer_to" " " 64 " B"). The
// `after_*` parts must be string literals; `text` is copied when recorded.
struct Name {
  explicit Name(std::string_view text, const char* after_text = "")
      : text(text), after_text(after_text) {}
  Name(std::string_view text, const char* after_text, int64_t number,
       const char* after_number = "")
      : text(text),
        after_text(after_text),
        has_number(true),
        number(number),
        after_number(after_number) {}
  std::string_view text;
  const char* after_text = "";
  bool has_number = false;
  int64_t number = 0;
  const char* after_number = "";
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
  ~Recorder();

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

  // Microseconds on the trace's clock (see the file comment).
  int64_t NowMicros() const {
    return ToMicros(std::chrono::steady_clock::now());
  }
  // `time` on the trace's clock, for callers that read the clock anyway
  // (one read instead of two: reading the clock costs tens of ns in a VM).
  int64_t ToMicros(std::chrono::steady_clock::time_point time) const {
    return epoch_unix_micros_ +
           std::chrono::duration_cast<std::chrono::microseconds>(time - epoch_)
               .count();
  }

  // Opens a slice at `ts_micros` (now if negative); 0 when not recording.
  uint64_t Begin(int64_t tid, const Name& name, const char* category,
                 const Args& args = Args(), int64_t ts_micros = -1);
  // Ends a slice at `ts_micros` (now if negative), adding `args`. Ignores 0
  // and slices of an earlier recording.
  void End(uint64_t slice, const Args& args = Args(), int64_t ts_micros = -1);
  void Complete(int64_t tid, const Name& name, const char* category,
                int64_t ts_micros, int64_t dur_micros,
                const Args& args = Args());
  void Instant(int64_t tid, const Name& name, const char* category,
               const Args& args = Args());
  // An arrow from (from_tid, from_ts) to (to_tid, to_ts); each end binds to
  // the slice enclosing it on its track.
  void Flow(const Name& name, int64_t from_tid, int64_t from_ts, int64_t to_tid,
            int64_t to_ts);

  // The same with names and arguments already formatted (`args`: JSON
  // members), for callers off the hot path.
  uint64_t Begin(int64_t tid, const std::string& name,
                 const std::string& category, const std::string& args = "",
                 int64_t ts_micros = -1);
  void End(uint64_t slice, const std::string& args, int64_t ts_micros = -1);
  void Complete(int64_t tid, const std::string& name,
                const std::string& category, int64_t ts_micros,
                int64_t dur_micros, const std::string& args = "");
  void Instant(int64_t tid, const std::string& name,
               const std::string& category, const std::string& args = "");
  void Flow(const std::string& name, int64_t from_tid, int64_t from_ts,
            int64_t to_tid, int64_t to_ts);

  // Names a track (kept across recordings).
  void NameTrack(int64_t tid, std::string name);

  struct ThreadBuffer;

 private:
  // This thread's buffer, registered on first use.
  ThreadBuffer* LocalBuffer();

  const int pid_;
  // Never reused, so that a thread's cached buffer of a destroyed recorder
  // never passes for one of a new recorder at the same address.
  const uint64_t serial_;
  const std::chrono::steady_clock::time_point epoch_;
  const int64_t epoch_unix_micros_;
  std::atomic<bool> on_{false};
  std::atomic<bool> instructions_{false};

  absl::Mutex mu_;
  // Shared with the threads' caches: a buffer whose only owner is this list
  // belongs to a thread that exited and goes at the next Start.
  std::vector<std::shared_ptr<ThreadBuffer>> buffers_ ABSL_GUARDED_BY(mu_);
  // Never reused either: a buffer's ids carry its number.
  uint64_t buffers_created_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<int64_t, std::string> track_names_ ABSL_GUARDED_BY(mu_);
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
  void End() {
    if (slice_ != 0) recorder_->End(slice_);
    slice_ = 0;
  }

 private:
  Recorder* recorder_ = nullptr;
  uint64_t slice_ = 0;
};

}  // namespace tpu::emulator::trace

#endif  // SOFTWARE_TPU_EMULATOR_TRACE_RECORDER_H_
