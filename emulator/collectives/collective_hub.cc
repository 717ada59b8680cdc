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
  // Set by NoteSkip for the rest of the launch.
  std::string skip_note;
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
  // Each local participant's combine (they compute the same); null for
  // participants of other workers.
  std::vector<const interpreter::CollectiveCombine*> combines;
  std::vector<bool> arrived;
  int arrived_count = 0;
  // Everyone arrived and the combine runs: nobody withdraws any more.
  bool complete = false;
  // Set once the contributions were combined, or the meeting failed.
  bool done = false;
  absl::Status status;
  std::vector<Literal> outputs;
  // Signalled when done, and to let cancelled waiters leave.
  absl::CondVar changed;
  // A waiter is pinging the missing participants' workers.
  bool checking_peers = false;
  // For a participant of a meeting another worker holds: that worker.
  int coordinator = -1;
  // The last to arrive, and when (on the trace's clock).
  int last_core = -1;
  int64_t last_arrival_micros = 0;
};

// Values one core sent another in one launch, oldest first.
struct CollectiveHub::Mailbox {
  std::deque<Literal> values;
  // Signalled when a value arrives, and to let cancelled receivers leave.
  absl::CondVar changed;
};

// One participant's arrival at a meeting, from this worker or another.
struct CollectiveHub::Arrival {
  std::string key;
  std::string program;
  int64_t launch = 0;
  std::string instruction;
  std::string kind;
  std::string signature;
  std::vector<int> devices;
  int rank = 0;
  int core = 0;
};

Launch::Launch(CollectiveHub* hub, LaunchInfo info, int64_t number,
               bool spans_workers)
    : hub_(hub),
      info_(std::move(info)),
      number_(number),
      spans_workers_(spans_workers),
      key_prefix_(absl::StrCat(
          spans_workers ? std::string("slice") : absl::StrCat(info_.client_id),
          "|", info_.fingerprint, "|", DevicesKey(info_.assignment), "|",
          number, "|")) {}

Launch::~Launch() { hub_->EndLaunch(*this); }

absl::StatusOr<Literal> Launch::Exchange(
    const interpreter::CollectiveRequest& request, Literal contribution,
    const interpreter::CollectiveCombine& combine) {
  return hub_->Exchange(*this, request, std::move(contribution), combine);
}

absl::Status Launch::Send(const interpreter::TransferRequest& request,
                          Literal value) {
  return hub_->Post(*this, request, std::move(value));
}

absl::StatusOr<Literal> Launch::Receive(
    const interpreter::TransferRequest& request) {
  return hub_->Take(*this, request);
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

int CollectiveHub::HostOf(int core) const {
  const int per_host = std::max<int>(1, options_.cores.size());
  return core / per_host;
}

bool CollectiveHub::OnOtherWorker(int core) const {
  return options_.peers != nullptr && HostOf(core) != options_.host_id;
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
  // A launch across workers is numbered without the client id, which
  // differs from worker to worker for the same pod session.
  const bool spans_workers =
      std::any_of(info.assignment.begin(), info.assignment.end(),
                  [this](int device) { return OnOtherWorker(device); });
  // The barrier comes first: a launch it refuses is not numbered, so the
  // cores' next launches of the program still meet. It sees this worker's
  // cores only, so launches across workers skip it.
  if (options_.launch_barrier && info.assignment.size() > 1 && !spans_workers) {
    if (absl::Status s = LaunchBarrier(info); !s.ok()) return s;
  }
  const std::string owner =
      spans_workers ? std::string("slice") : absl::StrCat(info.client_id);
  int64_t number = 0;
  {
    absl::MutexLock lock(&mu_);
    CoreRecord* core = FindCore(info.core);
    const std::string count_key =
        absl::StrCat(owner, "|", info.fingerprint, "|",
                     DevicesKey(info.assignment), "|", info.core);
    number = launch_counts_[count_key]++;
    core->activity = tpu_emulator::CoreWait::RUNNING;
    core->program = info.program;
    core->fingerprint = info.fingerprint;
    core->launch = number;
    core->client_id = info.client_id;
  }
  return std::unique_ptr<Launch>(
      new Launch(this, std::move(info), number, spans_workers));
}

void CollectiveHub::EndLaunch(const Launch& launch) {
  absl::MutexLock lock(&mu_);
  CoreRecord* core = FindCore(launch.info_.core);
  if (core == nullptr) return;
  core->activity = tpu_emulator::CoreWait::IDLE;
  core->meeting.reset();
  core->skip_note.clear();
  // Nothing takes what was sent to this core in this launch any more.
  const std::string prefix = absl::StrCat(launch.key_prefix_, "p2p|");
  const std::string suffix = absl::StrCat(">", launch.info_.core);
  absl::erase_if(mailboxes_, [&](const auto& entry) {
    return absl::StartsWith(entry.first, prefix) &&
           absl::EndsWith(entry.first, suffix);
  });
}

void CollectiveHub::NoteSkip(int core, std::string note) {
  absl::MutexLock lock(&mu_);
  CoreRecord* record = FindCore(core);
  if (record != nullptr) record->skip_note = std::move(note);
}

void CollectiveHub::ForgetClient(uint32_t client_id) {
  absl::MutexLock lock(&mu_);
  const std::string prefix = absl::StrCat(client_id, "|");
  absl::erase_if(launch_counts_, [&](const auto& entry) {
    return absl::StartsWith(entry.first, prefix);
  });
}

void CollectiveHub::WakeWaiters() {
  // Releasing the mutex re-evaluates the launch barrier's conditions; the
  // meetings' waiters wait on their meeting's condition variable.
  absl::MutexLock lock(&mu_);
  for (auto& [key, meeting] : meetings_) meeting->changed.SignalAll();
  for (auto& [key, mailbox] : mailboxes_) mailbox->changed.SignalAll();
}

absl::StatusOr<Literal> CollectiveHub::Exchange(
    Launch& launch, const interpreter::CollectiveRequest& request,
    Literal contribution, const interpreter::CollectiveCombine& combine) {
  const LaunchInfo& info = launch.info_;
  const std::string site =
      absl::StrCat(request.computation, "/", request.instruction);
  const int64_t occurrence = launch.occurrences_[site]++;
  Arrival arrival;
  arrival.key = absl::StrCat(launch.key_prefix_, site, "|", occurrence, "|",
                             DevicesKey(request.devices));
  arrival.program = info.program;
  arrival.launch = launch.number_;
  arrival.instruction = request.instruction;
  arrival.kind = request.kind;
  arrival.signature = request.signature;
  arrival.devices = request.devices;
  arrival.rank = request.rank;
  arrival.core = info.core;
  if (request.devices.empty()) {
    return absl::InternalError(
        absl::StrCat(request.instruction, ": a collective with no group"));
  }
  // The worker of the group's lowest core holds the meeting.
  const int coordinator =
      HostOf(*std::min_element(request.devices.begin(), request.devices.end()));
  if (options_.peers != nullptr && coordinator != options_.host_id) {
    return MeetAtPeer(info, arrival, coordinator, contribution);
  }
  if (options_.peers == nullptr) {
    // A participant nobody can reach would leave this one waiting forever.
    for (int device : request.devices) {
      if (std::find(options_.cores.begin(), options_.cores.end(), device) !=
          options_.cores.end()) {
        continue;
      }
      return absl::FailedPreconditionError(absl::StrCat(
          request.kind, " ", request.instruction, ": its group {",
          DevicesKey(request.devices), "} includes core ", device,
          ", which this worker does not serve, and it knows no other "
          "workers: start every worker of the pod slice with "
          "--pod_addresses=HOST0:PORT0,HOST1:PORT1,... (index = host id)"));
    }
  }
  const std::atomic<bool>* flag = info.cancelled;
  const std::function<bool()> cancelled = [flag] {
    return flag != nullptr && flag->load();
  };
  absl::MutexLock lock(&mu_);
  return Meet(arrival, std::move(contribution), &combine, cancelled,
              FindCore(info.core));
}

absl::StatusOr<Literal> CollectiveHub::ArriveFromPeer(
    const tpu_emulator::Contribution& contribution,
    const std::function<bool()>& cancelled) {
  Arrival arrival;
  arrival.key = contribution.meeting();
  arrival.program = contribution.program();
  arrival.launch = contribution.launch();
  arrival.instruction = contribution.instruction();
  arrival.kind = contribution.kind();
  arrival.signature = contribution.signature();
  arrival.devices.assign(contribution.group().begin(),
                         contribution.group().end());
  arrival.rank = contribution.rank();
  arrival.core = contribution.core();
  if (arrival.devices.empty() || options_.peers == nullptr ||
      HostOf(*std::min_element(arrival.devices.begin(),
                               arrival.devices.end())) != options_.host_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        "host ", options_.host_id, " does not coordinate ", arrival.kind, " ",
        arrival.instruction, " of group {", DevicesKey(arrival.devices),
        "}: start every worker of the slice with the same --pod_hosts, "
        "--pod_addresses and core counts"));
  }
  absl::StatusOr<Literal> value = Literal::FromProto(contribution.value());
  if (!value.ok()) return value.status();
  absl::MutexLock lock(&mu_);
  return Meet(arrival, *std::move(value), /*combine=*/nullptr, cancelled,
              /*core=*/nullptr);
}

absl::StatusOr<Literal> CollectiveHub::Meet(
    const Arrival& arrival, Literal contribution,
    const interpreter::CollectiveCombine* combine,
    const std::function<bool()>& cancelled, CoreRecord* core) {
  std::shared_ptr<Meeting>& slot = meetings_[arrival.key];
  if (slot == nullptr) {
    slot = std::make_shared<Meeting>();
    slot->key = arrival.key;
    slot->program = arrival.program;
    slot->launch = arrival.launch;
    slot->instruction = arrival.instruction;
    slot->kind = arrival.kind;
    slot->signature = arrival.signature;
    slot->devices = arrival.devices;
    slot->contributions.resize(arrival.devices.size());
    slot->combines.assign(arrival.devices.size(), nullptr);
    slot->arrived.assign(arrival.devices.size(), false);
  }
  std::shared_ptr<Meeting> meeting = slot;
  const int n = static_cast<int>(meeting->devices.size());
  const int rank = arrival.rank;
  if (rank < 0 || rank >= n || meeting->arrived[rank]) {
    return absl::InternalError(absl::StrCat(
        "core ", arrival.core, " arrived twice at ", arrival.instruction));
  }
  meeting->contributions[rank] = std::move(contribution);
  meeting->combines[rank] = combine;
  meeting->arrived[rank] = true;
  ++meeting->arrived_count;
  int64_t sequence = -1;
  if (core != nullptr) {
    sequence = RecordArrival(*core, arrival, meeting);
  } else {
    remote_waiters_[arrival.core] = RemoteWaiter{meeting, absl::Now()};
  }

  // The trace: a local waiter's rendezvous wait is one slice, the exchange
  // that follows another (participants from other workers trace there).
  trace::Recorder* const recorder =
      core != nullptr ? options_.recorder : nullptr;
  const int64_t track = trace::CoreTrack(arrival.core);
  const int64_t arrived_micros =
      options_.recorder != nullptr ? options_.recorder->NowMicros() : 0;
  uint64_t wait_slice = 0;
  if (meeting->arrived_count == n) {
    meeting->last_core = arrival.core;
    meeting->last_arrival_micros = arrived_micros;
  } else if (recorder != nullptr && recorder->on()) {
    wait_slice = recorder->Begin(
        track, absl::StrCat(arrival.instruction, " wait"), "collective wait",
        trace::Args()
            .Add("kind", arrival.kind)
            .Add("program", arrival.program)
            .Add("launch", arrival.launch)
            .Add("group", DevicesKey(arrival.devices))
            .members(),
        arrived_micros);
  }

  if (meeting->arrived_count == n) {
    // The last arrival combines, outside the lock: a 64 MiB reduction must
    // not stop other cores from arriving elsewhere. Any local participant's
    // combine will do (the coordinator always has one: the lowest core).
    const interpreter::CollectiveCombine* run = combine;
    for (const auto* c : meeting->combines) {
      if (run == nullptr) run = c;
    }
    meeting->complete = true;
    meetings_.erase(arrival.key);
    absl::StatusOr<std::vector<Literal>> outputs =
        absl::InternalError(absl::StrCat(
            arrival.instruction, ": no participant of this worker to combine"));
    if (run != nullptr) {
      std::vector<Literal> all;
      all.reserve(n);
      for (auto& c : meeting->contributions) all.push_back(std::move(*c));
      mu_.Unlock();
      outputs = (*run)(all);
      mu_.Lock();
    }
    if (outputs.ok() && static_cast<int>(outputs->size()) != n) {
      outputs = absl::InternalError(
          "a collective produced the wrong number of outputs");
    }
    meeting->status = outputs.status();
    if (outputs.ok()) meeting->outputs = *std::move(outputs);
    meeting->done = true;
    meeting->changed.SignalAll();
  } else {
    AwaitMeeting(*meeting, cancelled);
  }

  if (core != nullptr) {
    RecordDeparture(*core, sequence, meeting->done);
  } else {
    remote_waiters_.erase(arrival.core);
  }
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
          track, arrival.instruction, "collective exchange", exchange_start,
          recorder->NowMicros() - exchange_start,
          trace::Args()
              .Add("kind", arrival.kind)
              .Add("signature", arrival.signature)
              .Add("status", meeting->status.ok() ? std::string("OK")
                                                  : meeting->status.ToString())
              .members());
    }
  }
  if (!meeting->done) {
    // Cancelled while waiting: withdraw, so the meeting does not hold data
    // (or a combine) for a participant that is gone.
    meeting->arrived[rank] = false;
    meeting->contributions[rank].reset();
    meeting->combines[rank] = nullptr;
    if (--meeting->arrived_count == 0) {
      auto it = meetings_.find(arrival.key);
      if (it != meetings_.end() && it->second == meeting) meetings_.erase(it);
    }
    return absl::CancelledError(absl::StrCat(
        arrival.kind, " ", arrival.instruction,
        ": the client was closed while this core waited for its peers"));
  }
  if (!meeting->status.ok()) return meeting->status;
  return meeting->outputs[rank];
}

void CollectiveHub::AwaitMeeting(Meeting& meeting,
                                 const std::function<bool()>& cancelled) {
  const bool spans_workers =
      std::any_of(meeting.devices.begin(), meeting.devices.end(),
                  [this](int device) { return OnOtherWorker(device); });
  while (!meeting.done) {
    if (!meeting.complete && cancelled()) return;
    if (!spans_workers) {
      meeting.changed.Wait(&mu_);
      continue;
    }
    // Peers' participants are cancelled by their RPC, which nobody signals:
    // look again a few times a second, and ping missing workers meanwhile.
    if (!meeting.changed.WaitWithTimeout(&mu_, options_.peer_check_period)) {
      continue;
    }
    if (meeting.done || meeting.complete || meeting.checking_peers) continue;
    std::vector<int> hosts;
    for (size_t r = 0; r < meeting.devices.size(); ++r) {
      const int host = HostOf(meeting.devices[r]);
      if (!meeting.arrived[r] && host != options_.host_id &&
          std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
        hosts.push_back(host);
      }
    }
    if (hosts.empty()) continue;
    meeting.checking_peers = true;
    mu_.Unlock();
    absl::Status alive;
    for (int host : hosts) {
      alive = options_.peers->Ping(host);
      if (!alive.ok()) break;
    }
    mu_.Lock();
    meeting.checking_peers = false;
    if (alive.ok() || meeting.done || meeting.complete) continue;
    // Nothing waits forever on a dead worker: the meeting fails for all.
    meeting.status = absl::UnavailableError(absl::StrCat(
        meeting.kind, " ", meeting.instruction, ": ", alive.message()));
    meeting.done = true;
    auto it = meetings_.find(meeting.key);
    if (it != meetings_.end() && it->second.get() == &meeting) {
      meetings_.erase(it);
    }
    meeting.changed.SignalAll();
  }
}

absl::StatusOr<Literal> CollectiveHub::MeetAtPeer(const LaunchInfo& info,
                                                  const Arrival& arrival,
                                                  int coordinator,
                                                  const Literal& contribution) {
  tpu_emulator::Contribution message;
  message.set_meeting(arrival.key);
  message.set_rank(arrival.rank);
  message.set_core(arrival.core);
  message.set_host_id(options_.host_id);
  message.set_program(arrival.program);
  message.set_launch(arrival.launch);
  message.set_instruction(arrival.instruction);
  message.set_kind(arrival.kind);
  message.set_signature(arrival.signature);
  for (int d : arrival.devices) message.add_group(d);
  *message.mutable_value() = contribution.ToProto();

  // What the wait report shows meanwhile: the coordinator knows the rest.
  auto meeting = std::make_shared<Meeting>();
  meeting->program = arrival.program;
  meeting->launch = arrival.launch;
  meeting->instruction = arrival.instruction;
  meeting->kind = arrival.kind;
  meeting->signature = arrival.signature;
  meeting->devices = arrival.devices;
  meeting->coordinator = coordinator;
  CoreRecord* core = nullptr;
  int64_t sequence = -1;
  {
    absl::MutexLock lock(&mu_);
    core = FindCore(info.core);
    sequence = RecordArrival(*core, arrival, meeting);
  }
  absl::StatusOr<Literal> output =
      options_.peers->Contribute(coordinator, message, info.cancelled);
  absl::MutexLock lock(&mu_);
  RecordDeparture(*core, sequence, output.ok());
  if (!output.ok() && info.cancelled != nullptr && info.cancelled->load()) {
    return absl::CancelledError(absl::StrCat(
        arrival.kind, " ", arrival.instruction,
        ": the client was closed while this core waited for its peers"));
  }
  return output;
}

int64_t CollectiveHub::RecordArrival(CoreRecord& core, const Arrival& arrival,
                                     std::shared_ptr<Meeting> meeting) {
  tpu_emulator::CollectiveRecord record;
  record.set_sequence(core.next_sequence++);
  record.set_program(arrival.program);
  record.set_launch(arrival.launch);
  record.set_instruction(arrival.instruction);
  record.set_kind(arrival.kind);
  record.set_signature(arrival.signature);
  for (int d : arrival.devices) record.add_group(d);
  const absl::Time start = absl::Now();
  record.set_start_unix_micros(UnixMicros(start));
  core.history.push_back(std::move(record));
  if (core.history.size() > kHistoryPerCore) core.history.pop_front();
  core.activity = tpu_emulator::CoreWait::WAITING;
  core.meeting = std::move(meeting);
  core.since = start;
  core.logged = false;
  return core.history.back().sequence();
}

void CollectiveHub::RecordDeparture(CoreRecord& core, int64_t sequence,
                                    bool done) {
  // Close the flight-recorder entry (if it is still in the window).
  for (auto it = core.history.rbegin(); it != core.history.rend(); ++it) {
    if (it->sequence() != sequence) continue;
    it->set_done(done);
    it->set_end_unix_micros(UnixMicros(absl::Now()));
    break;
  }
  core.activity = tpu_emulator::CoreWait::RUNNING;
  core.meeting.reset();
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
    const Meeting* meeting = core->meeting.get();
    if (core->activity == tpu_emulator::CoreWait::WAITING &&
        meeting != nullptr) {
      wait->set_since_unix_micros(UnixMicros(core->since));
      DescribeWait(*meeting, wait);
    }
    edges.emplace_back(wait->waiting_for().begin(), wait->waiting_for().end());
  }
  for (const std::vector<int>& cycle : wire::FindCycles(nodes, edges)) {
    auto* out = report.add_cycles();
    for (int c : cycle) out->add_cores(c);
  }
  return report;
}

void CollectiveHub::DescribeWait(const Meeting& meeting,
                                 tpu_emulator::CoreWait* wait) const {
  wait->set_instruction(meeting.instruction);
  wait->set_kind(meeting.kind);
  wait->set_signature(meeting.signature);
  for (int d : meeting.devices) wait->add_group(d);
  if (meeting.coordinator >= 0) {
    // Held by another worker, which knows who is missing.
    wait->add_diagnosis(absl::StrCat(
        "the meeting is held by host ", meeting.coordinator, " (",
        options_.peers->Address(meeting.coordinator),
        "), which knows who is missing: ask it, or any worker of the slice"));
    return;
  }
  for (size_t r = 0; r < meeting.devices.size(); ++r) {
    if (meeting.arrived[r]) continue;
    const int missing = meeting.devices[r];
    wait->add_waiting_for(missing);
    wait->add_diagnosis(Diagnose(meeting, missing));
  }
}

tpu_emulator::PeerWaitReport CollectiveHub::LocalReport(int history) const {
  tpu_emulator::PeerWaitReport report;
  *report.mutable_local() = Report(history);
  absl::MutexLock lock(&mu_);
  for (const auto& [core, waiter] : remote_waiters_) {
    tpu_emulator::CoreWait* wait = report.add_remote_waiters();
    wait->set_core(core);
    wait->set_host_id(HostOf(core));
    wait->set_activity(tpu_emulator::CoreWait::WAITING);
    wait->set_program(waiter.meeting->program);
    wait->set_launch(waiter.meeting->launch);
    wait->set_since_unix_micros(UnixMicros(waiter.since));
    DescribeWait(*waiter.meeting, wait);
  }
  return report;
}

tpu_emulator::WaitReport CollectiveHub::SliceReport(int history) const {
  if (options_.peers == nullptr) return Report(history);
  const int per_host = std::max<int>(1, options_.cores.size());
  tpu_emulator::WaitReport merged;
  std::vector<tpu_emulator::CoreWait> remote_waiters;
  for (int host = 0; host < options_.peers->host_count(); ++host) {
    absl::StatusOr<tpu_emulator::PeerWaitReport> part =
        host == options_.host_id
            ? LocalReport(history)
            : options_.peers->LocalWaitReport(host, history);
    if (!part.ok()) {
      // Its cores are shown, with why nothing is known about them.
      for (int i = 0; i < per_host; ++i) {
        tpu_emulator::CoreWait* wait = merged.add_cores();
        wait->set_core(host * per_host + i);
        wait->set_host_id(host);
        wait->add_diagnosis(std::string(part.status().message()));
      }
      continue;
    }
    if (host == options_.host_id) {
      merged.set_taken_unix_micros(part->local().taken_unix_micros());
    }
    for (const auto& wait : part->local().cores()) *merged.add_cores() = wait;
    for (const auto& wait : part->remote_waiters()) {
      remote_waiters.push_back(wait);
    }
  }
  // A core waiting in a meeting another worker holds: that worker says
  // whom it waits for.
  for (tpu_emulator::CoreWait& wait : *merged.mutable_cores()) {
    for (const tpu_emulator::CoreWait& held : remote_waiters) {
      if (held.core() != wait.core() ||
          wait.activity() != tpu_emulator::CoreWait::WAITING ||
          held.instruction() != wait.instruction() ||
          held.launch() != wait.launch()) {
        continue;
      }
      wait.mutable_waiting_for()->CopyFrom(held.waiting_for());
      wait.mutable_diagnosis()->CopyFrom(held.diagnosis());
    }
  }
  std::sort(
      merged.mutable_cores()->begin(), merged.mutable_cores()->end(),
      [](const tpu_emulator::CoreWait& a, const tpu_emulator::CoreWait& b) {
        return a.core() < b.core();
      });
  std::vector<int> nodes;
  std::vector<std::vector<int>> edges;
  for (const auto& wait : merged.cores()) {
    nodes.push_back(wait.core());
    edges.emplace_back(wait.waiting_for().begin(), wait.waiting_for().end());
  }
  for (const std::vector<int>& cycle : wire::FindCycles(nodes, edges)) {
    auto* out = merged.add_cycles();
    for (int c : cycle) out->add_cores(c);
  }
  return merged;
}

std::string CollectiveHub::Diagnose(const Meeting& meeting, int missing) const {
  const std::string who = absl::StrCat("core ", missing, " ");
  CoreRecord* other = nullptr;
  for (const auto& core : cores_) {
    if (core->core == missing) other = core.get();
  }
  if (other == nullptr) {
    if (options_.peers != nullptr) {
      const int host = HostOf(missing);
      return absl::StrCat(who, "(host ", host, ", ",
                          options_.peers->Address(host),
                          ") has not arrived at this collective yet");
    }
    return who + "is not a core of this worker (another host of the slice)";
  }
  if (!other->skip_note.empty()) return other->skip_note;
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

// Point-to-point transfers. A send posts into the mailbox of its launch and
// (source, target) and never waits; the receiver waits for the oldest value.
// Both appear in the flight recorder, and a waiting receiver in the wait
// report as a meeting of two whose source has not arrived.

absl::Status CollectiveHub::CheckTransferPeers(
    const interpreter::TransferRequest& request) const {
  for (int device : {request.source, request.target}) {
    if (std::find(options_.cores.begin(), options_.cores.end(), device) !=
        options_.cores.end()) {
      continue;
    }
    if (options_.peers != nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          request.kind, " ", request.instruction, " between core ",
          request.source, " and core ", request.target,
          ": send/recv between workers of a pod slice is not supported; run "
          "the devices that exchange data on one worker"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        request.kind, " ", request.instruction, " between core ",
        request.source, " and core ", request.target, " names core ", device,
        ", which this worker does not serve"));
  }
  return absl::OkStatus();
}

namespace {

std::string MailboxKey(const std::string& launch_prefix, int source,
                       int target) {
  return absl::StrCat(launch_prefix, "p2p|", source, ">", target);
}

}  // namespace

absl::Status CollectiveHub::Post(Launch& launch,
                                 const interpreter::TransferRequest& request,
                                 Literal value) {
  if (absl::Status s = CheckTransferPeers(request); !s.ok()) return s;
  const std::string key =
      MailboxKey(launch.key_prefix_, request.source, request.target);
  Arrival arrival;
  arrival.key = key;
  arrival.program = launch.info_.program;
  arrival.launch = launch.number_;
  arrival.instruction = request.instruction;
  arrival.kind = request.kind;
  arrival.signature = request.signature;
  arrival.devices = {request.source, request.target};
  arrival.rank = 0;
  arrival.core = launch.info_.core;
  absl::MutexLock lock(&mu_);
  if (CoreRecord* core = FindCore(launch.info_.core); core != nullptr) {
    RecordDeparture(*core, RecordArrival(*core, arrival, nullptr),
                    /*done=*/true);
  }
  std::shared_ptr<Mailbox>& box = mailboxes_[key];
  if (box == nullptr) box = std::make_shared<Mailbox>();
  box->values.push_back(std::move(value));
  box->changed.SignalAll();
  return absl::OkStatus();
}

absl::StatusOr<Literal> CollectiveHub::Take(
    Launch& launch, const interpreter::TransferRequest& request) {
  if (absl::Status s = CheckTransferPeers(request); !s.ok()) return s;
  const std::string key =
      MailboxKey(launch.key_prefix_, request.source, request.target);
  Arrival arrival;
  arrival.key = key;
  arrival.program = launch.info_.program;
  arrival.launch = launch.number_;
  arrival.instruction = request.instruction;
  arrival.kind = request.kind;
  arrival.signature = request.signature;
  arrival.devices = {request.source, request.target};
  arrival.rank = 1;
  arrival.core = launch.info_.core;
  // What the wait report shows while the value has not come: the source
  // has not arrived.
  auto meeting = std::make_shared<Meeting>();
  meeting->key = key;
  meeting->program = arrival.program;
  meeting->launch = arrival.launch;
  meeting->instruction = arrival.instruction;
  meeting->kind = arrival.kind;
  meeting->signature = arrival.signature;
  meeting->devices = arrival.devices;
  meeting->arrived = {false, true};
  meeting->arrived_count = 1;
  const std::atomic<bool>* cancelled = launch.info_.cancelled;

  absl::MutexLock lock(&mu_);
  std::shared_ptr<Mailbox>& slot = mailboxes_[key];
  if (slot == nullptr) slot = std::make_shared<Mailbox>();
  std::shared_ptr<Mailbox> box = slot;
  CoreRecord* core = FindCore(launch.info_.core);
  const int64_t sequence =
      core != nullptr ? RecordArrival(*core, arrival, meeting) : -1;
  while (box->values.empty() && !(cancelled != nullptr && cancelled->load())) {
    box->changed.Wait(&mu_);
  }
  const bool received = !box->values.empty();
  if (core != nullptr) RecordDeparture(*core, sequence, received);
  if (!received) {
    return absl::CancelledError(
        absl::StrCat(request.kind, " ", request.instruction,
                     ": the client was closed while this core waited for core ",
                     request.source, " to send"));
  }
  Literal value = std::move(box->values.front());
  box->values.pop_front();
  auto it = mailboxes_.find(key);
  if (box->values.empty() && it != mailboxes_.end() && it->second == box) {
    mailboxes_.erase(it);
  }
  return value;
}

}  // namespace tpu::emulator
