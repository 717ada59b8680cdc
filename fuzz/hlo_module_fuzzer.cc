// Fuzz target: an HloModuleProto as a client's compile request carries it
// (serialized bytes), loaded and compiled by the interpreter. Compile must
// answer every module with a status; it never runs the program.

#include <cstdint>
#include <memory>

#include "emulator/interpreter/executable.h"
#include "google/protobuf/stubs/logging.h"
#include "hlo/memory_budget.h"
#include "proto/hlo.pb.h"

// Protobuf logs every string field that is not UTF-8; at thousands of inputs
// a second that is most of the run's time.
// A host memory budget, as the worker always has one: compile-time tables
// must be checked against it (ASan reports any allocation too large to
// make, where a production build would throw and turn it into a status).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  static tpu::MemoryBudget budget(int64_t{1} << 30,
                                  "the fuzz target's host memory budget");
  tpu::MemoryBudget::SetProcess(&budget);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xla::HloModuleProto module;
  if (!module.ParseFromArray(data, static_cast<int>(size))) return 0;
  tpu::emulator::interpreter::CompileOptions options;
  // Replica counts beyond 1 change what collectives accept; derive one from
  // the module so both paths are reached without a second input format.
  options.num_replicas = 1 + static_cast<int>(module.id() & 3);
  options.tpu_numerics = (module.id() & 4) != 0;
  auto executable =
      tpu::emulator::interpreter::Executable::Compile(module, options);
  (void)executable;
  return 0;
}
