#include "emulator/service/slice_trace.h"

#include <algorithm>
#include <climits>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "emulator/trace/merge.h"
#include "grpcpp/grpcpp.h"

namespace tpu::emulator {
namespace {

// A live worker starts at once; stopping formats its trace, which for a
// long recording takes a while, but never this long.
constexpr absl::Duration kStartDeadline = absl::Seconds(5);
constexpr absl::Duration kStopDeadline = absl::Seconds(30);

// At most `timeout` from now, and three quarters of the time the caller
// still waits: a wedged worker becomes a note before the caller gives up.
void SetDeadline(grpc::ClientContext& context, absl::Duration timeout,
                 absl::Time caller_deadline) {
  const absl::Time now = absl::Now();
  const absl::Duration left = (caller_deadline - now) * 3 / 4;
  context.set_deadline(absl::ToChronoTime(now + std::min(timeout, left)));
}

std::string Describe(const grpc::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(
                          static_cast<absl::StatusCode>(status.error_code())),
                      ": ", status.error_message());
}

// Runs `call(h)` for every other worker at once and waits for all.
template <typename Call>
void ForEachOther(int count, int self, Call call) {
  std::vector<std::thread> threads;
  for (int h = 0; h < count; ++h) {
    if (h != self) threads.emplace_back([&call, h] { call(h); });
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace

SliceTrace::SliceTrace(std::vector<std::string> addresses, int host_id)
    : addresses_(std::move(addresses)), host_id_(host_id) {
  for (size_t h = 0; h < addresses_.size(); ++h) {
    if (static_cast<int>(h) == host_id_) {
      stubs_.push_back(nullptr);
      continue;
    }
    // Plaintext, like the slice's peer links (grpc_peer_link.h).
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(INT_MAX);
    stubs_.push_back(tpu_emulator::Control::NewStub(grpc::CreateCustomChannel(
        addresses_[h], grpc::InsecureChannelCredentials(), args)));
  }
}

std::vector<std::string> SliceTrace::StartOthers(bool instructions,
                                                 absl::Time caller_deadline) {
  std::vector<std::string> notes(addresses_.size());
  ForEachOther(addresses_.size(), host_id_, [&](int h) {
    grpc::ClientContext context;
    SetDeadline(context, kStartDeadline, caller_deadline);
    tpu_emulator::StartTraceRequest request;
    request.set_instructions(instructions);
    request.set_this_worker_only(true);
    tpu_emulator::StartTraceResponse response;
    grpc::Status status = stubs_[h]->StartTrace(&context, request, &response);
    if (!status.ok()) {
      notes[h] = absl::StrCat(trace::WorkerProcessName(h, addresses_[h]),
                              " is not tracing: ", Describe(status));
    }
  });
  std::vector<std::string> failed;
  for (std::string& note : notes) {
    if (!note.empty()) failed.push_back(std::move(note));
  }
  return failed;
}

absl::StatusOr<std::string> SliceTrace::StopOthersAndMerge(
    std::string own_json, absl::Time caller_deadline,
    std::vector<std::string>* notes) {
  std::vector<trace::WorkerTrace> workers(addresses_.size());
  for (size_t h = 0; h < addresses_.size(); ++h) {
    workers[h].host_id = static_cast<int>(h);
    workers[h].address = addresses_[h];
  }
  workers[host_id_].json = std::move(own_json);
  ForEachOther(addresses_.size(), host_id_, [&](int h) {
    grpc::ClientContext context;
    SetDeadline(context, kStopDeadline, caller_deadline);
    tpu_emulator::StopTraceRequest request;
    request.set_this_worker_only(true);
    tpu_emulator::StopTraceResponse response;
    grpc::Status status = stubs_[h]->StopTrace(&context, request, &response);
    if (status.ok()) {
      workers[h].json = std::move(*response.mutable_trace_json());
    } else {
      workers[h].missing_reason = Describe(status);
    }
  });
  for (const trace::WorkerTrace& worker : workers) {
    if (!worker.json.empty()) continue;
    notes->push_back(
        absl::StrCat(trace::WorkerProcessName(worker.host_id, worker.address),
                     " is missing from the trace: ", worker.missing_reason));
  }
  return trace::MergeChromeTraces(workers);
}

}  // namespace tpu::emulator
