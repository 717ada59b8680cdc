// tpu_ctl profile: per compiled program, where its time went, instruction by
// instruction (tpu_emulator --profile_programs collects it).

#include <stdio.h>

#include <string>

#include "absl/flags/flag.h"
#include "tools/tpu_ctl/commands.h"
#include "tools/tpu_ctl/stats_text.h"

ABSL_FLAG(int, top, 20, "With `profile`: instructions listed per program.");

namespace tpu::tools {

int ProfileCommand(tpu_emulator::Control::Stub& stub, const std::string& target,
                   const std::vector<char*>& args) {
  if (args.size() > 3) return UsageError("`profile` takes at most a PROGRAM");
  if (absl::GetFlag(FLAGS_top) < 1) return UsageError("--top must be >= 1");
  tpu_emulator::GetProfileRequest request;
  if (args.size() == 3) request.set_program(args[2]);
  grpc::ClientContext context;
  SetDeadline(context);
  tpu_emulator::GetProfileResponse response;
  grpc::Status status = stub.GetProfile(&context, request, &response);
  if (!status.ok()) return CallFailed(target, "GetProfile", status);
  if (response.programs_size() == 0 && !request.program().empty()) {
    fprintf(stderr,
            "tpu_ctl: no profile of program '%s'; is tpu_emulator running "
            "with --profile_programs, and has the program run?\n",
            request.program().c_str());
    return 1;
  }
  const std::string text = FormatProfile(response, absl::GetFlag(FLAGS_top));
  fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace tpu::tools
