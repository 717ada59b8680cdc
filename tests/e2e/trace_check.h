#ifndef SOFTWARE_TPU_TESTS_E2E_TRACE_CHECK_H_
#define SOFTWARE_TPU_TESTS_E2E_TRACE_CHECK_H_

// The trace-event format as Perfetto reads it, checked with gtest
// expectations on a trace that tpu_ctl or tpu_emulator wrote (one worker's
// or a whole slice's).

#include <string>
#include <vector>

#include "google/protobuf/struct.pb.h"

namespace tpu::e2e {

// One trace event, as the checker reads it.
struct TraceEvent {
  std::string name, cat, ph;
  double ts = 0, dur = 0, pid = 0, tid = 0, id = 0;
  google::protobuf::Struct args;
};

// The string member `key` of `s` ("" if absent).
std::string Str(const google::protobuf::Struct& s, const std::string& key);

// Checks `json` against the trace-event format and returns its events:
// every event has name, ph, ts, pid and tid; complete slices have a
// non-negative dur; slices of one track (pid, tid) nest (each lies within
// the enclosing one or after it); every flow has its start and finish, each
// inside a slice of its own track. Failures are gtest expectations.
std::vector<TraceEvent> CheckTraceFormat(const std::string& json);

}  // namespace tpu::e2e

#endif  // SOFTWARE_TPU_TESTS_E2E_TRACE_CHECK_H_
