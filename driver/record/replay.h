#ifndef SOFTWARE_TPU_DRIVER_RECORD_REPLAY_H_
#define SOFTWARE_TPU_DRIVER_RECORD_REPLAY_H_

// Replays a recording (proto/recording.h) through any TpuDriver: every
// operation with its original dependencies (wait_for ids and the handles it
// names) and data, in the log's order, and compares the outcome with the
// recording's results side file when there is one. tools/tpu_replay is the
// command line over this.
//
// A log holds wait_for ids but not what the client awaited on the host
// (TpuClient, for one, awaits an execute before reading its output). So an
// operation that reads a handle is issued once the earlier operations that
// wrote it completed, and one that frees or overwrites a handle (dealloc,
// unload, transfer_to, the target of transfer_from_to, an execute's
// outputs) once every earlier operation naming it completed: what the
// recording client must have seen complete before issuing it.
//
// Thread safety: the functions are reentrant; a driver is used by one
// replay at a time.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "driver/tpu_driver.h"
#include "proto/recording.h"

namespace tpu::driver {

using RecordedEntries = std::vector<tpu_driver::StreamRequest::Entry>;
// Recorded results by operation id.
using RecordedResults =
    absl::flat_hash_map<int64_t, tpu_emulator::OperationResult>;

// The whole log; DATA_LOSS naming the offset of a truncated or corrupt
// record, NOT_FOUND if it cannot be opened.
absl::StatusOr<RecordedEntries> ReadRecordedEntries(const std::string& path);
// The side file `path`; NOT_FOUND if there is none.
absl::StatusOr<RecordedResults> ReadRecordedResults(const std::string& path);

struct ReplayOptions {
  // Wait for each operation before issuing the next and stop at the first
  // that fails.
  bool stop_at_first_failure = false;
  // How long to wait for one operation before reporting it
  // DEADLINE_EXCEEDED.
  absl::Duration operation_timeout = absl::Minutes(5);
};

struct ReplayedOperation {
  // Position in the log (0-based) and the recorded id.
  int index = 0;
  int64_t operation_id = 0;
  std::string kind;
  absl::Status status;
  // What a transfer_from read.
  std::optional<std::string> transfer_from_data;
};

struct ReplayReport {
  // The operations issued, in log order (all of them unless stopped early).
  std::vector<ReplayedOperation> operations;
  int failed = 0;
  bool stopped_early = false;
};

ReplayReport Replay(TpuDriver& driver, const RecordedEntries& entries,
                    const ReplayOptions& options);

// "operation #3 (id 4, execute)": how operations are named in reports.
std::string DescribeOperation(const ReplayedOperation& operation);

// The first operation (in log order) whose status code or transfer_from
// bytes differ from `recorded`, described with what differed; nullopt if
// every operation with a recorded result matched. Messages are not
// compared: they name session-specific client ids.
std::optional<std::string> FirstDifference(const ReplayReport& report,
                                           const RecordedResults& recorded);

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_RECORD_REPLAY_H_
