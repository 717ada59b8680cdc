#ifndef SOFTWARE_TPU_EMULATOR_SERVICE_SLICE_TRACE_H_
#define SOFTWARE_TPU_EMULATOR_SERVICE_SLICE_TRACE_H_

// `tpu_ctl trace` against any worker of a pod slice: that worker starts and
// stops tracing on the others through their Control service
// (this_worker_only) and merges their traces with its own
// (trace/merge.h). Every call to another worker has a deadline: a dead or
// wedged worker becomes a note and a named empty process in the trace,
// never a hang.
//
// Thread safety: safe for concurrent use.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/control.grpc.pb.h"

namespace tpu::emulator {

class SliceTrace {
 public:
  // `addresses[h]` is host:port of the worker with host id h (empty: not in
  // a slice); this worker is `host_id`.
  SliceTrace(std::vector<std::string> addresses, int host_id);

  // Whether there are other workers to trace.
  bool in_slice() const { return addresses_.size() > 1; }

  // Starts tracing on every other worker; a note per worker that did not.
  // `caller_deadline`: when the caller of this worker stops waiting; the
  // calls to the others end well before it, so the answer reaches it.
  std::vector<std::string> StartOthers(bool instructions,
                                       absl::Time caller_deadline);

  // Stops tracing on every other worker and returns the slice's trace, with
  // this worker's `own_json`; a note per worker missing from it.
  absl::StatusOr<std::string> StopOthersAndMerge(
      std::string own_json, absl::Time caller_deadline,
      std::vector<std::string>* notes);

 private:
  const std::vector<std::string> addresses_;
  const int host_id_;
  // By host id; null for this worker.
  std::vector<std::unique_ptr<tpu_emulator::Control::Stub>> stubs_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SERVICE_SLICE_TRACE_H_
