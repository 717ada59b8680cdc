#ifndef SOFTWARE_TPU_TOOLS_TPU_CTL_COMMANDS_H_
#define SOFTWARE_TPU_TOOLS_TPU_CTL_COMMANDS_H_

// tpu_ctl's commands beyond `waits`, one file each: what the emulated TPU
// did. Each returns the process exit code: 0 on success, 1 when the worker
// cannot be reached, answers with an error, or a file cannot be written, 2
// for bad usage.

#include <string>
#include <vector>

#include "proto/control.grpc.pb.h"

namespace tpu::tools {

// trace start [--trace_instructions] | trace stop --out=FILE [--svg=FILE] |
// trace svg --in=FILE --svg=FILE (no worker needed).
int TraceCommand(tpu_emulator::Control::Stub& stub, const std::string& target,
                 const std::vector<char*>& args);
// stats [--format=text|json]
int StatsCommand(tpu_emulator::Control::Stub& stub, const std::string& target);
// top [--iterations=N]: stats refreshed every second.
int TopCommand(tpu_emulator::Control::Stub& stub, const std::string& target);
// profile [PROGRAM] [--top=N]
int ProfileCommand(tpu_emulator::Control::Stub& stub, const std::string& target,
                   const std::vector<char*>& args);

// Shared by the commands: a context with the --timeout deadline, the usage
// error (exit code 2) and the failed-call message (exit code 1).
void SetDeadline(grpc::ClientContext& context);
int UsageError(const std::string& message);
int CallFailed(const std::string& target, const std::string& call,
               const grpc::Status& status);

}  // namespace tpu::tools

#endif  // SOFTWARE_TPU_TOOLS_TPU_CTL_COMMANDS_H_
