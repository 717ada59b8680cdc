#include "tools/tpu_ctl/faults_command.h"

#include <stdio.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpcpp/grpcpp.h"

namespace tpu::tools {
namespace {

constexpr char kUsage[] =
    "Usage: tpu_ctl --target=HOST:PORT faults add 'RULE' | list | clear";

int Usage(const std::string& message) {
  fprintf(stderr, "tpu_ctl: %s\n%s\n", message.c_str(), kUsage);
  return 2;
}

void SetDeadline(grpc::ClientContext* context, absl::Duration timeout) {
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(timeout));
}

int Unreachable(const std::string& target, const std::string& rpc,
                const grpc::Status& status) {
  fprintf(stderr,
          "tpu_ctl: %s did not answer %s: %s (is tpu_emulator running "
          "there? check --target)\n",
          target.c_str(), rpc.c_str(), status.error_message().c_str());
  return 1;
}

int Add(tpu_emulator::Control::Stub& stub, const std::string& target,
        const std::string& rule, absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  tpu_emulator::AddFaultRequest request;
  request.set_rule(rule);
  tpu_emulator::AddFaultResponse response;
  grpc::Status status = stub.AddFault(&context, request, &response);
  if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    fprintf(stderr, "tpu_ctl: the worker refused the fault rule '%s': %s\n",
            rule.c_str(), status.error_message().c_str());
    return 2;
  }
  if (!status.ok()) return Unreachable(target, "AddFault", status);
  printf("added fault rule %d: %s\n", response.number(), rule.c_str());
  return 0;
}

int List(tpu_emulator::Control::Stub& stub, const std::string& target,
         absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  tpu_emulator::ListFaultsResponse response;
  grpc::Status status =
      stub.ListFaults(&context, tpu_emulator::ListFaultsRequest(), &response);
  if (!status.ok()) return Unreachable(target, "ListFaults", status);
  if (response.rules_size() == 0) {
    printf("no fault rules\n");
    return 0;
  }
  for (const tpu_emulator::FaultRule& rule : response.rules()) {
    printf("rule %d: %s (matched %lld)\n", rule.number(), rule.text().c_str(),
           static_cast<long long>(rule.matched()));
  }
  return 0;
}

int Clear(tpu_emulator::Control::Stub& stub, const std::string& target,
          absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  tpu_emulator::ClearFaultsResponse response;
  grpc::Status status =
      stub.ClearFaults(&context, tpu_emulator::ClearFaultsRequest(), &response);
  if (!status.ok()) return Unreachable(target, "ClearFaults", status);
  printf("cleared %d fault rule(s)\n", response.cleared());
  return 0;
}

}  // namespace

int RunFaultsCommand(tpu_emulator::Control::Stub& stub,
                     const std::string& target,
                     const std::vector<std::string>& args,
                     absl::Duration timeout) {
  if (args.empty()) return Usage("faults needs add 'RULE', list or clear");
  const std::string& verb = args[0];
  if (verb == "add") {
    // The rule may arrive quoted as one word or as several words.
    if (args.size() < 2) return Usage("faults add needs a rule");
    const std::string rule = absl::StrJoin(args.begin() + 1, args.end(), " ");
    return Add(stub, target, rule, timeout);
  }
  if (args.size() != 1) {
    return Usage(absl::StrCat("faults ", verb, " takes no arguments"));
  }
  if (verb == "list") return List(stub, target, timeout);
  if (verb == "clear") return Clear(stub, target, timeout);
  return Usage(absl::StrCat("unknown faults command '", verb,
                            "' (expected add, list or clear)"));
}

}  // namespace tpu::tools
