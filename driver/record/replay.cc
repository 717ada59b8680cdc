#include "driver/record/replay.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "driver/completion_event.h"

namespace tpu::driver {
namespace {

using Entry = tpu_driver::StreamRequest::Entry;

// What an operation of the recording created, by its recorded id.
struct Created {
  std::unique_ptr<BufferHandle> buffer;
  std::unique_ptr<CompiledProgramHandle> compiled;
  std::unique_ptr<LoadedProgramHandle> loaded;
  std::shared_ptr<Event> event;
};

// A handle an entry names, and whether the entry frees or overwrites it.
struct NamedHandle {
  int64_t id;
  bool replaces;
};

std::vector<NamedHandle> NamedHandles(const Entry& entry) {
  std::vector<NamedHandle> named;
  switch (entry.request_case()) {
    case Entry::kAllocTuple:
      for (int64_t child : entry.alloc_tuple().children()) {
        named.push_back({child, false});
      }
      break;
    case Entry::kDealloc:
      named.push_back({entry.dealloc().handle(), true});
      break;
    case Entry::kTransferTo:
      named.push_back({entry.transfer_to().target_handle(), true});
      break;
    case Entry::kTransferFrom:
      named.push_back({entry.transfer_from().source_handle(), false});
      break;
    case Entry::kTransferFromTo:
      named.push_back({entry.transfer_from_to().source_handle(), false});
      named.push_back({entry.transfer_from_to().target_handle(), true});
      break;
    case Entry::kLoad:
      named.push_back({entry.load().compiled_program_handle(), false});
      break;
    case Entry::kUnload:
      named.push_back({entry.unload().loaded_program_handle(), true});
      break;
    case Entry::kExecute:
      named.push_back({entry.execute().loaded_program_handle(), false});
      for (int64_t input : entry.execute().input_handle()) {
        named.push_back({input, false});
      }
      for (int64_t output : entry.execute().output_handle()) {
        named.push_back({output, true});
      }
      break;
    default:
      break;
  }
  return named;
}

class Replayer {
 public:
  Replayer(TpuDriver& driver, absl::Duration gate_timeout)
      : driver_(driver), gate_timeout_(gate_timeout) {}

  // Issues `entry`, whose transfer_from (if it is one) reads into `op`;
  // returns its event.
  //
  // A log does not say what the recorded client awaited before issuing an
  // operation, only its wait_for ids; a client reads a buffer only once it
  // saw the operations that wrote it complete, and frees or overwrites a
  // handle only once it saw every earlier operation on it complete. So an
  // operation is issued after those completed, with whatever status (a
  // wait_for would fail it when they failed, which the recording did not).
  std::shared_ptr<Event> Issue(const Entry& entry, ReplayedOperation& op) {
    const std::vector<NamedHandle> named = NamedHandles(entry);
    for (const NamedHandle& handle : named) {
      History& history = histories_[handle.id];
      AwaitAll(handle.replaces ? history.uses : history.writes);
      if (handle.replaces) {
        history.uses.clear();
        history.writes.clear();
      }
    }
    std::shared_ptr<Event> event = IssueNow(entry, op);
    for (const NamedHandle& handle : named) {
      History& history = histories_[handle.id];
      history.uses.push_back(event);
      if (handle.replaces) history.writes.push_back(event);
    }
    // What it created, if anything: freeing it waits for the creation.
    histories_[entry.operation_id()].uses.push_back(event);
    return event;
  }

 private:
  std::shared_ptr<Event> IssueNow(const Entry& entry, ReplayedOperation& op) {
    const int64_t id = entry.operation_id();
    if (created_.contains(id)) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
          "the recording uses id ", id, " for a second operation")));
    }
    std::vector<Event*> wait_for;
    for (int64_t wait_id : entry.wait_for_id()) {
      auto it = created_.find(wait_id);
      if (it == created_.end()) {
        return Remember(id, Fail(absl::NotFoundError(absl::StrCat(
                                "waits for id ", wait_id,
                                ", which no earlier operation of the "
                                "recording has"))));
      }
      wait_for.push_back(it->second.event.get());
    }
    absl::Status missing;
    auto buffer = [&](int64_t handle) -> BufferHandle* {
      auto it = created_.find(handle);
      if (it != created_.end() && it->second.buffer != nullptr) {
        return it->second.buffer.get();
      }
      if (missing.ok()) {
        missing = absl::NotFoundError(absl::StrCat(
            "names buffer ", handle,
            ", which no earlier operation of the recording allocated (or "
            "it was deallocated)"));
      }
      return nullptr;
    };
    Created& made = created_[id];
    switch (entry.request_case()) {
      case Entry::kAlloc: {
        const auto& alloc = entry.alloc();
        made.buffer = alloc.has_shape()
                          ? driver_.Allocate(alloc.core_id(), alloc.region(),
                                             alloc.shape(), wait_for)
                          : driver_.Allocate(alloc.core_id(), alloc.region(),
                                             alloc.num_bytes(), wait_for);
        return made.event = made.buffer->OnReady();
      }
      case Entry::kAllocTuple: {
        std::vector<BufferHandle*> children;
        for (int64_t child : entry.alloc_tuple().children()) {
          children.push_back(buffer(child));
        }
        if (!missing.ok()) return made.event = Fail(missing);
        made.buffer = driver_.AllocateTuple(entry.alloc_tuple().core_id(),
                                            entry.alloc_tuple().region(),
                                            children, wait_for);
        return made.event = made.buffer->OnReady();
      }
      case Entry::kDealloc: {
        if (buffer(entry.dealloc().handle()) == nullptr) {
          return made.event = Fail(missing);
        }
        std::unique_ptr<BufferHandle> handle =
            std::move(created_.find(entry.dealloc().handle())->second.buffer);
        return made.event = driver_.Deallocate(std::move(handle), wait_for);
      }
      case Entry::kTransferTo: {
        BufferHandle* dst = buffer(entry.transfer_to().target_handle());
        if (dst == nullptr) return made.event = Fail(missing);
        const std::string& data = entry.transfer_to().data();
        if (static_cast<int64_t>(data.size()) != dst->size_in_bytes()) {
          return made.event = Fail(absl::InvalidArgumentError(
                     absl::StrCat("carries ", data.size(), " bytes for buffer ",
                                  entry.transfer_to().target_handle(),
                                  ", which holds ", dst->size_in_bytes())));
        }
        return made.event =
                   driver_.TransferToDevice(data.data(), dst, wait_for);
      }
      case Entry::kTransferFrom: {
        BufferHandle* src = buffer(entry.transfer_from().source_handle());
        if (src == nullptr) return made.event = Fail(missing);
        op.transfer_from_data.emplace(src->size_in_bytes(), '\0');
        return made.event = driver_.TransferFromDevice(
                   src, op.transfer_from_data->data(), wait_for);
      }
      case Entry::kTransferFromTo: {
        BufferHandle* src = buffer(entry.transfer_from_to().source_handle());
        BufferHandle* dst = buffer(entry.transfer_from_to().target_handle());
        if (!missing.ok()) return made.event = Fail(missing);
        return made.event =
                   driver_.TransferFromDeviceToDevice(src, dst, wait_for);
      }
      case Entry::kCompile: {
        const auto& compile = entry.compile();
        made.compiled = driver_.CompileProgram(
            compile.hlo_program(),
            compile.has_num_replicas()
                ? static_cast<int32_t>(compile.num_replicas())
                : 1,
            wait_for);
        return made.event = made.compiled->OnReady();
      }
      case Entry::kLoad: {
        auto it = created_.find(entry.load().compiled_program_handle());
        if (it == created_.end() || it->second.compiled == nullptr) {
          return made.event = Fail(absl::NotFoundError(absl::StrCat(
                     "loads compiled program ",
                     entry.load().compiled_program_handle(),
                     ", which no earlier operation of the recording "
                     "compiled")));
        }
        made.loaded = driver_.LoadProgram(entry.load().core_id(),
                                          it->second.compiled.get(), wait_for);
        return made.event = made.loaded->OnReady();
      }
      case Entry::kUnload: {
        const int64_t handle = entry.unload().loaded_program_handle();
        auto it = created_.find(handle);
        if (it == created_.end() || it->second.loaded == nullptr) {
          return made.event = Fail(NotLoaded(handle));
        }
        return made.event = driver_.UnloadProgram(std::move(it->second.loaded),
                                                  wait_for);
      }
      case Entry::kExecute: {
        const auto& execute = entry.execute();
        auto it = created_.find(execute.loaded_program_handle());
        if (it == created_.end() || it->second.loaded == nullptr) {
          return made.event = Fail(NotLoaded(execute.loaded_program_handle()));
        }
        std::vector<BufferHandle*> inputs, outputs;
        for (int64_t input : execute.input_handle()) {
          inputs.push_back(buffer(input));
        }
        for (int64_t output : execute.output_handle()) {
          outputs.push_back(buffer(output));
        }
        if (!missing.ok()) return made.event = Fail(missing);
        return made.event = driver_.ExecuteProgram(
                   it->second.loaded.get(), inputs, outputs,
                   execute.device_assignment(), wait_for);
      }
      case Entry::REQUEST_NOT_SET:
        break;
    }
    return made.event = Fail(absl::InvalidArgumentError(
               "carries no operation this replayer knows (an empty entry, or "
               "one from a newer protocol)"));
  }

  // Past the timeout the operation is issued anyway: it then shows what the
  // target does with it, and the stuck one is reported DEADLINE_EXCEEDED.
  void AwaitAll(const std::vector<std::shared_ptr<Event>>& events) {
    for (const std::shared_ptr<Event>& event : events) {
      (void)event->AwaitWithTimeout(gate_timeout_);
    }
  }

  static std::shared_ptr<Event> Fail(absl::Status status) {
    return CompletionEvent::Done(std::move(status));
  }
  static absl::Status NotLoaded(int64_t handle) {
    return absl::NotFoundError(absl::StrCat(
        "names loaded program ", handle,
        ", which no earlier operation of the recording loaded (or it was "
        "unloaded)"));
  }
  std::shared_ptr<Event> Remember(int64_t id, std::shared_ptr<Event> event) {
    created_[id].event = event;
    return event;
  }

  TpuDriver& driver_;
  const absl::Duration gate_timeout_;
  absl::flat_hash_map<int64_t, Created> created_;
  // Per handle, since it was last freed or overwritten: the events of the
  // operations that named it, and of those that wrote it.
  struct History {
    std::vector<std::shared_ptr<Event>> uses;
    std::vector<std::shared_ptr<Event>> writes;
  };
  absl::flat_hash_map<int64_t, History> histories_;
};

absl::Status AwaitBounded(Event& event, absl::Duration timeout) {
  std::optional<absl::Status> status = event.AwaitWithTimeout(timeout);
  if (status.has_value()) return *status;
  return absl::DeadlineExceededError(absl::StrCat("did not complete within ",
                                                  absl::FormatDuration(timeout),
                                                  " (--timeout)"));
}

std::string HexBytes(const std::string& bytes, size_t from, size_t count) {
  std::string hex;
  for (size_t i = from; i < std::min(bytes.size(), from + count); ++i) {
    absl::StrAppendFormat(&hex, "%s%02x", hex.empty() ? "" : " ",
                          static_cast<unsigned char>(bytes[i]));
  }
  return hex;
}

}  // namespace

absl::StatusOr<RecordedEntries> ReadRecordedEntries(const std::string& path) {
  absl::StatusOr<std::unique_ptr<RecordReader>> reader =
      RecordReader::Open(path);
  if (!reader.ok()) return reader.status();
  RecordedEntries entries;
  while (true) {
    auto entry = (*reader)->NextEntry();
    if (!entry.ok()) return entry.status();
    if (!entry->has_value()) return entries;
    entries.push_back(**std::move(entry));
  }
}

absl::StatusOr<RecordedResults> ReadRecordedResults(const std::string& path) {
  absl::StatusOr<std::unique_ptr<RecordReader>> reader =
      RecordReader::Open(path);
  if (!reader.ok()) return reader.status();
  RecordedResults results;
  while (true) {
    auto result = (*reader)->NextResult();
    if (!result.ok()) return result.status();
    if (!result->has_value()) return results;
    const int64_t id = (*result)->operation_id();
    results[id] = **std::move(result);
  }
}

ReplayReport Replay(TpuDriver& driver, const RecordedEntries& entries,
                    const ReplayOptions& options) {
  ReplayReport report;
  // Sized up front: a transfer_from writes into its operation's string.
  report.operations.resize(entries.size());
  std::vector<std::shared_ptr<Event>> events;
  Replayer replayer(driver, options.operation_timeout);
  for (size_t i = 0; i < entries.size(); ++i) {
    ReplayedOperation& op = report.operations[i];
    op.index = static_cast<int>(i);
    op.operation_id = entries[i].operation_id();
    op.kind = EntryKind(entries[i]);
    events.push_back(replayer.Issue(entries[i], op));
    if (options.stop_at_first_failure) {
      op.status = AwaitBounded(*events.back(), options.operation_timeout);
      if (!op.status.ok()) {
        report.stopped_early = i + 1 < entries.size();
        break;
      }
    }
  }
  report.operations.resize(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    ReplayedOperation& op = report.operations[i];
    if (!options.stop_at_first_failure) {
      op.status = AwaitBounded(*events[i], options.operation_timeout);
    }
    if (!op.status.ok()) {
      ++report.failed;
      op.transfer_from_data.reset();
    }
  }
  return report;
}

std::string DescribeOperation(const ReplayedOperation& operation) {
  return absl::StrCat("operation #", operation.index, " (id ",
                      operation.operation_id, ", ", operation.kind, ")");
}

std::optional<std::string> FirstDifference(const ReplayReport& report,
                                           const RecordedResults& recorded) {
  for (const ReplayedOperation& op : report.operations) {
    auto it = recorded.find(op.operation_id);
    if (it == recorded.end()) continue;  // the recording ended before it
    const tpu_emulator::OperationResult& was = it->second;
    const absl::Status recorded_status(
        static_cast<absl::StatusCode>(was.code()), was.message());
    if (recorded_status.code() != op.status.code()) {
      return absl::StrCat(DescribeOperation(op), ": status differs: recorded ",
                          recorded_status.ToString(), ", replayed ",
                          op.status.ToString());
    }
    if (!was.has_transfer_from_data() || !op.transfer_from_data.has_value()) {
      continue;
    }
    const std::string& before = was.transfer_from_data();
    const std::string& now = *op.transfer_from_data;
    if (before == now) continue;
    if (before.size() != now.size()) {
      return absl::StrCat(DescribeOperation(op),
                          ": transfer_from size differs: recorded ",
                          before.size(), " bytes, replayed ", now.size());
    }
    size_t first = 0;
    while (before[first] == now[first]) ++first;
    size_t differing = 0;
    for (size_t i = 0; i < now.size(); ++i) differing += before[i] != now[i];
    // Shown from a 4-byte boundary, where most elements start.
    const size_t from = first - first % 4;
    return absl::StrCat(
        DescribeOperation(op), ": transfer_from bytes differ: ", differing,
        " of ", now.size(), " bytes, the first at byte ", first, "; from byte ",
        from, " recorded ", HexBytes(before, from, 8), ", replayed ",
        HexBytes(now, from, 8));
  }
  return std::nullopt;
}

}  // namespace tpu::driver
