// tpu_run: runs an HLO module on a TPU system (real or emulated) with .npy
// inputs and outputs. See run_module.h for the file layout.
//
//   tpu_run --target=grpc://localhost:8470 --module=prog.pb
//       [--replicas=N] [--inputs_dir=DIR | --random_inputs]
//       [--outputs_dir=DIR] [--dump_hlo] [--connect_timeout=0s] [--repeat=N]
//
// Exit status 0 on success; on any error one line on stderr and exit 1.

#include <stdlib.h>

#include <iostream>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "hlo/host_memory.h"
#include "tools/tpu_run/run_module.h"

ABSL_FLAG(std::string, target, "",
          "TPU system address: grpc://host:port, local://, ...");
ABSL_FLAG(std::string, module, "",
          "HLO module: binary HloProto or HloModuleProto (.pb), or HLO text");
ABSL_FLAG(int, replicas, 1,
          "replicas to compile for; replica r runs on core r");
ABSL_FLAG(std::string, inputs_dir, "",
          "directory of replica_<r>/arg_<i>.npy inputs");
ABSL_FLAG(std::string, outputs_dir, "",
          "directory for replica_<r>/out_<j>.npy results; empty: print them");
ABSL_FLAG(bool, random_inputs, false,
          "feed deterministic pseudo-random inputs instead of --inputs_dir");
ABSL_FLAG(bool, dump_hlo, false, "print the module before running it");
ABSL_FLAG(int, repeat, 0,
          "after one warm-up run, run N more times and print the step time "
          "(min / median / max)");
ABSL_FLAG(absl::Duration, execute_warn_interval, absl::Seconds(10),
          "warn on stderr each time a program runs this long");
ABSL_FLAG(absl::Duration, execute_max_time, absl::Seconds(120),
          "give up on a program after this long");
ABSL_FLAG(absl::Duration, connect_timeout, absl::ZeroDuration(),
          "wait this long for a --target that refuses connections (a worker "
          "still starting); 0: fail at once");
ABSL_FLAG(absl::Duration, connection_timeout, absl::Seconds(30),
          "give up on a --target that accepts the connection but does not "
          "answer after this long");

int main(int argc, char** argv) {
  // Debian's absl is built with its debug checks: every lock would also
  // update a process-wide lock-order graph. Tests keep them; users' runs
  // do not pay for them.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Errors are one line (below), and the status already quotes gRPC's reason:
  // gRPC's own log lines (e.g. "Handshake failed" on a TLS error) would only
  // repeat it. GRPC_VERBOSITY=ERROR in the environment brings them back.
  setenv("GRPC_VERBOSITY", "NONE", /*overwrite=*/0);
  tpu::ConfigureHostMemoryForLargeBuffers();
  absl::SetProgramUsageMessage(
      "runs an HLO module on a TPU system with .npy inputs and outputs");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "tpu_run: error: unexpected argument '" << rest[1]
              << "'; all options are --flags (see --help)" << std::endl;
    return 2;
  }
  tpu::RunOptions options;
  options.target = absl::GetFlag(FLAGS_target);
  options.module_path = absl::GetFlag(FLAGS_module);
  options.replicas = absl::GetFlag(FLAGS_replicas);
  options.inputs_dir = absl::GetFlag(FLAGS_inputs_dir);
  options.outputs_dir = absl::GetFlag(FLAGS_outputs_dir);
  options.random_inputs = absl::GetFlag(FLAGS_random_inputs);
  options.dump_hlo = absl::GetFlag(FLAGS_dump_hlo);
  options.repeat = absl::GetFlag(FLAGS_repeat);
  options.client_options.execute_warn_interval =
      absl::GetFlag(FLAGS_execute_warn_interval);
  options.client_options.execute_max_time =
      absl::GetFlag(FLAGS_execute_max_time);
  options.client_options.connect_timeout = absl::GetFlag(FLAGS_connect_timeout);
  options.client_options.connection_timeout =
      absl::GetFlag(FLAGS_connection_timeout);

  absl::Status status = tpu::RunModule(options, std::cout);
  std::cout.flush();
  if (!status.ok()) {
    // One line, whatever the message holds.
    std::string line =
        absl::StrReplaceAll(status.ToString(), {{"\r", " "}, {"\n", "; "}});
    std::cerr << "tpu_run: error: " << line << std::endl;
    return 1;
  }
  return 0;
}
