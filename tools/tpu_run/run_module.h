#ifndef SOFTWARE_TPU_TOOLS_TPU_RUN_RUN_MODULE_H_
#define SOFTWARE_TPU_TOOLS_TPU_RUN_RUN_MODULE_H_

// What tpu_run does, as a library: load an HLO module, compile it on a TPU
// system through TpuClient, feed it .npy inputs, run it (one replica per
// core 0..N-1) and write the results as .npy.
//
// Files:
//   inputs:  <inputs_dir>/replica_<r>/arg_<i>.npy, one per entry parameter i
//            (dtype and shape exactly the parameter's; bf16 as float32); a
//            tuple parameter from arg_<i>.npz (numpy.savez(path, *leaves))
//            or a folder arg_<i>/ of arr_<j>.npy, leaf j being the j-th
//            array of the tuple (nested tuples flattened in order);
//   outputs: <outputs_dir>/replica_<r>/out_<j>.npy, j counting the result's
//            array leaves in order (a non-tuple result is out_0; bf16 is
//            written as float32).
// A program with parameters needs --inputs_dir, or --random_inputs for
// deterministic pseudo-random inputs (the same on every run: floats are
// multiples of 1/8 in [-1, 1], integers in [-8, 8] (unsigned: [0, 8]),
// preds alternate with the generator's low bit).
//
// Thread safety: RunModule is reentrant.

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/client_options.h"

namespace tpu {

struct RunOptions {
  // Address of the TPU system: "grpc://host:port", "local://", ...
  std::string target;
  // The module file (binary HloProto, binary HloModuleProto or HLO text).
  std::string module_path;
  // Replicas to compile for and run, on cores 0..replicas-1.
  int replicas = 1;
  // Root of replica_<r>/arg_<i>.npy; empty if the program takes no inputs
  // or random_inputs is set.
  std::string inputs_dir;
  // Root of replica_<r>/out_<j>.npy; empty: results are printed to `out`.
  std::string outputs_dir;
  // Feed deterministic pseudo-random inputs instead of reading inputs_dir.
  bool random_inputs = false;
  // Print the module to `out` before running it.
  bool dump_hlo = false;
  // When positive: after one untimed run, run `repeat` more times and print
  // the step time (min / median / max) to `out`; the outputs are the last
  // run's.
  int repeat = 0;
  // Deadlines and connection timeout.
  client::ClientOptions client_options;
};

// Runs the module. Every failure is a status whose message names the file,
// replica, argument or address concerned; nothing is written to `out` on a
// failure other than what was printed before it.
absl::Status RunModule(const RunOptions& options, std::ostream& out);

// "step time over N runs after a warm-up: min A ms, median B ms, max C ms".
// REQUIRES: !step_ms.empty().
std::string StepTimes(std::vector<double> step_ms);

}  // namespace tpu

#endif  // SOFTWARE_TPU_TOOLS_TPU_RUN_RUN_MODULE_H_
