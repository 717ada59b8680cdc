#include "proto/control_call.h"

#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/byte_buffer.h"
#include "proto/control.grpc.pb.h"
#include "proto/wait_report_text.h"

namespace tpu::wire {
namespace {

namespace pb = google::protobuf;

absl::StatusOr<std::string> ChannelAddress(absl::string_view target) {
  if (absl::StartsWith(target, "grpc://")) {
    target.remove_prefix(7);
  } else if (absl::StrContains(target, "://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the control service is reached at HOST:PORT or grpc://HOST:PORT, "
        "not '",
        target, "'"));
  }
  if (target.empty()) {
    return absl::InvalidArgumentError("the control target is empty");
  }
  return std::string(target);
}

absl::StatusOr<const pb::MethodDescriptor*> FindMethod(
    absl::string_view method) {
  // Reached through a message of the same file, which also makes sure the
  // generated descriptors are linked in.
  const pb::ServiceDescriptor* service =
      tpu_emulator::WaitReport::descriptor()->file()->FindServiceByName(
          "Control");
  const pb::MethodDescriptor* found =
      service->FindMethodByName(std::string(method));
  if (found != nullptr) return found;
  std::vector<std::string> names;
  for (int i = 0; i < service->method_count(); ++i) {
    names.push_back(service->method(i)->name());
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the control service has no method '", method,
                   "'; it has: ", absl::StrJoin(names, ", ")));
}

std::unique_ptr<pb::Message> NewMessage(const pb::Descriptor* type) {
  return std::unique_ptr<pb::Message>(
      pb::MessageFactory::generated_factory()->GetPrototype(type)->New());
}

absl::Status FromGrpc(const grpc::Status& status, absl::string_view address) {
  if (status.ok()) return absl::OkStatus();
  std::string message = status.error_message();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    message = absl::StrCat(address, " did not answer: ", message,
                           " (is tpu_emulator running there? check the "
                           "target)");
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      message);
}

}  // namespace

absl::StatusOr<std::string> CallControl(absl::string_view target,
                                        absl::string_view method,
                                        absl::string_view request_json,
                                        absl::Duration timeout) {
  absl::StatusOr<std::string> address = ChannelAddress(target);
  if (!address.ok()) return address.status();
  absl::StatusOr<const pb::MethodDescriptor*> found = FindMethod(method);
  if (!found.ok()) return found.status();
  std::unique_ptr<pb::Message> request = NewMessage((*found)->input_type());
  if (!request_json.empty()) {
    pb::util::Status parsed = pb::util::JsonStringToMessage(
        pb::StringPiece(request_json.data(), request_json.size()),
        request.get());
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the request for ", method, " is not a ",
                       (*found)->input_type()->full_name(),
                       " in JSON: ", parsed.message().as_string()));
    }
  }
  std::string request_bytes = request->SerializeAsString();
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;

  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(*address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(timeout));
  absl::Notification done;
  grpc::Status call_status;
  stub.UnaryCall(&context,
                 absl::StrCat("/", (*found)->service()->full_name(), "/",
                              (*found)->name()),
                 grpc::StubOptions(), &request_buffer, &response_buffer,
                 [&](grpc::Status status) {
                   call_status = std::move(status);
                   done.Notify();
                 });
  done.WaitForNotification();
  absl::Status status = FromGrpc(call_status, *address);
  if (!status.ok()) return status;

  std::vector<grpc::Slice> slices;
  if (!response_buffer.Dump(&slices).ok()) {
    return absl::InternalError("could not read the control response");
  }
  std::string response_bytes;
  for (const grpc::Slice& s : slices) {
    response_bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  std::unique_ptr<pb::Message> response = NewMessage((*found)->output_type());
  if (!response->ParseFromString(response_bytes)) {
    return absl::DataLossError(
        absl::StrCat("the worker's ", method, " response is not a ",
                     (*found)->output_type()->full_name()));
  }
  pb::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  pb::util::Status printed =
      pb::util::MessageToJsonString(*response, &json, options);
  if (!printed.ok()) {
    return absl::InternalError(printed.message().as_string());
  }
  return json;
}

absl::StatusOr<std::string> FormatWaitReportJson(
    absl::string_view report_json) {
  tpu_emulator::WaitReport report;
  pb::util::Status parsed = pb::util::JsonStringToMessage(
      pb::StringPiece(report_json.data(), report_json.size()), &report);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a wait report in JSON: ", parsed.message().as_string()));
  }
  return FormatWaitReport(report);
}

}  // namespace tpu::wire
