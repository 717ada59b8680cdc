#include "emulator/service/session_recorder.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/event_id.h"

namespace tpu::emulator {
namespace {

using Entry = tpu_driver::StreamRequest::Entry;

int64_t Local(int64_t wire) {
  return static_cast<int64_t>(EventId::FromInt(wire).operation_id);
}

// `entry` of `client` with every id it carries made local to the
// recording. A wait on another client's operation cannot be replayed by one
// client, so it is left out.
Entry LocalIds(const Entry& entry, uint32_t client) {
  Entry local = entry;
  local.set_operation_id(Local(entry.operation_id()));
  local.clear_wait_for_id();
  for (int64_t wait : entry.wait_for_id()) {
    if (EventId::FromInt(wait).client_id == client) {
      local.add_wait_for_id(Local(wait));
    }
  }
  switch (local.request_case()) {
    case Entry::kAllocTuple: {
      auto* tuple = local.mutable_alloc_tuple();
      for (int i = 0; i < tuple->children_size(); ++i) {
        tuple->set_children(i, Local(tuple->children(i)));
      }
      break;
    }
    case Entry::kDealloc:
      local.mutable_dealloc()->set_handle(Local(local.dealloc().handle()));
      break;
    case Entry::kTransferTo:
      local.mutable_transfer_to()->set_target_handle(
          Local(local.transfer_to().target_handle()));
      break;
    case Entry::kTransferFrom:
      local.mutable_transfer_from()->set_source_handle(
          Local(local.transfer_from().source_handle()));
      break;
    case Entry::kTransferFromTo:
      local.mutable_transfer_from_to()->set_source_handle(
          Local(local.transfer_from_to().source_handle()));
      local.mutable_transfer_from_to()->set_target_handle(
          Local(local.transfer_from_to().target_handle()));
      break;
    case Entry::kLoad:
      local.mutable_load()->set_compiled_program_handle(
          Local(local.load().compiled_program_handle()));
      break;
    case Entry::kUnload:
      local.mutable_unload()->set_loaded_program_handle(
          Local(local.unload().loaded_program_handle()));
      break;
    case Entry::kExecute: {
      auto* execute = local.mutable_execute();
      execute->set_loaded_program_handle(
          Local(execute->loaded_program_handle()));
      for (int i = 0; i < execute->input_handle_size(); ++i) {
        execute->set_input_handle(i, Local(execute->input_handle(i)));
      }
      for (int i = 0; i < execute->output_handle_size(); ++i) {
        execute->set_output_handle(i, Local(execute->output_handle(i)));
      }
      break;
    }
    default:
      break;
  }
  return local;
}

}  // namespace

absl::StatusOr<std::shared_ptr<RecordDirectory>> RecordDirectory::Open(
    const std::string& dir) {
  struct stat info;
  if (stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
      access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--record_dir=", dir,
        " is not a writable directory; create it first (mkdir -p ", dir, ")."));
  }
  return std::shared_ptr<RecordDirectory>(new RecordDirectory(dir));
}

bool SessionRecorder::ReadyFor(uint32_t client) {
  if (started_) return log_ != nullptr && client == client_;
  started_ = true;
  client_ = client;
  const std::string path =
      absl::StrCat(directory_->dir(), "/client", client, "_session",
                   directory_->NextSession(), ".log");
  absl::StatusOr<std::unique_ptr<RecordWriter>> log =
      RecordWriter::Create(path);
  if (!log.ok()) {
    Drop(log.status());
    return false;
  }
  absl::StatusOr<std::unique_ptr<RecordWriter>> results =
      RecordWriter::Create(absl::StrCat(path, kResultsSuffix));
  if (!results.ok()) {
    Drop(results.status());
    return false;
  }
  log_ = *std::move(log);
  results_ = *std::move(results);
  return true;
}

void SessionRecorder::Drop(const absl::Status& why) {
  fprintf(stderr, "tpu_emulator: not recording client %u's session: %s\n",
          client_, why.ToString().c_str());
  log_.reset();
  results_.reset();
}

void SessionRecorder::OnRequest(const tpu_driver::StreamRequest& request,
                                const TransferData& transfer_data) {
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < request.entry_size(); ++i) {
    const Entry& entry = request.entry(i);
    if (!ReadyFor(EventId::FromInt(entry.operation_id()).client_id)) continue;
    Entry local = LocalIds(entry, client_);
    const std::shared_ptr<AlignedBuffer>& payload = PayloadOf(transfer_data, i);
    if (payload != nullptr && local.has_transfer_to()) {
      local.mutable_transfer_to()->set_data(
          static_cast<const char*>(payload->data()), payload->size());
    }
    absl::Status written = log_->Append(local);
    if (!written.ok()) return Drop(written);
  }
}

void SessionRecorder::OnResponse(const tpu_driver::StreamResponse& response,
                                 const TransferData& transfer_data) {
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < response.entry_size(); ++i) {
    const tpu_driver::StreamResponse::Entry& entry = response.entry(i);
    const EventId id = EventId::FromInt(entry.operation_id());
    if (!started_ || log_ == nullptr || id.client_id != client_) continue;
    tpu_emulator::OperationResult result;
    result.set_operation_id(static_cast<int64_t>(id.operation_id));
    result.set_code(entry.status().code());
    result.set_message(entry.status().message());
    const std::shared_ptr<AlignedBuffer>& payload = PayloadOf(transfer_data, i);
    if (payload != nullptr) {
      result.set_transfer_from_data(static_cast<const char*>(payload->data()),
                                    payload->size());
    } else if (entry.has_transfer_from()) {
      result.set_transfer_from_data(entry.transfer_from().data());
    }
    absl::Status written = results_->Append(result);
    if (!written.ok()) return Drop(written);
  }
}

}  // namespace tpu::emulator
