#include "emulator/worker/fault_hooks.h"

#include <stdio.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "emulator/faults/fault_wait.h"
#include "emulator/trace/recorder.h"

namespace tpu::emulator {
namespace {

using faults::ActionKind;
using faults::Match;

// The status of an operation a fail rule matched: the rule's message as
// given, so a test can reproduce an exact status; without one, a message
// naming the rule.
absl::Status FailStatus(const Match& match, const std::string& what) {
  const absl::Status& status = match.action.status;
  if (!status.message().empty()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(what, " failed: ", match.Describe(), "."));
}

absl::Status HeldStatus(const Match& match, const std::string& what) {
  return absl::CancelledError(
      absl::StrCat(what, " was held by ", match.Describe(),
                   " until its client was closed or the worker reset."));
}

[[noreturn]] void Crash(const Match& match, const std::string& what) {
  fprintf(stderr,
          "tpu_emulator: %s crashed the worker as %s started; exiting at "
          "once, as a lost host would.\n",
          match.Describe().c_str(), what.c_str());
  fflush(stderr);
  fflush(stdout);
  _exit(3);
}

// Ends the stream `ctx` came on and releases its client. Returns the status
// the matched operation reports (nobody receives it: the stream is gone).
absl::Status DropStream(const OpContext& ctx, const Match& match,
                        const std::string& what) {
  const absl::Status status = absl::UnavailableError(absl::StrCat(
      "The stream of client ", ctx.session->client_id(), " was dropped by ",
      match.Describe(), " as ", what, " started."));
  ctx.sink->Drop(status);
  if (ctx.worker->close_client) {
    ctx.worker->close_client(ctx.session->client_id(), status);
  }
  return status;
}

void LimitHbm(const OpContext& ctx, const Match& match, int core_id) {
  const int local = ctx.worker->topology.LocalIndex(core_id);
  if (local < 0 || local >= static_cast<int>(ctx.worker->hbm.size())) return;
  ctx.worker->hbm[local]->LimitCapacity(match.action.bytes);
}

}  // namespace

int BufferCore(const OpContext& ctx, uint64_t handle) {
  auto buffer =
      ctx.session->GetBuffer(handle, [] { return "fault rule core"; });
  return buffer.ok() ? (*buffer)->core_id() : -1;
}

namespace {

// Applies `match` to a starting operation. `wait` runs a delay or hang (on
// this thread or another); returns the slow factor if the operation goes on
// here and now, nullopt if it was finished or handed to `wait`.
std::optional<double> Apply(
    const OpContext& ctx, const Match& match, faults::OpKind kind, int core_id,
    const std::function<void(std::function<void()>)>& wait,
    const Proceed& proceed) {
  const std::string what =
      absl::StrCat(ctx.Name(), " ", faults::OpKindName(kind));
  switch (match.action.kind) {
    case ActionKind::kDelay:
    case ActionKind::kHang: {
      const bool hang = match.action.kind == ActionKind::kHang;
      const absl::Duration duration =
          hang ? absl::InfiniteDuration() : match.action.delay;
      const std::atomic<bool>* cancelled = ctx.session->cancelled();
      wait([ctx, what, cancelled, duration, hang, match, proceed]() {
        faults::SleepUnlessCancelled(duration, cancelled);
        if (hang) return ctx.Finish(HeldStatus(match, what));
        if (proceed) proceed(1);
      });
      if (hang || proceed) return std::nullopt;
      return 1;
    }
    case ActionKind::kFail:
      ctx.Finish(FailStatus(match, what));
      return std::nullopt;
    case ActionKind::kDropStream:
      ctx.Finish(DropStream(ctx, match, what));
      return std::nullopt;
    case ActionKind::kCrash:
      Crash(match, what);
    case ActionKind::kHbm:
      LimitHbm(ctx, match, core_id);
      return 1;
    case ActionKind::kSlow:
      return match.action.factor;
    case ActionKind::kSkip:
      break;
  }
  return 1;
}

// One log line per match, so that whoever reads the worker's log knows the
// failure was asked for, and an instant event on the trace (on the core's
// track, or the client's for operations on no core).
void LogMatch(const OpContext& ctx, const Match& match, int core_id,
              const std::string& what) {
  const std::string rule = match.Describe();
  fprintf(stderr, "tpu_emulator: %s matched %s\n", rule.c_str(), what.c_str());
  trace::Recorder* recorder = ctx.worker->recorder;
  if (recorder != nullptr && recorder->on()) {
    recorder->Instant(core_id >= 0
                          ? trace::CoreTrack(core_id)
                          : trace::ClientTrack(ctx.session->client_id()),
                      absl::StrCat("fault: ", rule), "fault",
                      trace::Args().Add("operation", what).members());
  }
}

std::optional<Match> Check(const OpContext& ctx, faults::OpKind kind,
                           int core_id, const std::string& program) {
  faults::FaultPlan* plan = ctx.worker->faults;
  if (plan == nullptr) return std::nullopt;
  std::optional<Match> match = plan->Check(
      {kind, core_id, ctx.session->client_id(), program, /*instruction=*/""});
  if (match.has_value()) {
    LogMatch(ctx, *match, core_id,
             absl::StrCat(ctx.Name(), " ", faults::OpKindName(kind),
                          core_id >= 0 ? " on core " : "",
                          core_id >= 0 ? absl::StrCat(core_id) : ""));
  }
  return match;
}

}  // namespace

void StartWithFaults(const OpContext& ctx, faults::OpKind kind, int core_id,
                     const std::string& program, Proceed proceed) {
  std::optional<Match> match = Check(ctx, kind, core_id, program);
  if (!match.has_value()) return proceed(1);
  faults::FaultThreads* threads = ctx.worker->fault_threads;
  auto elsewhere = [threads](std::function<void()> waiting) {
    if (threads == nullptr) return waiting();
    threads->Run(std::move(waiting));
  };
  std::optional<double> factor =
      Apply(ctx, *match, kind, core_id, elsewhere, proceed);
  if (factor.has_value()) proceed(*factor);
}

std::optional<double> StartOnCore(const OpContext& ctx, faults::OpKind kind,
                                  int core_id, const std::string& program) {
  std::optional<Match> match = Check(ctx, kind, core_id, program);
  if (!match.has_value()) return 1;
  auto here = [](std::function<void()> waiting) { waiting(); };
  return Apply(ctx, *match, kind, core_id, here, /*proceed=*/nullptr);
}

FaultingCollectives::FaultingCollectives(OpContext ctx, Launch* launch,
                                         int core_id, std::string program)
    : ctx_(std::move(ctx)),
      launch_(launch),
      core_id_(core_id),
      program_(std::move(program)) {}

absl::StatusOr<Literal> FaultingCollectives::Exchange(
    const interpreter::CollectiveRequest& request, Literal contribution,
    const interpreter::CollectiveCombine& combine) {
  faults::FaultPlan* plan = ctx_.worker->faults;
  std::optional<Match> match;
  if (plan != nullptr) {
    match =
        plan->Check({faults::OpKind::kCollective, core_id_,
                     ctx_.session->client_id(), program_, request.instruction});
  }
  if (!match.has_value()) {
    return launch_->Exchange(request, std::move(contribution), combine);
  }
  const std::string what = absl::StrCat(request.kind, " ", request.instruction,
                                        " on core ", core_id_);
  LogMatch(ctx_, *match, core_id_, absl::StrCat(ctx_.Name(), " ", what));
  const std::atomic<bool>* cancelled = ctx_.session->cancelled();
  switch (match->action.kind) {
    case ActionKind::kDelay:
      faults::SleepUnlessCancelled(match->action.delay, cancelled);
      break;
    case ActionKind::kHang:
      faults::SleepUnlessCancelled(absl::InfiniteDuration(), cancelled);
      return HeldStatus(*match, what);
    case ActionKind::kSkip:
      ctx_.worker->collectives->NoteSkip(
          core_id_, absl::StrCat("core ", core_id_, " skipped ", request.kind,
                                 " ", request.instruction, " (fault rule ",
                                 match->rule_number, ")"));
      faults::SleepUnlessCancelled(absl::InfiniteDuration(), cancelled);
      return HeldStatus(*match, what);
    case ActionKind::kFail:
      return FailStatus(*match, what);
    case ActionKind::kDropStream:
      return DropStream(ctx_, *match, what);
    case ActionKind::kCrash:
      Crash(*match, what);
    case ActionKind::kHbm:
      LimitHbm(ctx_, *match, core_id_);
      break;
    case ActionKind::kSlow:
      break;
  }
  return launch_->Exchange(request, std::move(contribution), combine);
}

}  // namespace tpu::emulator
