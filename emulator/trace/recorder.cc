#include "emulator/trace/recorder.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "emulator/trace/chrome_json.h"
#include "proto/event_id.h"

namespace tpu::emulator::trace {

// A piece of text in a ThreadBuffer's arena.
struct Text {
  uint32_t offset = 0;
  uint32_t size = 0;
};

// One recorded call, formatted only at Stop. Names and arguments point
// into the buffer's arena; `after_*` and argument keys are literals.
struct Record {
  // 'B' begin, 'E' end, 'X' complete, 'i' instant, 's'/'f' flow ends.
  char phase = 'X';
  bool has_number = false;
  uint8_t arg_count = 0;
  int64_t tid = 0;
  int64_t ts_micros = 0;
  int64_t dur_micros = 0;
  // 'B'/'E': the slice; 's'/'f': the arrow.
  uint64_t id = 0;
  Text name;
  const char* after_text = "";
  int64_t number = 0;
  const char* after_number = "";
  Text category;
  struct RecordedArg {
    const char* key = nullptr;  // null: `text` holds raw JSON members
    Args::Kind kind = Args::Kind::kNumber;
    int64_t number = 0;
    Text text;
  } args[Args::kMaxArgs];
};

// The lock of one thread's buffer: taken per record by its thread and, at
// Start and Stop, by the recorder; never contended while recording, so an
// inlined exchange beats a general mutex's out-of-line calls.
class ABSL_LOCKABLE BufferLock {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    locked_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> locked_{false};
};

class ABSL_SCOPED_LOCKABLE BufferLocker {
 public:
  explicit BufferLocker(BufferLock* lock) ABSL_EXCLUSIVE_LOCK_FUNCTION(lock)
      : lock_(lock) {
    lock_->Lock();
  }
  ~BufferLocker() ABSL_UNLOCK_FUNCTION() { lock_->Unlock(); }
  BufferLocker(const BufferLocker&) = delete;
  BufferLocker& operator=(const BufferLocker&) = delete;

 private:
  BufferLock* const lock_;
};

struct Recorder::ThreadBuffer {
  explicit ThreadBuffer(uint64_t index) : id_base(index << 40) {}

  Text Copy(std::string_view text) {
    Text copied{static_cast<uint32_t>(arena.size()),
                static_cast<uint32_t>(text.size())};
    arena.append(text.data(), text.size());
    return copied;
  }
  std::string_view View(Text text) const {
    return std::string_view(arena).substr(text.offset, text.size);
  }
  uint64_t NextId() { return id_base | ++last_id; }

  // A fresh record at the end. Records live in fixed-size chunks kept
  // across recordings: appending never moves earlier records.
  Record& Append() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (size == chunks.size() * kChunkRecords) {
      chunks.push_back(std::make_unique<Record[]>(kChunkRecords));
    }
    Record& record = chunks[size / kChunkRecords][size % kChunkRecords];
    // Every field but the arguments, which `arg_count` bounds: a third of
    // the record's bytes.
    record.phase = 'X';
    record.has_number = false;
    record.arg_count = 0;
    record.tid = record.ts_micros = record.dur_micros = 0;
    record.id = 0;
    record.name = Text();
    record.after_text = record.after_number = "";
    record.number = 0;
    record.category = Text();
    ++size;
    return record;
  }
  template <typename Visit>
  void ForEach(Visit visit) const ABSL_SHARED_LOCKS_REQUIRED(mu) {
    for (size_t i = 0; i < size; ++i) {
      visit(chunks[i / kChunkRecords][i % kChunkRecords]);
    }
  }
  void Clear() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    size = 0;
    arena.clear();
  }

  static constexpr size_t kChunkRecords = 1024;

  // Taken by the owning thread per record and by Start/Stop: uncontended
  // while recording.
  BufferLock mu;
  std::vector<std::unique_ptr<Record[]>> chunks ABSL_GUARDED_BY(mu);
  size_t size ABSL_GUARDED_BY(mu) = 0;
  std::string arena ABSL_GUARDED_BY(mu);
  // Ids of slices and arrows: the buffer's index above bit 40, a count that
  // never restarts below, so an id of an earlier recording never matches.
  const uint64_t id_base;
  uint64_t last_id ABSL_GUARDED_BY(mu) = 0;
};

namespace {

std::atomic<uint64_t> next_serial{1};

// The recorders this thread has recorded into, by serial.
struct LocalBuffers {
  std::vector<std::pair<uint64_t, std::shared_ptr<Recorder::ThreadBuffer>>>
      entries;
};
thread_local LocalBuffers local_buffers;

void FillName(Recorder::ThreadBuffer& buffer, const Name& name, Record& record)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(buffer.mu) {
  record.name = buffer.Copy(name.text);
  record.after_text = name.after_text;
  record.has_number = name.has_number;
  record.number = name.number;
  record.after_number = name.after_number;
}

void FillArgs(Recorder::ThreadBuffer& buffer, const Args& args, Record& record)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(buffer.mu) {
  record.arg_count = static_cast<uint8_t>(args.size());
  for (int i = 0; i < args.size(); ++i) {
    Record::RecordedArg& out = record.args[i];
    out.key = args[i].key;
    out.kind = args[i].kind;
    out.number = args[i].number;
    if (args[i].kind == Args::Kind::kString) {
      out.text = buffer.Copy(args[i].text);
    }
  }
}

// Formatted-JSON arguments of the string overloads: one raw argument.
void FillRawArgs(Recorder::ThreadBuffer& buffer, const std::string& members,
                 Record& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(buffer.mu) {
  if (members.empty()) return;
  record.arg_count = 1;
  record.args[0].key = nullptr;
  record.args[0].text = buffer.Copy(members);
}

// Appends a record with what every named event has. REQUIRES: buffer.mu is
// held.
Record& AppendNamed(Recorder::ThreadBuffer& buffer, char phase, int64_t tid,
                    int64_t ts_micros, const Name& name,
                    std::string_view category) {
  Record& record = buffer.Append();
  record.phase = phase;
  record.tid = tid;
  record.ts_micros = ts_micros;
  FillName(buffer, name, record);
  record.category = buffer.Copy(category);
  return record;
}

void AppendMember(std::string* members, std::string_view member) {
  if (!members->empty()) members->append(", ");
  members->append(member.data(), member.size());
}

std::string FormatName(const Recorder::ThreadBuffer& buffer,
                       const Record& record)
    ABSL_SHARED_LOCKS_REQUIRED(buffer.mu) {
  std::string name(buffer.View(record.name));
  name += record.after_text;
  if (record.has_number) {
    absl::StrAppend(&name, record.number, record.after_number);
  }
  return name;
}

std::string FormatArgs(const Recorder::ThreadBuffer& buffer,
                       const Record& record)
    ABSL_SHARED_LOCKS_REQUIRED(buffer.mu) {
  std::string members;
  for (int i = 0; i < record.arg_count; ++i) {
    const Record::RecordedArg& arg = record.args[i];
    if (arg.key == nullptr) {
      AppendMember(&members, buffer.View(arg.text));
      continue;
    }
    std::string value;
    switch (arg.kind) {
      case Args::Kind::kNumber:
        value = absl::StrCat(arg.number);
        break;
      case Args::Kind::kString:
        value = JsonQuote(std::string(buffer.View(arg.text)));
        break;
      case Args::Kind::kTrue:
        value = "true";
        break;
      case Args::Kind::kOperation:
        value = JsonQuote(::tpu::EventId::FromInt(arg.number).ToString());
        break;
    }
    AppendMember(&members, absl::StrCat(JsonQuote(arg.key), ": ", value));
  }
  return members;
}

}  // namespace

std::string Args::members() const {
  std::string members;
  for (int i = 0; i < size_; ++i) {
    const Arg& arg = args_[i];
    std::string value;
    switch (arg.kind) {
      case Kind::kNumber:
        value = absl::StrCat(arg.number);
        break;
      case Kind::kString:
        value = JsonQuote(std::string(arg.text));
        break;
      case Kind::kTrue:
        value = "true";
        break;
      case Kind::kOperation:
        value = JsonQuote(::tpu::EventId::FromInt(arg.number).ToString());
        break;
    }
    AppendMember(&members, absl::StrCat(JsonQuote(arg.key), ": ", value));
  }
  return members;
}

Recorder::Recorder(int pid)
    : pid_(pid),
      serial_(next_serial.fetch_add(1)),
      epoch_(std::chrono::steady_clock::now()),
      epoch_unix_micros_(absl::ToUnixMicros(absl::Now())) {}

Recorder::~Recorder() = default;

Recorder::ThreadBuffer* Recorder::LocalBuffer() {
  auto& entries = local_buffers.entries;
  for (const auto& [serial, buffer] : entries) {
    if (serial == serial_) return buffer.get();
  }
  // Forget buffers of recorders that are gone before adding one.
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [](const auto& entry) {
                                 return entry.second.use_count() == 1;
                               }),
                entries.end());
  absl::MutexLock lock(&mu_);
  auto buffer = std::make_shared<ThreadBuffer>(++buffers_created_);
  buffers_.push_back(buffer);
  entries.emplace_back(serial_, buffer);
  return buffer.get();
}

absl::Status Recorder::Start(bool instructions) {
  absl::MutexLock lock(&mu_);
  if (on_.load()) {
    return absl::FailedPreconditionError(
        "a trace is already being recorded; stop it first (tpu_ctl trace "
        "stop --out=FILE)");
  }
  // Buffers of threads that exited go; the others start empty, keeping
  // their capacity.
  buffers_.erase(std::remove_if(buffers_.begin(), buffers_.end(),
                                [](const std::shared_ptr<ThreadBuffer>& b) {
                                  return b.use_count() == 1;
                                }),
                 buffers_.end());
  for (const std::shared_ptr<ThreadBuffer>& buffer : buffers_) {
    BufferLocker buffer_lock(&buffer->mu);
    buffer->Clear();
  }
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
  // Open slices by id (index into trace.events), until their end.
  absl::flat_hash_map<uint64_t, size_t> open;
  // Arrow ids renumbered from 1, small enough for JSON readers' doubles.
  absl::flat_hash_map<uint64_t, uint64_t> flow_ids;
  size_t records = 0;
  for (const std::shared_ptr<ThreadBuffer>& buffer : buffers_) {
    BufferLocker buffer_lock(&buffer->mu);
    records += buffer->size;
  }
  trace.events.reserve(records);
  for (const std::shared_ptr<ThreadBuffer>& buffer : buffers_) {
    BufferLocker buffer_lock(&buffer->mu);
    buffer->ForEach([&](const Record& record) {
      if (record.phase == 'E') return;
      Event event;
      event.phase = record.phase == 'B' ? 'X' : record.phase;
      event.name = FormatName(*buffer, record);
      event.category = std::string(buffer->View(record.category));
      event.tid = record.tid;
      event.ts_micros = record.ts_micros;
      event.dur_micros = record.phase == 'B' ? -1 : record.dur_micros;
      event.args = FormatArgs(*buffer, record);
      if (record.phase == 's' || record.phase == 'f') {
        event.flow_id =
            flow_ids.try_emplace(record.id, flow_ids.size() + 1).first->second;
      }
      if (record.phase == 'B') open[record.id] = trace.events.size();
      trace.events.push_back(std::move(event));
    });
  }
  // Ends may sit in another thread's buffer than their begin.
  for (const std::shared_ptr<ThreadBuffer>& buffer : buffers_) {
    BufferLocker buffer_lock(&buffer->mu);
    buffer->ForEach([&](const Record& record) {
      if (record.phase != 'E') return;
      auto it = open.find(record.id);
      // A slice of an earlier recording, or ended already.
      if (it == open.end()) return;
      Event& event = trace.events[it->second];
      event.dur_micros =
          std::max<int64_t>(0, record.ts_micros - event.ts_micros);
      const std::string end_args = FormatArgs(*buffer, record);
      if (!end_args.empty()) AppendMember(&event.args, end_args);
      open.erase(it);
    });
    buffer->Clear();
  }
  // Still open (e.g. a core blocked in a collective): ends now.
  for (const auto& [id, index] : open) {
    Event& event = trace.events[index];
    event.dur_micros = std::max<int64_t>(0, now - event.ts_micros);
    AppendMember(&event.args, "\"unfinished\": true");
  }
  trace.track_names.assign(track_names_.begin(), track_names_.end());
  std::sort(trace.track_names.begin(), trace.track_names.end());
  return trace;
}

uint64_t Recorder::Begin(int64_t tid, const Name& name, const char* category,
                         const Args& args, int64_t ts_micros) {
  if (!on()) return 0;
  const int64_t ts = ts_micros < 0 ? NowMicros() : ts_micros;
  ThreadBuffer& buffer = *LocalBuffer();
  BufferLocker lock(&buffer.mu);
  Record& record = AppendNamed(buffer, 'B', tid, ts, name, category);
  record.id = buffer.NextId();
  FillArgs(buffer, args, record);
  return record.id;
}

void Recorder::End(uint64_t slice, const Args& args, int64_t ts_micros) {
  if (slice == 0 || !on()) return;
  const int64_t ts = ts_micros < 0 ? NowMicros() : ts_micros;
  ThreadBuffer& buffer = *LocalBuffer();
  BufferLocker lock(&buffer.mu);
  Record& record = buffer.Append();
  record.phase = 'E';
  record.id = slice;
  record.ts_micros = ts;
  FillArgs(buffer, args, record);
}

void Recorder::Complete(int64_t tid, const Name& name, const char* category,
                        int64_t ts_micros, int64_t dur_micros,
                        const Args& args) {
  if (!on()) return;
  ThreadBuffer& buffer = *LocalBuffer();
  BufferLocker lock(&buffer.mu);
  Record& record = AppendNamed(buffer, 'X', tid, ts_micros, name, category);
  record.dur_micros = std::max<int64_t>(0, dur_micros);
  FillArgs(buffer, args, record);
}

void Recorder::Instant(int64_t tid, const Name& name, const char* category,
                       const Args& args) {
  if (!on()) return;
  const int64_t ts = NowMicros();
  ThreadBuffer& buffer = *LocalBuffer();
  BufferLocker lock(&buffer.mu);
  Record& record = AppendNamed(buffer, 'i', tid, ts, name, category);
  FillArgs(buffer, args, record);
}

void Recorder::Flow(const Name& name, int64_t from_tid, int64_t from_ts,
                    int64_t to_tid, int64_t to_ts) {
  if (!on()) return;
  ThreadBuffer& buffer = *LocalBuffer();
  BufferLocker lock(&buffer.mu);
  const uint64_t id = buffer.NextId();
  for (const bool start : {true, false}) {
    Record& record =
        AppendNamed(buffer, start ? 's' : 'f', start ? from_tid : to_tid,
                    start ? from_ts : to_ts, name, "flow");
    record.id = id;
  }
}

uint64_t Recorder::Begin(int64_t tid, const std::string& name,
                         const std::string& category, const std::string& args,
                         int64_t ts_micros) {
  if (!on()) return 0;
  const int64_t ts = ts_micros < 0 ? NowMicros() : ts_micros;
  ThreadBuffer& buffer = *LocalBuffer();
  BufferLocker lock(&buffer.mu);
  Record& record = AppendNamed(buffer, 'B', tid, ts, Name(name), category);
  record.id = buffer.NextId();
  FillRawArgs(buffer, args, record);
  return record.id;
}

void Recorder::End(uint64_t slice, const std::string& args, int64_t ts_micros) {
  if (slice == 0 || !on()) return;
  const int64_t ts = ts_micros < 0 ? NowMicros() : ts_micros;
  ThreadBuffer& buffer = *LocalBuffer();
  BufferLocker lock(&buffer.mu);
  Record& record = buffer.Append();
  record.phase = 'E';
  record.id = slice;
  record.ts_micros = ts;
  FillRawArgs(buffer, args, record);
}

void Recorder::Complete(int64_t tid, const std::string& name,
                        const std::string& category, int64_t ts_micros,
                        int64_t dur_micros, const std::string& args) {
  if (!on()) return;
  ThreadBuffer& buffer = *LocalBuffer();
  BufferLocker lock(&buffer.mu);
  Record& record =
      AppendNamed(buffer, 'X', tid, ts_micros, Name(name), category);
  record.dur_micros = std::max<int64_t>(0, dur_micros);
  FillRawArgs(buffer, args, record);
}

void Recorder::Instant(int64_t tid, const std::string& name,
                       const std::string& category, const std::string& args) {
  if (!on()) return;
  const int64_t ts = NowMicros();
  ThreadBuffer& buffer = *LocalBuffer();
  BufferLocker lock(&buffer.mu);
  Record& record = AppendNamed(buffer, 'i', tid, ts, Name(name), category);
  FillRawArgs(buffer, args, record);
}

void Recorder::Flow(const std::string& name, int64_t from_tid, int64_t from_ts,
                    int64_t to_tid, int64_t to_ts) {
  Flow(Name(name), from_tid, from_ts, to_tid, to_ts);
}

void Recorder::NameTrack(int64_t tid, std::string name) {
  absl::MutexLock lock(&mu_);
  track_names_[tid] = std::move(name);
}

}  // namespace tpu::emulator::trace
