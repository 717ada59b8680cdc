#ifndef SOFTWARE_TPU_TOOLS_TPU_CTL_FAULTS_COMMAND_H_
#define SOFTWARE_TPU_TOOLS_TPU_CTL_FAULTS_COMMAND_H_

// tpu_ctl's `faults` command: the worker's fault rules at run time.
//
//   tpu_ctl --target=HOST:PORT faults add 'RULE'   prints "added fault rule N"
//   tpu_ctl --target=HOST:PORT faults list         one rule per line
//   tpu_ctl --target=HOST:PORT faults clear        prints how many went
//
// Thread safety: reentrant.

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "proto/control.grpc.pb.h"

namespace tpu::tools {

// `args`: the words after `faults`. Returns the exit code: 0 on success,
// 1 when the worker cannot be reached or fails, 2 for bad usage or a rule
// the worker refused (with its column and what was expected).
int RunFaultsCommand(tpu_emulator::Control::Stub& stub,
                     const std::string& target,
                     const std::vector<std::string>& args,
                     absl::Duration timeout);

}  // namespace tpu::tools

#endif  // SOFTWARE_TPU_TOOLS_TPU_CTL_FAULTS_COMMAND_H_
