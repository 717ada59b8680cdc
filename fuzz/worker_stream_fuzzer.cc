// Fuzz target: StreamRequest entries through an in-process Worker with a real
// session, as StreamExecute hands them over after decoding. Every input runs
// on a fresh client: the seeds (fuzz/make_seeds.cc) write their ids for
// client 1, and those ids are moved to the client this input opened, so that
// handles and events line up while the fuzzer mutates everything else
// (including ids of other clients, which must be refused).
//
// Every submitted entry must be answered exactly once, and the stream must
// finish; a wedge shows up as libFuzzer's timeout.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>

#include "absl/synchronization/mutex.h"
#include "emulator/worker/transfer_data.h"
#include "emulator/worker/worker.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/reflection.h"
#include "google/protobuf/stubs/logging.h"
#include "proto/event_id.h"
#include "proto/tpu_service.pb.h"

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

constexpr uint32_t kSeedClient = 1;

tpu::emulator::Worker& SharedWorker() {
  static tpu::emulator::Worker* worker = [] {
    tpu::emulator::WorkerOptions options;
    options.chips = 2;
    options.cores_per_chip = 1;
    options.hbm_bytes_per_core = int64_t{64} << 20;
    // An id whose creator never comes is refused after 1 ms instead of the
    // default 5 s: most mutated inputs name such an id, and at 5 ms that
    // wait was most of the run's time (84 executions a second).
    options.unknown_handle_wait_ms = 1;
    options.compute_threads = 1;
    options.report_waits_after = absl::ZeroDuration();
    auto created = tpu::emulator::Worker::Create(options);
    if (!created.ok()) {
      std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
      std::abort();
    }
    return created->release();
  }();
  return *worker;
}

int64_t MoveToClient(int64_t wire, uint32_t client) {
  tpu::EventId id = tpu::EventId::FromInt(static_cast<uint64_t>(wire));
  if (id.client_id != kSeedClient) return wire;
  id.client_id = client;
  return static_cast<int64_t>(id.AsInt());
}

// Rewrites every int64 of tpu_driver's own messages (ids and handles; the
// HLO program inside a compile is XLA's and left alone).
void MoveIdsToClient(Message* message, uint32_t client) {
  const auto* reflection = message->GetReflection();
  const auto* descriptor = message->GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
      if (field->is_repeated()) {
        for (int j = 0; j < reflection->FieldSize(*message, field); ++j) {
          reflection->SetRepeatedInt64(
              message, field, j,
              MoveToClient(reflection->GetRepeatedInt64(*message, field, j),
                           client));
        }
      } else if (reflection->HasField(*message, field)) {
        reflection->SetInt64(
            message, field,
            MoveToClient(reflection->GetInt64(*message, field), client));
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
               field->message_type()->file()->package() == "tpu_driver") {
      if (field->is_repeated()) {
        for (int j = 0; j < reflection->FieldSize(*message, field); ++j) {
          MoveIdsToClient(reflection->MutableRepeatedMessage(message, field, j),
                          client);
        }
      } else if (reflection->HasField(*message, field)) {
        MoveIdsToClient(reflection->MutableMessage(message, field), client);
      }
    }
  }
}

}  // namespace

// Protobuf logs every string field that is not UTF-8; at thousands of inputs
// a second that is most of the run's time.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tpu_driver::StreamRequest request;
  if (!request.ParsePartialFromArray(data, static_cast<int>(size))) return 0;
  tpu::emulator::Worker& worker = SharedWorker();
  auto opened = worker.Open(tpu_driver::OpenRequest());
  if (!opened.ok()) std::abort();
  const uint32_t client = opened->client_id();
  MoveIdsToClient(&request, client);

  absl::Mutex mu;
  std::multiset<int64_t> answered;
  {
    std::unique_ptr<tpu::emulator::WorkerStream> stream =
        worker.OpenStream([&](const tpu_driver::StreamResponse& response,
                              const tpu::emulator::TransferData&) {
          absl::MutexLock lock(&mu);
          for (const auto& entry : response.entry()) {
            answered.insert(entry.operation_id());
          }
        });
    stream->Submit(request);
    stream->Finish();
  }
  // Each entry gets one answer; duplicated operation ids get one each.
  std::multiset<int64_t> submitted;
  for (const auto& entry : request.entry()) {
    submitted.insert(entry.operation_id());
  }
  {
    absl::MutexLock lock(&mu);
    if (answered != submitted) {
      std::fprintf(stderr, "%zu entries submitted, %zu answers\n",
                   submitted.size(), answered.size());
      std::abort();
    }
  }
  tpu_driver::CloseRequest close;
  close.set_client_id(client);
  (void)worker.Close(close);
  return 0;
}
