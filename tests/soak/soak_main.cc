// The soak test as a binary, for the full run:
//   bazel run -c opt //tests/soak:soak -- --clients=16 --ops=10000
// Prints the report and exits 0 if the worker passed.

#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "tests/soak/soak.h"
#include "tools/lib/subprocess.h"

ABSL_FLAG(int, clients, 16, "Concurrent clients.");
ABSL_FLAG(int, ops, 10000, "Operations per client.");
ABSL_FLAG(uint64_t, seed, 1, "Seed of every random choice.");
ABSL_FLAG(double, disconnects_per_client, 2,
          "Expected connection drops per client, at random operations.");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  tpu::tests::SoakOptions options;
  options.emulator_path =
      tpu::tools::RunfilePath("tools/tpu_emulator/tpu_emulator", argv[0]);
  options.scratch_dir = tpu::tools::ScratchDir();
  options.clients = absl::GetFlag(FLAGS_clients);
  options.ops_per_client = absl::GetFlag(FLAGS_ops);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.disconnects_per_client = absl::GetFlag(FLAGS_disconnects_per_client);
  auto report = tpu::tests::RunSoak(options);
  if (!report.ok()) {
    std::fprintf(stderr, "soak: %s\n", report.status().ToString().c_str());
    return 2;
  }
  std::printf("soak %s: %s\n", report->Passed() ? "PASSED" : "FAILED",
              report->ToString().c_str());
  return report->Passed() ? 0 : 1;
}
