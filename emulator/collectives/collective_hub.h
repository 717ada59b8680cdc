#ifndef SOFTWARE_TPU_EMULATOR_COLLECTIVES_COLLECTIVE_HUB_H_
#define SOFTWARE_TPU_EMULATOR_COLLECTIVES_COLLECTIVE_HUB_H_

// Where the cores of one worker meet at collectives, and what the worker
// knows about who waits for whom.
//
// A launch is one execute of a program on one core. Each core's k-th launch
// of a program by a client (same module fingerprint, same device assignment)
// meets its peers' k-th launch by that client; within a launch, participants
// meet per instruction and per execution of it (collectives in loops meet once
// per iteration) and per group. A participant that never arrives leaves the
// others blocked, as on a TPU: there is no timeout, only cancellation of the
// waiter's own client (Close, Reset, worker shutdown). A waiting core parks
// its fiber (fiber/fiber.h; a plain thread sleeps), so a hang never holds a
// thread that other cores or clients need.
//
// In a pod slice (options.peers set) a launch whose device assignment spans
// workers is numbered without the client id (each worker gives the pod
// driver's session its own id): the k-th launch of a program on a core meets
// the k-th launch on the other cores, whoever launched it. A meeting whose
// group spans workers is held by the coordinator, the worker of the group's
// lowest core; participants on other workers join it through PeerLink and
// get their outputs back from it, so the combine runs once, in replica order,
// exactly as on one worker. While such a meeting waits for another worker,
// the coordinator pings it a few times a second and fails the meeting with
// UNAVAILABLE naming the worker once it does not answer.
//
// The hub keeps, per core, what it runs or waits for and the last 1000
// collectives it took part in, and builds the wait report from them: who
// waits, for which missing participants, what those are doing instead, and
// the cycles of the wait-for graph.
//
// Thread safety: safe for concurrent use.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "emulator/collectives/peer_link.h"
#include "emulator/fiber/wake_word.h"
#include "emulator/interpreter/collectives.h"
#include "emulator/trace/recorder.h"
#include "proto/control.pb.h"
#include "proto/peer.pb.h"

namespace tpu::emulator {

struct CollectiveHubOptions {
  // Cores of this worker, by id, and the worker's host id in its slice.
  std::vector<int> cores;
  int host_id = 0;
  // How many operations wait on each core's queue; reported so a user sees
  // a core that is idle only because its next program waits for something.
  std::function<int(int core)> queued;
  // Log the wait report once a core has waited this long in one collective;
  // zero or less disables the log line.
  absl::Duration report_waits_after = absl::Seconds(10);
  // Check at launch that every core of a multi-core device assignment starts
  // the same program for the same launch (TPU's enhanced launch barrier).
  bool launch_barrier = false;
  // The other workers of the pod slice; null for a lone worker (then groups
  // that name other workers' cores wait for them forever, as before). Core
  // ids are the slice's: host h serves cores h*n .. h*n+n-1 for n = cores.
  std::shared_ptr<PeerLink> peers;
  // How long a meeting waits for another worker before pinging it.
  absl::Duration peer_check_period = absl::Milliseconds(250);
  // Where each core's collective waits and exchanges go when tracing (one
  // slice each, and an arrow from a waiter to the last to arrive). Not
  // owned; may be null.
  trace::Recorder* recorder = nullptr;
};

// What a core is about to run.
struct LaunchInfo {
  int core = 0;
  uint32_t client_id = 0;
  // The HLO module's name and a fingerprint of the compiled module: launches
  // of the same program meet, whichever client or handle runs them.
  std::string program;
  std::string fingerprint;
  // The device ids of the execute's device_assignment, in order.
  std::vector<int> assignment;
  // The client's cancellation flag. Not owned; outlives the launch.
  const std::atomic<bool>* cancelled = nullptr;
};

class CollectiveHub;

// What never changes about one collective instruction of one launch, shared
// by its meetings and the flight recorder's entries (which format it only
// when a report asks).
struct CollectiveSite {
  std::string program;
  int64_t launch = 0;
  std::string instruction;
  std::string kind;
  std::string signature;
  std::vector<int> devices;
};

// One launch on one core: the interpreter's CollectiveExecutor for it.
// Ends the launch (the core becomes idle) when destroyed.
class Launch : public interpreter::CollectiveExecutor {
 public:
  ~Launch() override;
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  int64_t number() const { return number_; }

  absl::StatusOr<Literal> Exchange(
      const interpreter::CollectiveRequest& request, Literal contribution,
      const interpreter::CollectiveCombine& combine) override;

  // Point-to-point transfers (send/recv between devices) of this launch:
  // values wait in a mailbox per (source, target) of the launch until the
  // target takes them.
  absl::Status Send(const interpreter::TransferRequest& request,
                    Literal value) override;
  absl::StatusOr<Literal> Receive(
      const interpreter::TransferRequest& request) override;

 private:
  friend class CollectiveHub;
  Launch(CollectiveHub* hub, LaunchInfo info, int64_t number,
         bool spans_workers);

  // One collective instruction as this launch runs it: built at its first
  // execution, so that later ones (collectives in loops) neither allocate
  // nor format.
  struct SiteState {
    std::shared_ptr<const CollectiveSite> site;
    // How often it ran in this launch.
    int64_t occurrences = 0;
    // The meeting key without the occurrence, then with it (reused).
    size_t key_base = 0;
    std::string key;
  };
  SiteState& Site(const interpreter::CollectiveRequest& request);

  CollectiveHub* const hub_;
  const LaunchInfo info_;
  const int64_t number_;
  // The assignment names cores of other workers of the slice.
  const bool spans_workers_;
  // What every meeting key of this launch starts with: the launch's owner
  // (client, or "slice" across workers), program, assignment and number.
  const std::string key_prefix_;
  // computation -> instruction -> its state (looked up without building a
  // string).
  absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, SiteState>>
      sites_;
};

class CollectiveHub {
 public:
  explicit CollectiveHub(CollectiveHubOptions options);
  ~CollectiveHub();
  CollectiveHub(const CollectiveHub&) = delete;
  CollectiveHub& operator=(const CollectiveHub&) = delete;

  // Marks the core running and numbers the launch. With the launch barrier
  // on, blocks until every core of the assignment started its launch, and
  // fails (all of them) with FAILED_PRECONDITION if they started different
  // programs.
  absl::StatusOr<std::unique_ptr<Launch>> BeginLaunch(LaunchInfo info);

  // A fault rule made `core` skip a collective of its current launch: its
  // peers wait for it in vain, and the wait report's diagnosis of the core
  // is `note` (e.g. "core 1 skipped all-reduce ar.1 (fault rule 2)") until
  // the launch ends.
  void NoteSkip(int core, std::string note);

  // Wakes waiters so that those whose client was cancelled leave.
  void WakeWaiters();

  // Drops a closed client's launch numbers. Launches of different clients
  // never meet: each client numbers its own launches from 0, as each TPU
  // program run has its own launch id.
  void ForgetClient(uint32_t client_id);

  // Stops the long-wait log line (before what `queued` reads goes away).
  void StopReporting();

  // The state of every core of this worker now, with up to `history` of each
  // core's most recent collectives.
  tpu_emulator::WaitReport Report(int history = 0) const;

  // Report() plus the other workers' cores waiting in meetings this worker
  // coordinates (the peer service's LocalWaitReport).
  tpu_emulator::PeerWaitReport LocalReport(int history = 0) const;

  // The whole slice: every worker's LocalReport merged, cycles across
  // workers included. Without peers, Report(). A worker that does not answer
  // is listed with its cores idle and a diagnosis saying so.
  tpu_emulator::WaitReport SliceReport(int history = 0) const;

  // A participant on another worker joins a meeting this worker coordinates
  // (the peer service's Contribute). Blocks until the meeting completes;
  // withdraws and fails CANCELLED once `cancelled` returns true.
  absl::StatusOr<Literal> ArriveFromPeer(
      const tpu_emulator::Contribution& arrival,
      const std::function<bool()>& cancelled);

  // The result of a suffix fold (proto/peer.proto) comes back from the
  // worker that folded it (the peer service's Deliver): the meeting's cores
  // here get it. FAILED_PRECONDITION when no meeting waits for it.
  absl::Status DeliverFromPeer(const std::string& meeting,
                               absl::StatusOr<Literal> result);

 private:
  friend class Launch;
  struct Meeting;
  struct CoreRecord;
  struct Barrier;
  struct Arrival;
  struct Mailbox;
  struct RemoteWaiter {
    std::shared_ptr<Meeting> meeting;
    absl::Time since;
  };

  absl::StatusOr<Literal> Exchange(
      Launch& launch, const interpreter::CollectiveRequest& request,
      Literal contribution, const interpreter::CollectiveCombine& combine);
  // Joins (or opens) the meeting of `arrival` and waits until it completes.
  // `core` is the arriving core's record (found under mu_), negative for a
  // peer's participant; `combine` is null for a peer's participant.
  // `request` is the local participant's (null for a peer's).
  absl::StatusOr<Literal> Meet(const Arrival& arrival, Literal contribution,
                               const interpreter::CollectiveCombine* combine,
                               const std::function<bool()>& cancelled, int core,
                               const interpreter::CollectiveRequest* request)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The meeting of `key`, opened if new.
  std::shared_ptr<Meeting> OpenMeeting(
      absl::string_view key, std::shared_ptr<const CollectiveSite> site)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The worker whose run of ranks ends the fold order of `request` when the
  // order is a run of `coordinator`'s ranks followed by a run of that
  // worker's (a suffix fold, proto/peer.proto); -1 otherwise.
  int SuffixFoldHost(const interpreter::CollectiveRequest& request,
                     int coordinator) const;
  // Coordinator: everyone arrived at a suffix-fold meeting; folds this
  // worker's run into the partial the suffix worker continues from, and
  // waits for its delivery (or fails the meeting).
  void StartSuffixFold(Meeting& meeting) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Coordinator: the suffix worker's one arrival for all its ranks; returns
  // the partial fold.
  absl::StatusOr<Literal> ArriveSuffix(
      const tpu_emulator::Contribution& arrival,
      std::shared_ptr<const CollectiveSite> site,
      const std::function<bool()>& cancelled) ABSL_LOCKS_EXCLUDED(mu_);
  // Suffix worker: this worker's cores gather; the last sends one arrival
  // for all of them, folds their contributions onto the coordinator's
  // partial, and delivers the result back.
  absl::StatusOr<Literal> GatherSuffix(
      const LaunchInfo& info, const Arrival& arrival,
      const interpreter::CollectiveRequest& request, int coordinator,
      Literal contribution, const std::function<bool()>& cancelled)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until `meeting` is done or (before it completes) `cancelled`;
  // pings the missing participants' workers while it waits for them.
  void AwaitMeeting(Meeting& meeting, const std::function<bool()>& cancelled)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A meeting of this worker's cores only: sleeps on the meeting's wake word
  // without mu_ until it is done; false if `cancelled` first.
  bool AwaitPublished(Meeting& meeting, const std::function<bool()>& cancelled)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Marks `meeting` done (status and outputs set), closes every local
  // participant's flight-recorder entry and signals the waiters on mu_;
  // the caller wakes those on the wake word (after unlocking mu_).
  void Publish(Meeting& meeting) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The trace of one participant's wait and exchange (recorder on).
  void TraceMeeting(const Meeting& meeting, const Arrival& arrival,
                    int64_t arrived_micros, uint64_t wait_slice);
  // A participant of a meeting another worker coordinates.
  absl::StatusOr<Literal> MeetAtPeer(const LaunchInfo& info,
                                     const Arrival& arrival, int coordinator,
                                     const Literal& contribution);
  // The core's flight-recorder entry and waiting state; returns the entry's
  // sequence number.
  int64_t RecordArrival(CoreRecord& core, const Arrival& arrival,
                        std::shared_ptr<Meeting> meeting)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordDeparture(CoreRecord& core, int64_t sequence, bool done,
                       absl::Time end) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fills `wait` (and the wait-for edges) for a core waiting in `meeting`.
  void DescribeWait(const Meeting& meeting, tpu_emulator::CoreWait* wait) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Send and Receive of a launch (see Launch).
  absl::Status Post(Launch& launch, const interpreter::TransferRequest& request,
                    Literal value);
  absl::StatusOr<Literal> Take(Launch& launch,
                               const interpreter::TransferRequest& request);
  // Fails a transfer naming a core that no worker reachable from here runs.
  absl::Status CheckTransferPeers(
      const interpreter::TransferRequest& request) const;
  int HostOf(int core) const;
  bool OnOtherWorker(int core) const;
  void EndLaunch(const Launch& launch);
  absl::Status LaunchBarrier(const LaunchInfo& info);
  CoreRecord* FindCore(int core) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What `missing` does instead of joining `meeting`, for people.
  std::string Diagnose(const Meeting& meeting, int missing) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void LogLongWaits();

  const CollectiveHubOptions options_;

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<CoreRecord>> cores_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<Meeting>> meetings_
      ABSL_GUARDED_BY(mu_);
  // Point-to-point values sent and not yet received, per launch and
  // (source, target).
  absl::flat_hash_map<std::string, std::shared_ptr<Mailbox>> mailboxes_
      ABSL_GUARDED_BY(mu_);
  // (program, assignment, core) -> launches begun.
  absl::flat_hash_map<std::string, int64_t> launch_counts_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<Barrier>> barriers_
      ABSL_GUARDED_BY(mu_);
  // Suffix-fold meetings waiting for their result from the suffix worker.
  absl::flat_hash_map<std::string, std::shared_ptr<Meeting>> delivering_
      ABSL_GUARDED_BY(mu_);
  // Other workers' cores waiting in meetings this worker coordinates.
  absl::flat_hash_map<int, RemoteWaiter> remote_waiters_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread reporter_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_COLLECTIVES_COLLECTIVE_HUB_H_
