#ifndef SOFTWARE_TPU_EMULATOR_TRACE_CHROME_JSON_H_
#define SOFTWARE_TPU_EMULATOR_TRACE_CHROME_JSON_H_

// A recorded Trace as Chrome trace-event JSON ({"traceEvents": [...]}), the
// format Perfetto and chrome://tracing open.
//
// Thread safety: stateless functions.

#include <cstdint>
#include <string>

#include "emulator/trace/recorder.h"
#include "proto/json_quote.h"

namespace tpu::emulator::trace {

using ::tpu::wire::JsonQuote;

// Every event gets name, cat, ph, ts, pid and tid; slices ("X") dur; flows
// ("s"/"f") their id, the 'f' binding to its enclosing slice. A client's
// slices are spread over lanes (tracks "client N", "client N (2)", ...) so
// that slices on one track never overlap partially. Metadata events name the
// process and every track and order cores before clients.
std::string ToChromeJson(const Trace& trace);

// Flow ids are global in the format: a worker's are offset by its pid so
// that the traces of a slice's workers merge (merge.h) without collisions,
// staying below 2^53 for readers that hold numbers as doubles.
inline uint64_t SliceFlowId(int pid, uint64_t flow_id) {
  return (static_cast<uint64_t>(pid) << 32) + flow_id;
}

}  // namespace tpu::emulator::trace

#endif  // SOFTWARE_TPU_EMULATOR_TRACE_CHROME_JSON_H_
