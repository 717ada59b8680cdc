#ifndef SOFTWARE_TPU_CLIENT_COMPILE_OPTIONS_H_
#define SOFTWARE_TPU_CLIENT_COMPILE_OPTIONS_H_

// How TpuExecutable::Compile places a program on devices.
//
// Thread safety: a plain struct; copy it freely.

#include <optional>

#include "client/device_assignment.h"

namespace tpu::client {

struct CompileOptions {
  // Replicas of the program (the HLO's replica count). Each runs on its own
  // device. Must be >= 1.
  int num_replicas = 1;

  // Computations per replica (model parallelism). Only 1 is supported, as in
  // the reference client.
  int num_partitions = 1;

  // Where each replica runs. Unset: replica i on local device i (the client's
  // default assignment). When set, its replica_count must equal num_replicas
  // and its computation_count must be 1.
  std::optional<DeviceAssignment> device_assignment;

  // Execute packs the arguments into one tuple argument (for programs whose
  // entry computation takes a single tuple parameter).
  bool tuple_arguments = false;
};

}  // namespace tpu::client

#endif  // SOFTWARE_TPU_CLIENT_COMPILE_OPTIONS_H_
