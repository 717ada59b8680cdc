#include "emulator/collectives/collective_hub.h"

#include <algorithm>
#include <atomic>
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

// What every arrival at the coordinator says about itself: the meeting and
// the collective this worker's cores are at, for its checks and reports.
tpu_emulator::Contribution ContributionHeader(absl::string_view key,
                                              int host_id,
                                              const CollectiveSite& site) {
  tpu_emulator::Contribution message;
  message.set_meeting(std::string(key));
  message.set_host_id(host_id);
  message.set_program(site.program);
  message.set_launch(site.launch);
  message.set_instruction(site.instruction);
  message.set_kind(site.kind);
  message.set_signature(site.signature);
  for (int d : site.devices) message.add_group(d);
  return message;
}

constexpr int64_t kHistoryPerCore = 1000;
// How often a waiter sleeping without mu_ looks at its client's cancellation
// flag on its own (WakeWaiters wakes it at once in the worker).
constexpr absl::Duration kCancelCheckPeriod = absl::Milliseconds(100);

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
  // The flight recorder: a ring of the last kHistoryPerCore entries, entry
  // for sequence s at s % kHistoryPerCore. Recording stores ids and times
  // only; Report formats.
  struct Entry {
    int64_t sequence = 0;
    std::shared_ptr<const CollectiveSite> site;
    bool done = false;
    int64_t start_micros = 0;
    int64_t end_micros = 0;
  };
  std::vector<Entry> history;
};

// One meeting point: a collective instruction's execution in one launch of
// one group.
struct CollectiveHub::Meeting
    : public std::enable_shared_from_this<CollectiveHub::Meeting> {
  std::string key;
  // The first arrival's view of the collective (all agree, or the meeting
  // is a mismatch the wait report shows).
  std::shared_ptr<const CollectiveSite> site;
  const std::string& program() const { return site->program; }
  int64_t launch() const { return site->launch; }
  const std::string& instruction() const { return site->instruction; }
  const std::string& kind() const { return site->kind; }
  const std::string& signature() const { return site->signature; }
  const std::vector<int>& devices() const { return site->devices; }
  // Some participant is on another worker.
  bool spans_workers = false;
  std::vector<std::optional<Literal>> contributions;
  // Each local participant's combine (they compute the same); null for
  // participants of other workers.
  std::vector<const interpreter::CollectiveCombine*> combines;
  std::vector<bool> arrived;
  int arrived_count = 0;
  // Each local participant's core and flight-recorder entry, so that whoever
  // completes the meeting closes them all and the waiters need no lock.
  std::vector<CoreRecord*> cores;
  std::vector<int64_t> sequences;
  // Everyone arrived and the combine runs: nobody withdraws any more.
  bool complete = false;
  // Set once the contributions were combined, or the meeting failed.
  bool done = false;
  absl::Status status;
  std::vector<Literal> outputs;
  // Signalled when done, and to let cancelled waiters leave.
  fiber::CondVar changed;
  // `done` for the waiters that sleep without mu_ (AwaitPublished): set
  // after status and outputs, which are immutable from then on.
  std::atomic<bool> published{false};
  fiber::WakeWord wake;
  // A waiter is pinging the missing participants' workers.
  bool checking_peers = false;
  // For a participant of a meeting another worker holds: that worker.
  int coordinator = -1;
  // Suffix folds (proto/peer.proto). Each local participant's fold (they
  // compute the same) and the group's ranks in fold order.
  std::vector<const interpreter::CollectiveFold*> folds;
  std::vector<int> fold_order;
  // Coordinator: the worker that folds the rest, its ranks, the partial it
  // continues from once everyone arrived, and whether the result is still
  // to come back from it.
  int suffix_host = -1;
  std::vector<int> suffix_ranks;
  std::optional<Literal> partial;
  bool awaiting_delivery = false;
  // The last to arrive, and when (on the trace's clock).
  int last_core = -1;
  int64_t last_arrival_micros = 0;
};

// Values one core sent another in one launch, oldest first.
struct CollectiveHub::Mailbox {
  std::deque<Literal> values;
  // Signalled when a value arrives, and to let cancelled receivers leave.
  fiber::CondVar changed;
};

// Cores meet per assignment (as a device set) and per launch on that set:
// the k-th multi-core launch of each core must be the same program.
struct CollectiveHub::Barrier {
  std::vector<std::string> programs;
  int arrived = 0;
  int left = 0;
  // Signalled at each arrival, and to let cancelled waiters leave.
  fiber::CondVar changed;
};

// One participant's arrival at a meeting, from this worker or another.
struct CollectiveHub::Arrival {
  absl::string_view key;
  std::shared_ptr<const CollectiveSite> site;
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

Launch::SiteState& Launch::Site(const interpreter::CollectiveRequest& request) {
  SiteState& state = sites_[request.computation][request.instruction];
  const CollectiveSite* site = state.site.get();
  if (site != nullptr && site->devices == request.devices &&
      site->kind == request.kind && site->signature == request.signature) {
    return state;
  }
  auto fresh = std::make_shared<CollectiveSite>();
  fresh->program = info_.program;
  fresh->launch = number_;
  fresh->instruction = request.instruction;
  fresh->kind = request.kind;
  fresh->signature = request.signature;
  fresh->devices = request.devices;
  state.site = std::move(fresh);
  state.key =
      absl::StrCat(key_prefix_, request.computation, "/", request.instruction,
                   "|", DevicesKey(request.devices), "|");
  state.key_base = state.key.size();
  state.key.reserve(state.key_base + 24);
  return state;
}

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
  // The meetings' waiters wait on their meeting's condition variable or
  // (local meetings) its wake word.
  absl::MutexLock lock(&mu_);
  for (auto& [key, meeting] : meetings_) {
    meeting->changed.SignalAll();
    meeting->wake.WakeAll();
  }
  for (auto& [key, mailbox] : mailboxes_) mailbox->changed.SignalAll();
  for (auto& [key, barrier] : barriers_) barrier->changed.SignalAll();
}

absl::StatusOr<Literal> CollectiveHub::Exchange(
    Launch& launch, const interpreter::CollectiveRequest& request,
    Literal contribution, const interpreter::CollectiveCombine& combine) {
  const LaunchInfo& info = launch.info_;
  if (request.devices.empty()) {
    return absl::InternalError(
        absl::StrCat(request.instruction, ": a collective with no group"));
  }
  Launch::SiteState& state = launch.Site(request);
  state.key.resize(state.key_base);
  absl::StrAppend(&state.key, state.occurrences++);
  Arrival arrival;
  arrival.key = state.key;
  arrival.site = state.site;
  arrival.rank = request.rank;
  arrival.core = info.core;
  // The worker of the group's lowest core holds the meeting.
  const int coordinator =
      HostOf(*std::min_element(request.devices.begin(), request.devices.end()));
  const std::atomic<bool>* flag = info.cancelled;
  const std::function<bool()> cancelled = [flag] {
    return flag != nullptr && flag->load(std::memory_order_relaxed);
  };
  if (options_.peers != nullptr && coordinator != options_.host_id) {
    if (SuffixFoldHost(request, coordinator) == options_.host_id) {
      return GatherSuffix(info, arrival, request, coordinator,
                          std::move(contribution), cancelled);
    }
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
  return Meet(arrival, std::move(contribution), &combine, cancelled, info.core,
              &request);
}

int CollectiveHub::SuffixFoldHost(const interpreter::CollectiveRequest& request,
                                  int coordinator) const {
  const size_t n = request.devices.size();
  if (options_.peers == nullptr || request.fold == nullptr || n < 2 ||
      request.fold_order.size() != n) {
    return -1;
  }
  int suffix = -1;
  for (size_t i = 0; i < n; ++i) {
    const int rank = request.fold_order[i];
    if (rank < 0 || rank >= static_cast<int>(n)) return -1;
    const int host = HostOf(request.devices[rank]);
    if (i == 0 && host != coordinator) return -1;
    if (host == coordinator) {
      if (suffix >= 0) return -1;  // the coordinator's run resumes
      continue;
    }
    if (suffix >= 0 && host != suffix) return -1;  // a third worker
    suffix = host;
  }
  return suffix;
}

absl::StatusOr<Literal> CollectiveHub::ArriveFromPeer(
    const tpu_emulator::Contribution& contribution,
    const std::function<bool()>& cancelled) {
  auto site = std::make_shared<CollectiveSite>();
  site->program = contribution.program();
  site->launch = contribution.launch();
  site->instruction = contribution.instruction();
  site->kind = contribution.kind();
  site->signature = contribution.signature();
  site->devices.assign(contribution.group().begin(),
                       contribution.group().end());
  Arrival arrival;
  arrival.key = contribution.meeting();
  arrival.rank = contribution.rank();
  arrival.core = contribution.core();
  const std::vector<int>& devices = site->devices;
  if (devices.empty() || options_.peers == nullptr ||
      HostOf(*std::min_element(devices.begin(), devices.end())) !=
          options_.host_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        "host ", options_.host_id, " does not coordinate ", site->kind, " ",
        site->instruction, " of group {", DevicesKey(devices),
        "}: start every worker of the slice with the same --pod_hosts, "
        "--pod_addresses and core counts"));
  }
  if (contribution.suffix_fold()) {
    return ArriveSuffix(contribution, std::move(site), cancelled);
  }
  arrival.site = std::move(site);
  absl::StatusOr<Literal> value = Literal::FromProto(contribution.value());
  if (!value.ok()) return value.status();
  return Meet(arrival, *std::move(value), /*combine=*/nullptr, cancelled,
              /*core=*/-1, /*request=*/nullptr);
}

std::shared_ptr<CollectiveHub::Meeting> CollectiveHub::OpenMeeting(
    absl::string_view key, std::shared_ptr<const CollectiveSite> site) {
  auto [it, opened] = meetings_.try_emplace(key);
  if (opened) {
    auto fresh = std::make_shared<Meeting>();
    fresh->key = it->first;
    const size_t n = site->devices.size();
    fresh->spans_workers =
        std::any_of(site->devices.begin(), site->devices.end(),
                    [this](int device) { return OnOtherWorker(device); });
    fresh->site = std::move(site);
    fresh->contributions.resize(n);
    fresh->combines.assign(n, nullptr);
    fresh->folds.assign(n, nullptr);
    fresh->arrived.assign(n, false);
    fresh->cores.assign(n, nullptr);
    fresh->sequences.assign(n, -1);
    it->second = std::move(fresh);
  }
  return it->second;
}

absl::StatusOr<Literal> CollectiveHub::Meet(
    const Arrival& arrival, Literal contribution,
    const interpreter::CollectiveCombine* combine,
    const std::function<bool()>& cancelled, int core_id,
    const interpreter::CollectiveRequest* request) {
  const CollectiveSite& site = *arrival.site;
  mu_.Lock();
  CoreRecord* const core = core_id >= 0 ? FindCore(core_id) : nullptr;
  std::shared_ptr<Meeting> meeting = OpenMeeting(arrival.key, arrival.site);
  if (request != nullptr && meeting->fold_order.empty()) {
    meeting->fold_order = request->fold_order;
    if (meeting->spans_workers) {
      meeting->suffix_host = SuffixFoldHost(*request, options_.host_id);
    }
  }
  const int n = static_cast<int>(meeting->devices().size());
  const int rank = arrival.rank;
  if (rank < 0 || rank >= n || meeting->arrived[rank]) {
    mu_.Unlock();
    return absl::InternalError(absl::StrCat(
        "core ", arrival.core, " arrived twice at ", site.instruction));
  }
  meeting->contributions[rank] = std::move(contribution);
  meeting->combines[rank] = combine;
  meeting->folds[rank] = request != nullptr ? request->fold : nullptr;
  meeting->arrived[rank] = true;
  ++meeting->arrived_count;
  if (core != nullptr) {
    meeting->cores[rank] = core;
    meeting->sequences[rank] = RecordArrival(*core, arrival, meeting);
  } else {
    remote_waiters_[arrival.core] = RemoteWaiter{meeting, absl::Now()};
  }

  // The trace: a local waiter's rendezvous wait is one slice, the exchange
  // that follows another (participants from other workers trace there).
  trace::Recorder* const recorder =
      core != nullptr ? options_.recorder : nullptr;
  const int64_t arrived_micros =
      options_.recorder != nullptr ? options_.recorder->NowMicros() : 0;
  uint64_t wait_slice = 0;
  if (meeting->arrived_count == n) {
    meeting->last_core = arrival.core;
    meeting->last_arrival_micros = arrived_micros;
  } else if (recorder != nullptr && recorder->on()) {
    wait_slice = recorder->Begin(trace::CoreTrack(arrival.core),
                                 absl::StrCat(site.instruction, " wait"),
                                 "collective wait",
                                 trace::Args()
                                     .Add("kind", site.kind)
                                     .Add("program", site.program)
                                     .Add("launch", site.launch)
                                     .Add("group", DevicesKey(site.devices))
                                     .members(),
                                 arrived_micros);
  }

  if (meeting->arrived_count == n && meeting->suffix_host >= 0) {
    StartSuffixFold(*meeting);
    AwaitMeeting(*meeting, cancelled);
  } else if (meeting->arrived_count == n) {
    // The last arrival combines, outside the lock: a 64 MiB reduction must
    // not stop other cores from arriving elsewhere. Any local participant's
    // combine will do (the coordinator always has one: the lowest core).
    const interpreter::CollectiveCombine* run = combine;
    for (const auto* c : meeting->combines) {
      if (run == nullptr) run = c;
    }
    meeting->complete = true;
    meetings_.erase(meeting->key);
    absl::StatusOr<std::vector<Literal>> outputs =
        absl::InternalError(absl::StrCat(
            site.instruction, ": no participant of this worker to combine"));
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
    Publish(*meeting);
  } else if (meeting->spans_workers || core == nullptr) {
    AwaitMeeting(*meeting, cancelled);
  } else {
    // Every waiter sleeps on the meeting's word and wakes once, when the
    // last arrival published; only a cancelled one takes mu_ again.
    mu_.Unlock();
    const bool published = AwaitPublished(*meeting, cancelled);
    if (published) {
      if (recorder != nullptr && recorder->on()) {
        TraceMeeting(*meeting, arrival, arrived_micros, wait_slice);
      }
      if (!meeting->status.ok()) return meeting->status;
      return meeting->outputs[rank];
    }
    mu_.Lock();
    // Cancelled: leave now unless everyone arrived and the combine runs,
    // which nobody withdraws from.
    AwaitMeeting(*meeting, cancelled);
  }

  if (core == nullptr) remote_waiters_.erase(arrival.core);
  if (!meeting->done) {
    // Cancelled while waiting: withdraw, so the meeting does not hold data
    // (or a combine) for a participant that is gone.
    if (core != nullptr) {
      RecordDeparture(*core, meeting->sequences[rank], false, absl::Now());
    }
    meeting->arrived[rank] = false;
    meeting->contributions[rank].reset();
    meeting->combines[rank] = nullptr;
    meeting->folds[rank] = nullptr;
    meeting->cores[rank] = nullptr;
    if (--meeting->arrived_count == 0) {
      auto open = meetings_.find(meeting->key);
      if (open != meetings_.end() && open->second == meeting) {
        meetings_.erase(open);
      }
    }
    mu_.Unlock();
    if (recorder != nullptr && recorder->on()) {
      recorder->End(wait_slice, "\"cancelled\": true");
    }
    return absl::CancelledError(absl::StrCat(
        site.kind, " ", site.instruction,
        ": the client was closed while this core waited for its peers"));
  }
  mu_.Unlock();
  // The waiters wake once mu_ is free: one that runs at once must not find
  // the hub locked by the thread that woke it.
  meeting->wake.WakeAll();
  if (recorder != nullptr && recorder->on()) {
    TraceMeeting(*meeting, arrival, arrived_micros, wait_slice);
  }
  if (!meeting->status.ok()) return meeting->status;
  return meeting->outputs[rank];
}

void CollectiveHub::Publish(Meeting& meeting) {
  const absl::Time now = absl::Now();
  for (size_t r = 0; r < meeting.cores.size(); ++r) {
    if (meeting.cores[r] == nullptr) continue;
    // Done as the meeting is (a failed one too), as each waiter recorded it
    // before the publisher did it for all.
    RecordDeparture(*meeting.cores[r], meeting.sequences[r], /*done=*/true,
                    now);
  }
  meeting.done = true;
  meeting.published.store(true, std::memory_order_release);
  meeting.changed.SignalAll();
}

bool CollectiveHub::AwaitPublished(Meeting& meeting,
                                   const std::function<bool()>& cancelled) {
  // No spinning first: with fewer CPUs than cores (8 cores on 2 CPUs) a
  // spinning waiter only delays the participants still to arrive; spinning
  // 64 or 256 pauses measured no faster and up to 40% slower.
  while (true) {
    const uint32_t seen = meeting.wake.Load();
    if (meeting.published.load(std::memory_order_acquire)) return true;
    // WakeWaiters wakes the word after a client is cancelled.
    if (cancelled()) return false;
    meeting.wake.Wait(seen, kCancelCheckPeriod);
  }
}

void CollectiveHub::TraceMeeting(const Meeting& meeting, const Arrival& arrival,
                                 int64_t arrived_micros, uint64_t wait_slice) {
  trace::Recorder* const recorder = options_.recorder;
  const CollectiveSite& site = *arrival.site;
  const int64_t track = trace::CoreTrack(arrival.core);
  const int64_t exchange_start =
      std::max(arrived_micros, meeting.last_arrival_micros);
  recorder->End(wait_slice, "", exchange_start);
  if (wait_slice != 0) {
    recorder->Flow(absl::StrCat("waited for core ", meeting.last_core), track,
                   arrived_micros, trace::CoreTrack(meeting.last_core),
                   exchange_start);
  }
  recorder->Complete(
      track, site.instruction, "collective exchange", exchange_start,
      recorder->NowMicros() - exchange_start,
      trace::Args()
          .Add("kind", site.kind)
          .Add("signature", site.signature)
          .Add("status", meeting.status.ok() ? std::string("OK")
                                             : meeting.status.ToString())
          .members());
}

void CollectiveHub::AwaitMeeting(Meeting& meeting,
                                 const std::function<bool()>& cancelled) {
  while (!meeting.done) {
    if (!meeting.complete && cancelled()) return;
    if (!meeting.spans_workers) {
      meeting.changed.Wait(&mu_);
      continue;
    }
    // Peers' participants are cancelled by their RPC, which nobody signals:
    // look again a few times a second, and ping missing workers meanwhile.
    if (!meeting.changed.WaitWithTimeout(&mu_, options_.peer_check_period)) {
      continue;
    }
    // After everyone arrived only a suffix fold still depends on a peer.
    if (meeting.done || meeting.checking_peers ||
        (meeting.complete && !meeting.awaiting_delivery)) {
      continue;
    }
    std::vector<int> hosts;
    if (meeting.awaiting_delivery) hosts.push_back(meeting.suffix_host);
    for (size_t r = 0; r < meeting.devices().size() && !meeting.complete; ++r) {
      const int host = HostOf(meeting.devices()[r]);
      if (!meeting.arrived[r] && host != options_.host_id &&
          std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
        hosts.push_back(host);
      }
    }
    if (hosts.empty()) continue;
    meeting.checking_peers = true;
    mu_.Unlock();
    absl::Status alive;
    // A remote call: a waiting fiber must not hold its OS thread meanwhile.
    fiber::RunBlocking([&] {
      for (int host : hosts) {
        alive = options_.peers->Ping(host);
        if (!alive.ok()) break;
      }
    });
    mu_.Lock();
    meeting.checking_peers = false;
    if (alive.ok() || meeting.done ||
        (meeting.complete && !meeting.awaiting_delivery)) {
      continue;
    }
    meeting.awaiting_delivery = false;
    delivering_.erase(meeting.key);
    // Nothing waits forever on a dead worker: the meeting fails for all.
    meeting.status = absl::UnavailableError(absl::StrCat(
        meeting.kind(), " ", meeting.instruction(), ": ", alive.message()));
    auto it = meetings_.find(meeting.key);
    if (it != meetings_.end() && it->second.get() == &meeting) {
      meetings_.erase(it);
    }
    Publish(meeting);
    meeting.wake.WakeAll();
  }
}

absl::StatusOr<Literal> CollectiveHub::MeetAtPeer(const LaunchInfo& info,
                                                  const Arrival& arrival,
                                                  int coordinator,
                                                  const Literal& contribution) {
  const CollectiveSite& site = *arrival.site;
  tpu_emulator::Contribution message =
      ContributionHeader(arrival.key, options_.host_id, site);
  message.set_rank(arrival.rank);
  message.set_core(arrival.core);
  *message.mutable_value() = contribution.ToProto();

  // What the wait report shows meanwhile: the coordinator knows the rest.
  auto meeting = std::make_shared<Meeting>();
  meeting->site = arrival.site;
  meeting->spans_workers = true;
  meeting->coordinator = coordinator;
  CoreRecord* core = nullptr;
  int64_t sequence = -1;
  {
    absl::MutexLock lock(&mu_);
    core = FindCore(info.core);
    sequence = RecordArrival(*core, arrival, meeting);
  }
  // Blocks until the coordinator's meeting completes: off the core's OS
  // thread when it runs on a fiber, which the other cores may need.
  absl::StatusOr<Literal> output = absl::UnknownError("not contributed");
  fiber::RunBlocking([&] {
    output = options_.peers->Contribute(coordinator, message, info.cancelled);
  });
  absl::MutexLock lock(&mu_);
  RecordDeparture(*core, sequence, output.ok(), absl::Now());
  if (!output.ok() && info.cancelled != nullptr && info.cancelled->load()) {
    return absl::CancelledError(absl::StrCat(
        site.kind, " ", site.instruction,
        ": the client was closed while this core waited for its peers"));
  }
  return output;
}

// Suffix folds (proto/peer.proto). The coordinator holds the first run of
// the fold order and the suffix worker the rest: the coordinator folds its
// run into a partial, the suffix worker continues the fold from it over its
// own contributions (a left fold started from a prefix's fold is the whole
// fold, bit for bit) and sends the result back. Two payloads cross the link
// instead of one per remote core each way.

void CollectiveHub::StartSuffixFold(Meeting& meeting) {
  meeting.complete = true;
  meetings_.erase(meeting.key);
  const interpreter::CollectiveFold* fold = nullptr;
  for (const auto* f : meeting.folds) {
    if (fold == nullptr) fold = f;
  }
  std::vector<const Literal*> values;
  for (int rank : meeting.fold_order) {
    if (HostOf(meeting.devices()[rank]) != options_.host_id) break;
    values.push_back(&*meeting.contributions[rank]);
  }
  absl::StatusOr<Literal> partial = absl::InternalError(absl::StrCat(
      meeting.instruction(), ": no participant of this worker to fold"));
  if (fold != nullptr && !values.empty()) {
    mu_.Unlock();
    partial = (*fold)(values);
    mu_.Lock();
  }
  if (!partial.ok()) {
    meeting.status = partial.status();
    Publish(meeting);
    meeting.wake.WakeAll();
    return;
  }
  meeting.partial = *std::move(partial);
  for (auto& contribution : meeting.contributions) contribution.reset();
  meeting.awaiting_delivery = true;
  delivering_[meeting.key] = meeting.shared_from_this();
  meeting.changed.SignalAll();
}

absl::StatusOr<Literal> CollectiveHub::ArriveSuffix(
    const tpu_emulator::Contribution& arrival,
    std::shared_ptr<const CollectiveSite> site,
    const std::function<bool()>& cancelled) {
  const int n = static_cast<int>(site->devices.size());
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Meeting> meeting = OpenMeeting(arrival.meeting(), site);
  if (arrival.ranks_size() == 0 ||
      arrival.ranks_size() != arrival.cores_size()) {
    return absl::InvalidArgumentError("a suffix fold names no ranks");
  }
  for (int rank : arrival.ranks()) {
    if (rank < 0 || rank >= n || meeting->arrived[rank]) {
      return absl::InternalError(
          absl::StrCat("rank ", rank, " arrived twice at ", site->instruction));
    }
  }
  const absl::Time now = absl::Now();
  for (int i = 0; i < arrival.ranks_size(); ++i) {
    meeting->arrived[arrival.ranks(i)] = true;
    remote_waiters_[arrival.cores(i)] = RemoteWaiter{meeting, now};
  }
  meeting->arrived_count += arrival.ranks_size();
  meeting->suffix_host = arrival.host_id();
  meeting->suffix_ranks.assign(arrival.ranks().begin(), arrival.ranks().end());
  if (meeting->arrived_count == n) {
    // The trace's arrow from each waiter points at the last to arrive.
    meeting->last_core = arrival.cores(arrival.cores_size() - 1);
    meeting->last_arrival_micros =
        options_.recorder != nullptr ? options_.recorder->NowMicros() : 0;
    StartSuffixFold(*meeting);
  }
  while (!meeting->done && !meeting->partial.has_value()) {
    if (!meeting->complete && cancelled()) break;
    meeting->changed.WaitWithTimeout(&mu_, options_.peer_check_period);
  }
  for (int core : arrival.cores()) remote_waiters_.erase(core);
  if (meeting->partial.has_value()) return *meeting->partial;
  if (meeting->done) return meeting->status;
  // Cancelled before everyone arrived: withdraw every rank it brought.
  for (int rank : arrival.ranks()) meeting->arrived[rank] = false;
  meeting->arrived_count -= arrival.ranks_size();
  if (meeting->arrived_count == 0) {
    auto open = meetings_.find(meeting->key);
    if (open != meetings_.end() && open->second == meeting) {
      meetings_.erase(open);
    }
  }
  return absl::CancelledError(absl::StrCat(site->kind, " ", site->instruction,
                                           ": the participants on host ",
                                           arrival.host_id(), " left"));
}

absl::Status CollectiveHub::DeliverFromPeer(const std::string& key,
                                            absl::StatusOr<Literal> value) {
  std::shared_ptr<Meeting> meeting;
  {
    absl::MutexLock lock(&mu_);
    auto it = delivering_.find(key);
    if (it == delivering_.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("host ", options_.host_id,
                       " waits for no suffix fold of meeting ", key));
    }
    meeting = std::move(it->second);
    delivering_.erase(it);
    meeting->awaiting_delivery = false;
    meeting->partial.reset();
    meeting->status = value.status();
    if (value.ok()) {
      meeting->outputs.assign(meeting->devices().size(), *std::move(value));
    }
    Publish(*meeting);
  }
  meeting->wake.WakeAll();
  return absl::OkStatus();
}

absl::StatusOr<Literal> CollectiveHub::GatherSuffix(
    const LaunchInfo& info, const Arrival& arrival,
    const interpreter::CollectiveRequest& request, int coordinator,
    Literal contribution, const std::function<bool()>& cancelled) {
  const CollectiveSite& site = *arrival.site;
  const int n = static_cast<int>(site.devices.size());
  const int rank = arrival.rank;
  // Its own key: this worker's cores gather here, apart from any meeting
  // of the same collective this worker might coordinate.
  const std::string key = absl::StrCat(arrival.key, "|suffix");
  mu_.Lock();
  CoreRecord* const core = FindCore(info.core);
  std::shared_ptr<Meeting> meeting = OpenMeeting(key, arrival.site);
  if (meeting->coordinator < 0) {
    meeting->coordinator = coordinator;
    meeting->fold_order = request.fold_order;
    // Only this worker's cores are waited for here.
    for (int r = 0; r < n; ++r) {
      if (HostOf(site.devices[r]) != options_.host_id) {
        meeting->arrived[r] = true;
        ++meeting->arrived_count;
      }
    }
  }
  if (rank < 0 || rank >= n || meeting->arrived[rank] || core == nullptr) {
    mu_.Unlock();
    return absl::InternalError(absl::StrCat(
        "core ", arrival.core, " arrived twice at ", site.instruction));
  }
  meeting->contributions[rank] = std::move(contribution);
  meeting->folds[rank] = request.fold;
  meeting->arrived[rank] = true;
  ++meeting->arrived_count;
  meeting->cores[rank] = core;
  meeting->sequences[rank] = RecordArrival(*core, arrival, meeting);

  if (meeting->arrived_count < n) {
    mu_.Unlock();
    if (AwaitPublished(*meeting, cancelled)) {
      if (!meeting->status.ok()) return meeting->status;
      return meeting->outputs[rank];
    }
    mu_.Lock();
    if (!meeting->complete) {
      RecordDeparture(*core, meeting->sequences[rank], false, absl::Now());
      meeting->arrived[rank] = false;
      meeting->contributions[rank].reset();
      meeting->folds[rank] = nullptr;
      meeting->cores[rank] = nullptr;
      --meeting->arrived_count;
      bool anyone = false;
      for (const CoreRecord* c : meeting->cores)
        anyone = anyone || c != nullptr;
      if (!anyone) {
        auto open = meetings_.find(meeting->key);
        if (open != meetings_.end() && open->second == meeting) {
          meetings_.erase(open);
        }
      }
      mu_.Unlock();
      return absl::CancelledError(absl::StrCat(
          site.kind, " ", site.instruction,
          ": the client was closed while this core waited for its peers"));
    }
    AwaitMeeting(*meeting, cancelled);
    mu_.Unlock();
    if (!meeting->status.ok()) return meeting->status;
    return meeting->outputs[rank];
  }

  // The last of this worker's cores: one arrival at the coordinator for all.
  meeting->complete = true;
  meetings_.erase(meeting->key);
  tpu_emulator::Contribution message =
      ContributionHeader(arrival.key, options_.host_id, site);
  message.set_suffix_fold(true);
  std::vector<int> mine;
  for (int r : meeting->fold_order) {
    if (HostOf(site.devices[r]) != options_.host_id) continue;
    mine.push_back(r);
    message.add_ranks(r);
    message.add_cores(site.devices[r]);
  }
  const interpreter::CollectiveFold* fold = request.fold;
  mu_.Unlock();

  // Blocks until the coordinator has folded its part: off the core's OS
  // thread, which the other cores may need (as in MeetAtPeer).
  absl::StatusOr<Literal> partial = absl::UnknownError("not contributed");
  fiber::RunBlocking([&] {
    partial = options_.peers->Contribute(coordinator, message, info.cancelled);
  });
  absl::StatusOr<Literal> result =
      partial.ok() ? absl::StatusOr<Literal>(Literal()) : partial.status();
  if (partial.ok()) {
    std::vector<const Literal*> values = {&*partial};
    for (int r : mine) values.push_back(&*meeting->contributions[r]);
    result = (*fold)(values);
  } else if (cancelled()) {
    result = absl::CancelledError(absl::StrCat(
        site.kind, " ", site.instruction,
        ": the client was closed while this core waited for its peers"));
  }
  // The coordinator's cores wait for the result (or why there is none);
  // one that is gone makes this fail, which nobody here needs to hear.
  if (partial.status().code() != absl::StatusCode::kUnavailable) {
    fiber::RunBlocking([&] {
      (void)options_.peers->Deliver(coordinator, std::string(arrival.key),
                                    result);
    });
  }
  {
    absl::MutexLock lock(&mu_);
    meeting->status = result.status();
    if (result.ok()) meeting->outputs.assign(n, *std::move(result));
    for (auto& c : meeting->contributions) c.reset();
    Publish(*meeting);
  }
  meeting->wake.WakeAll();
  if (!meeting->status.ok()) return meeting->status;
  return meeting->outputs[rank];
}

int64_t CollectiveHub::RecordArrival(CoreRecord& core, const Arrival& arrival,
                                     std::shared_ptr<Meeting> meeting) {
  if (core.history.empty()) core.history.resize(kHistoryPerCore);
  const int64_t sequence = core.next_sequence++;
  CoreRecord::Entry& entry = core.history[sequence % kHistoryPerCore];
  const absl::Time start = absl::Now();
  entry.sequence = sequence;
  entry.site = arrival.site;
  entry.done = false;
  entry.start_micros = UnixMicros(start);
  entry.end_micros = 0;
  core.activity = tpu_emulator::CoreWait::WAITING;
  core.meeting = std::move(meeting);
  core.since = start;
  core.logged = false;
  return sequence;
}

void CollectiveHub::RecordDeparture(CoreRecord& core, int64_t sequence,
                                    bool done, absl::Time end) {
  // Close the flight-recorder entry (if it is still in the window).
  if (sequence >= 0 && sequence >= core.next_sequence - kHistoryPerCore) {
    CoreRecord::Entry& entry = core.history[sequence % kHistoryPerCore];
    if (entry.sequence == sequence) {
      entry.done = done;
      entry.end_micros = UnixMicros(end);
    }
  }
  core.activity = tpu_emulator::CoreWait::RUNNING;
  core.meeting.reset();
}

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
  barrier->changed.SignalAll();
  const std::atomic<bool>* cancelled = info.cancelled;
  // Not mu_.Await: a core waiting here parks its fiber (fiber::CondVar), so
  // the cores it waits for can run on the same OS thread.
  while (barrier->arrived < n && !(cancelled != nullptr && cancelled->load())) {
    barrier->changed.WaitWithTimeout(&mu_, kCancelCheckPeriod);
  }
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
    const int64_t kept = std::min<int64_t>(
        {std::max(history, 0), static_cast<int64_t>(kHistoryPerCore),
         core->next_sequence});
    for (int64_t s = core->next_sequence - kept; s < core->next_sequence; ++s) {
      const CoreRecord::Entry& entry = core->history[s % kHistoryPerCore];
      const CollectiveSite& site = *entry.site;
      tpu_emulator::CollectiveRecord* record = wait->add_history();
      record->set_sequence(entry.sequence);
      record->set_program(site.program);
      record->set_launch(site.launch);
      record->set_instruction(site.instruction);
      record->set_kind(site.kind);
      record->set_signature(site.signature);
      for (int d : site.devices) record->add_group(d);
      record->set_done(entry.done);
      record->set_start_unix_micros(entry.start_micros);
      record->set_end_unix_micros(entry.end_micros);
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
  wait->set_instruction(meeting.instruction());
  wait->set_kind(meeting.kind());
  wait->set_signature(meeting.signature());
  for (int d : meeting.devices()) wait->add_group(d);
  // A suffix worker's cores gathering before they join the coordinator
  // wait for their own missing cores first (the others are marked arrived).
  bool missing_here = false;
  for (size_t r = 0; r < meeting.arrived.size(); ++r) {
    if (meeting.arrived[r]) continue;
    const int missing = meeting.devices()[r];
    wait->add_waiting_for(missing);
    wait->add_diagnosis(Diagnose(meeting, missing));
    missing_here = true;
  }
  if (meeting.coordinator >= 0 && !missing_here) {
    // Held by another worker, which knows who is missing.
    wait->add_diagnosis(absl::StrCat(
        "the meeting is held by host ", meeting.coordinator, " (",
        options_.peers->Address(meeting.coordinator),
        "), which knows who is missing: ask it, or any worker of the slice"));
  }
  if (meeting.awaiting_delivery) {
    wait->add_diagnosis(absl::StrCat(
        "everyone arrived; host ", meeting.suffix_host, " (",
        options_.peers->Address(meeting.suffix_host),
        ") folds its cores' contributions onto this worker's and sends the "
        "result back"));
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
    wait->set_program(waiter.meeting->program());
    wait->set_launch(waiter.meeting->launch());
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
             std::to_string(meeting.launch()) + " of " + meeting.program();
    }
    case tpu_emulator::CoreWait::RUNNING:
      if (other->program != meeting.program()) {
        return absl::StrCat(who, "is running another program, ", other->program,
                            " launch ", other->launch);
      }
      return absl::StrCat(who, "is running ", other->program, " launch ",
                          other->launch,
                          " and has not reached this collective yet");
    case tpu_emulator::CoreWait::WAITING: {
      const Meeting* there = other->meeting.get();
      if (there == nullptr) break;
      std::string what =
          absl::StrCat(who, "waits in ", there->program(), " launch ",
                       there->launch(), " at ", there->kind(), " ",
                       there->instruction(), " [", there->signature(), "]");
      if (there->program() != meeting.program()) {
        absl::StrAppend(&what, ": a different program");
      } else if (there->launch() != meeting.launch()) {
        absl::StrAppend(&what, ": a different launch");
      } else if (there->kind() != meeting.kind()) {
        absl::StrAppend(&what, ": a different collective kind");
      } else if (there->signature() != meeting.signature()) {
        absl::StrAppend(&what, ": a different shape or element type");
      } else if (there->instruction() != meeting.instruction()) {
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

// A send or receive as the flight recorder and wait report show it: a
// two-device collective from source to target.
std::shared_ptr<const CollectiveSite> TransferSite(
    const std::string& program, int64_t launch,
    const interpreter::TransferRequest& request) {
  auto site = std::make_shared<CollectiveSite>();
  site->program = program;
  site->launch = launch;
  site->instruction = request.instruction;
  site->kind = request.kind;
  site->signature = request.signature;
  site->devices = {request.source, request.target};
  return site;
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
  arrival.site = TransferSite(launch.info_.program, launch.number_, request);
  arrival.rank = 0;
  arrival.core = launch.info_.core;
  absl::MutexLock lock(&mu_);
  if (CoreRecord* core = FindCore(launch.info_.core); core != nullptr) {
    RecordDeparture(*core, RecordArrival(*core, arrival, nullptr),
                    /*done=*/true, absl::Now());
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
  arrival.site = TransferSite(launch.info_.program, launch.number_, request);
  arrival.rank = 1;
  arrival.core = launch.info_.core;
  // What the wait report shows while the value has not come: the source
  // has not arrived.
  auto meeting = std::make_shared<Meeting>();
  meeting->key = key;
  meeting->site = arrival.site;
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
  if (core != nullptr) {
    RecordDeparture(*core, sequence, received, absl::Now());
  }
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
