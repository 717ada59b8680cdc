#include "emulator/collectives/collective_hub.h"

#include <algorithm>
#include <iostream>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/wait_report_text.h"

namespace tpu::emulator {
namespace {

constexpr size_t kHistoryPerCore = 1000;

int64_t UnixMicros(absl::Time t) { return absl::ToUnixMicros(t); }

std::string DevicesKey(const std::vector<int>& devices) {
  return absl::StrJoin(devices, ",");
}

}  // namespace

// Everything the hub knows about one core.
struct CollectiveHub::CoreRecord {
  int core = 0;
  tpu_emulator::CoreWait::Activity activity = tpu_emulator::CoreWait::IDLE;
  std::string program;
  std::string fingerprint;
  int64_t launch = 0;
  uint32_t client_id = 0;
  // The meeting it waits in, while waiting.
  std::shared_ptr<Meeting> meeting;
  absl::Time since;
  bool logged = false;
  int64_t next_sequence = 0;
  std::deque<tpu_emulator::CollectiveRecord> history;
};

// One meeting point: a collective instruction's execution in one launch of
// one group.
struct CollectiveHub::Meeting {
  std::string key;
  std::string program;
  int64_t launch = 0;
  std::string instruction;
  std::string kind;
  std::string signature;
  std::vector<int> devices;
  std::vector<std::optional<Literal>> contributions;
  std::vector<bool> arrived;
  int arrived_count = 0;
  // Set once the last participant combined the contributions.
  bool done = false;
  absl::Status status;
  std::vector<Literal> outputs;
  int collected = 0;
  // The last to arrive, and when (on the trace's clock).
  int last_core = -1;
  int64_t last_arrival_micros = 0;
};

Launch::Launch(CollectiveHub* hub, LaunchInfo info, int64_t number)
    : hub_(hub), info_(std::move(info)), number_(number) {}

Launch::~Launch() { hub_->EndLaunch(*this); }

absl::StatusOr<Literal> Launch::Exchange(
    const interpreter::CollectiveRequest& request, Literal contribution,
    const interpreter::CollectiveCombine& combine) {
  return hub_->Exchange(*this, request, std::move(contribution), combine);
}

CollectiveHub::CollectiveHub(CollectiveHubOptions options)
    : options_(std::move(options)) {
  for (int core : options_.cores) {
    auto record = std::make_unique<CoreRecord>();
    record->core = core;
    cores_.push_back(std::move(record));
  }
  if (options_.report_waits_after > absl::ZeroDuration()) {
    reporter_ = std::thread([this] { LogLongWaits(); });
  }
}

CollectiveHub::~CollectiveHub() { StopReporting(); }

void CollectiveHub::StopReporting() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (reporter_.joinable()) reporter_.join();
}

CollectiveHub::CoreRecord* CollectiveHub::FindCore(int core) {
  for (auto& record : cores_) {
    if (record->core == core) return record.get();
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<Launch>> CollectiveHub::BeginLaunch(
    LaunchInfo info) {
  {
    absl::MutexLock lock(&mu_);
    if (FindCore(info.core) == nullptr) {
      return absl::InternalError(
          absl::StrCat("core ", info.core, " is not a core of this worker"));
    }
  }
  // The barrier comes first: a launch it refuses is not numbered, so the
  // cores' next launches of the program still meet.
  if (options_.launch_barrier && info.assignment.size() > 1) {
    if (absl::Status s = LaunchBarrier(info); !s.ok()) return s;
  }
  int64_t number = 0;
  {
    absl::MutexLock lock(&mu_);
    CoreRecord* core = FindCore(info.core);
    const std::string count_key =
        absl::StrCat(info.client_id, "|", info.fingerprint, "|",
                     DevicesKey(info.assignment), "|", info.core);
    number = launch_counts_[count_key]++;
    core->activity = tpu_emulator::CoreWait::RUNNING;
    core->program = info.program;
    core->fingerprint = info.fingerprint;
    core->launch = number;
    core->client_id = info.client_id;
  }
  return std::unique_ptr<Launch>(new Launch(this, std::move(info), number));
}

void CollectiveHub::EndLaunch(const Launch& launch) {
  absl::MutexLock lock(&mu_);
  CoreRecord* core = FindCore(launch.info_.core);
  if (core == nullptr) return;
  core->activity = tpu_emulator::CoreWait::IDLE;
  core->meeting.reset();
}

void CollectiveHub::ForgetClient(uint32_t client_id) {
  absl::MutexLock lock(&mu_);
  const std::string prefix = absl::StrCat(client_id, "|");
  absl::erase_if(launch_counts_, [&](const auto& entry) {
    return absl::StartsWith(entry.first, prefix);
  });
}

void CollectiveHub::WakeWaiters() {
  // Releasing the mutex re-evaluates every waiter's condition.
  absl::MutexLock lock(&mu_);
}

absl::StatusOr<Literal> CollectiveHub::Exchange(
    Launch& launch, const interpreter::CollectiveRequest& request,
    Literal contribution, const interpreter::CollectiveCombine& combine) {
  const LaunchInfo& info = launch.info_;
  const std::string site =
      absl::StrCat(request.computation, "/", request.instruction);
  const int64_t occurrence = launch.occurrences_[site]++;
  const std::string key =
      absl::StrCat(info.client_id, "|", info.fingerprint, "|",
                   DevicesKey(info.assignment), "|", launch.number_, "|", site,
                   "|", occurrence, "|", DevicesKey(request.devices));
  const int n = static_cast<int>(request.devices.size());

  absl::MutexLock lock(&mu_);
  CoreRecord* core = FindCore(info.core);
  std::shared_ptr<Meeting>& slot = meetings_[key];
  if (slot == nullptr) {
    slot = std::make_shared<Meeting>();
    slot->key = key;
    slot->program = info.program;
    slot->launch = launch.number_;
    slot->instruction = request.instruction;
    slot->kind = request.kind;
    slot->signature = request.signature;
    slot->devices = request.devices;
    slot->contributions.resize(n);
    slot->arrived.assign(n, false);
  }
  std::shared_ptr<Meeting> meeting = slot;
  if (request.rank < 0 || request.rank >= n || meeting->arrived[request.rank]) {
    return absl::InternalError(absl::StrCat(
        "core ", info.core, " arrived twice at ", request.instruction));
  }
  meeting->contributions[request.rank] = std::move(contribution);
  meeting->arrived[request.rank] = true;
  ++meeting->arrived_count;

  // The flight-recorder entry and the core's state.
  tpu_emulator::CollectiveRecord record;
  record.set_sequence(core->next_sequence++);
  record.set_program(info.program);
  record.set_launch(launch.number_);
  record.set_instruction(request.instruction);
  record.set_kind(request.kind);
  record.set_signature(request.signature);
  for (int d : request.devices) record.add_group(d);
  const absl::Time start = absl::Now();
  record.set_start_unix_micros(UnixMicros(start));
  core->history.push_back(std::move(record));
  if (core->history.size() > kHistoryPerCore) core->history.pop_front();
  const int64_t sequence = core->history.back().sequence();
  core->activity = tpu_emulator::CoreWait::WAITING;
  core->meeting = meeting;
  core->since = start;
  core->logged = false;

  // The trace: a waiter's rendezvous wait is one slice, the exchange that
  // follows another.
  trace::Recorder* const recorder = options_.recorder;
  const int64_t track = trace::CoreTrack(info.core);
  const int64_t arrived_micros =
      recorder != nullptr ? recorder->NowMicros() : 0;
  uint64_t wait_slice = 0;
  if (meeting->arrived_count == n) {
    meeting->last_core = info.core;
    meeting->last_arrival_micros = arrived_micros;
  } else if (recorder != nullptr && recorder->on()) {
    wait_slice = recorder->Begin(
        track, absl::StrCat(request.instruction, " wait"), "collective wait",
        trace::Args()
            .Add("kind", request.kind)
            .Add("program", info.program)
            .Add("launch", launch.number_)
            .Add("group", DevicesKey(request.devices))
            .members(),
        arrived_micros);
  }

  if (meeting->arrived_count == n) {
    // The last arrival combines, outside the lock: a 64 MiB reduction must
    // not stop other cores from arriving elsewhere.
    std::vector<Literal> all;
    all.reserve(n);
    for (auto& c : meeting->contributions) all.push_back(std::move(*c));
    meetings_.erase(key);
    mu_.Unlock();
    absl::StatusOr<std::vector<Literal>> outputs = combine(all);
    mu_.Lock();
    if (outputs.ok() && static_cast<int>(outputs->size()) != n) {
      outputs = absl::InternalError(
          "a collective produced the wrong number "
          "of outputs");
    }
    meeting->status = outputs.status();
    if (outputs.ok()) meeting->outputs = *std::move(outputs);
    meeting->done = true;
  } else {
    const std::atomic<bool>* cancelled = info.cancelled;
    auto ready = [&meeting, cancelled]() {
      return meeting->done || (cancelled != nullptr && cancelled->load());
    };
    mu_.Await(absl::Condition(&ready));
  }

  // Close the flight-recorder entry (if it is still in the window).
  core = FindCore(info.core);
  for (auto it = core->history.rbegin(); it != core->history.rend(); ++it) {
    if (it->sequence() != sequence) continue;
    it->set_done(meeting->done);
    it->set_end_unix_micros(UnixMicros(absl::Now()));
    break;
  }
  core->activity = tpu_emulator::CoreWait::RUNNING;
  core->meeting.reset();
  if (recorder != nullptr && recorder->on()) {
    if (!meeting->done) {
      recorder->End(wait_slice, "\"cancelled\": true");
    } else {
      const int64_t exchange_start =
          std::max(arrived_micros, meeting->last_arrival_micros);
      recorder->End(wait_slice, "", exchange_start);
      if (wait_slice != 0) {
        recorder->Flow(absl::StrCat("waited for core ", meeting->last_core),
                       track, arrived_micros,
                       trace::CoreTrack(meeting->last_core), exchange_start);
      }
      recorder->Complete(
          track, request.instruction, "collective exchange", exchange_start,
          recorder->NowMicros() - exchange_start,
          trace::Args()
              .Add("kind", request.kind)
              .Add("signature", request.signature)
              .Add("status", meeting->status.ok() ? std::string("OK")
                                                  : meeting->status.ToString())
              .members());
    }
  }
  if (!meeting->done) {
    // Cancelled while waiting: withdraw, so the meeting does not hold data
    // for a participant that is gone.
    meeting->arrived[request.rank] = false;
    meeting->contributions[request.rank].reset();
    if (--meeting->arrived_count == 0) meetings_.erase(key);
    return absl::CancelledError(absl::StrCat(
        request.kind, " ", request.instruction,
        ": the client was closed while this core waited for its peers"));
  }
  if (!meeting->status.ok()) return meeting->status;
  return meeting->outputs[request.rank];
}

// Cores meet per assignment (as a device set) and per launch on that set:
// the k-th multi-core launch of each core must be the same program.
struct CollectiveHub::Barrier {
  std::vector<std::string> programs;
  int arrived = 0;
  int left = 0;
};

absl::Status CollectiveHub::LaunchBarrier(const LaunchInfo& info) {
  std::vector<int> devices = info.assignment;
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  const int n = static_cast<int>(devices.size());
  const int rank = static_cast<int>(
      std::find(devices.begin(), devices.end(), info.core) - devices.begin());
  if (rank >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat("core ", info.core, " is not in the device assignment {",
                     DevicesKey(info.assignment), "}"));
  }
  const std::string set_key =
      absl::StrCat(info.client_id, "|barrier|", DevicesKey(devices));
  absl::MutexLock lock(&mu_);
  const int64_t k = launch_counts_[absl::StrCat(set_key, "|", info.core)]++;
  const std::string key = absl::StrCat(set_key, "|", k);
  std::shared_ptr<Barrier>& slot = barriers_[key];
  if (slot == nullptr) {
    slot = std::make_shared<Barrier>();
    slot->programs.resize(n);
  }
  std::shared_ptr<Barrier> barrier = slot;
  barrier->programs[rank] = absl::StrCat(info.program, "#", info.fingerprint);
  ++barrier->arrived;
  const std::atomic<bool>* cancelled = info.cancelled;
  auto ready = [&barrier, n, cancelled]() {
    return barrier->arrived == n || (cancelled != nullptr && cancelled->load());
  };
  mu_.Await(absl::Condition(&ready));
  if (barrier->arrived < n) {
    barrier->programs[rank].clear();
    if (--barrier->arrived == 0) barriers_.erase(key);
    return absl::CancelledError(
        "launch barrier: the client was closed while this core waited for "
        "the other cores of its device assignment");
  }
  if (++barrier->left == n) barriers_.erase(key);
  std::vector<std::string> started;
  bool same = true;
  for (int r = 0; r < n; ++r) {
    const std::string& program = barrier->programs[r];
    same = same && program == barrier->programs[0];
    started.push_back(absl::StrCat("core ", devices[r], " started ",
                                   program.substr(0, program.find('#'))));
  }
  if (same) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("launch barrier: the cores of device assignment {",
                   DevicesKey(info.assignment),
                   "} did not start the same program for the same launch: ",
                   absl::StrJoin(started, ", ")));
}

tpu_emulator::WaitReport CollectiveHub::Report(int history) const {
  absl::MutexLock lock(&mu_);
  tpu_emulator::WaitReport report;
  const absl::Time now = absl::Now();
  report.set_taken_unix_micros(UnixMicros(now));
  std::vector<int> nodes;
  std::vector<std::vector<int>> edges;
  for (const auto& core : cores_) {
    tpu_emulator::CoreWait* wait = report.add_cores();
    wait->set_core(core->core);
    wait->set_host_id(options_.host_id);
    wait->set_activity(core->activity);
    if (core->activity != tpu_emulator::CoreWait::IDLE) {
      wait->set_program(core->program);
      wait->set_launch(core->launch);
      wait->set_client_id(core->client_id);
    }
    if (options_.queued) wait->set_queued(options_.queued(core->core));
    const size_t first =
        core->history.size() > static_cast<size_t>(std::max(history, 0))
            ? core->history.size() - std::max(history, 0)
            : 0;
    for (size_t i = first; i < core->history.size(); ++i) {
      *wait->add_history() = core->history[i];
    }
    nodes.push_back(core->core);
    edges.emplace_back();
    const Meeting* meeting = core->meeting.get();
    if (core->activity != tpu_emulator::CoreWait::WAITING ||
        meeting == nullptr) {
      continue;
    }
    wait->set_instruction(meeting->instruction);
    wait->set_kind(meeting->kind);
    wait->set_signature(meeting->signature);
    for (int d : meeting->devices) wait->add_group(d);
    wait->set_since_unix_micros(UnixMicros(core->since));
    for (size_t r = 0; r < meeting->devices.size(); ++r) {
      if (meeting->arrived[r]) continue;
      const int missing = meeting->devices[r];
      wait->add_waiting_for(missing);
      edges.back().push_back(missing);
      wait->add_diagnosis(Diagnose(*meeting, missing));
    }
  }
  for (const std::vector<int>& cycle : wire::FindCycles(nodes, edges)) {
    auto* out = report.add_cycles();
    for (int c : cycle) out->add_cores(c);
  }
  return report;
}

std::string CollectiveHub::Diagnose(const Meeting& meeting, int missing) const {
  const std::string who = absl::StrCat("core ", missing, " ");
  CoreRecord* other = nullptr;
  for (const auto& core : cores_) {
    if (core->core == missing) other = core.get();
  }
  if (other == nullptr) {
    return who + "is not a core of this worker (another host of the slice)";
  }
  switch (other->activity) {
    case tpu_emulator::CoreWait::IDLE: {
      const int queued = options_.queued ? options_.queued(missing) : 0;
      if (queued > 0) {
        return absl::StrCat(who, "is idle with ", queued,
                            " operation(s) queued: they wait for something "
                            "unfinished");
      }
      return who + "is idle: it has not started launch " +
             std::to_string(meeting.launch) + " of " + meeting.program;
    }
    case tpu_emulator::CoreWait::RUNNING:
      if (other->program != meeting.program) {
        return absl::StrCat(who, "is running another program, ", other->program,
                            " launch ", other->launch);
      }
      return absl::StrCat(who, "is running ", other->program, " launch ",
                          other->launch,
                          " and has not reached this collective yet");
    case tpu_emulator::CoreWait::WAITING: {
      const Meeting* there = other->meeting.get();
      if (there == nullptr) break;
      std::string what = absl::StrCat(
          who, "waits in ", there->program, " launch ", there->launch, " at ",
          there->kind, " ", there->instruction, " [", there->signature, "]");
      if (there->program != meeting.program) {
        absl::StrAppend(&what, ": a different program");
      } else if (there->launch != meeting.launch) {
        absl::StrAppend(&what, ": a different launch");
      } else if (there->kind != meeting.kind) {
        absl::StrAppend(&what, ": a different collective kind");
      } else if (there->signature != meeting.signature) {
        absl::StrAppend(&what, ": a different shape or element type");
      } else if (there->instruction != meeting.instruction) {
        absl::StrAppend(&what, ": a different collective");
      } else {
        absl::StrAppend(&what, ": the same collective in another group");
      }
      return what;
    }
    default:
      break;
  }
  return who + "state unknown";
}

void CollectiveHub::LogLongWaits() {
  const absl::Duration period =
      std::min(absl::Seconds(1), options_.report_waits_after / 2);
  while (true) {
    bool report = false;
    {
      absl::MutexLock lock(&mu_);
      auto stop = [this]()
                      ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
      mu_.AwaitWithTimeout(absl::Condition(&stop), period);
      if (stopping_) return;
      const absl::Time now = absl::Now();
      for (auto& core : cores_) {
        if (core->activity == tpu_emulator::CoreWait::WAITING &&
            !core->logged && now - core->since >= options_.report_waits_after) {
          core->logged = true;
          report = true;
        }
      }
    }
    if (report) {
      std::cerr << "tpu_emulator: a collective has waited more than "
                << absl::FormatDuration(options_.report_waits_after)
                << " for its peers:\n"
                << wire::FormatWaitReport(Report(/*history=*/0)) << std::flush;
    }
  }
}

}  // namespace tpu::emulator
