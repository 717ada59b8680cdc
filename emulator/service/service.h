#ifndef SOFTWARE_TPU_EMULATOR_SERVICE_H_
#define SOFTWARE_TPU_EMULATOR_SERVICE_H_

// The gRPC service tpu_driver.CloudTpuDriver over a Worker: a thin adapter
// on gRPC's callback API (no thread per call).
//
// StreamExecute reads StreamRequests as raw bytes and parses them leniently
// (proto2 `required` fields may be missing), so one malformed message costs
// an error response, never the stream. Responses are serialized as soon as
// the worker produces them; those waiting while a write is in flight are
// concatenated into one message (concatenated StreamResponses parse as one
// with all the entries). When the client half-closes, the call ends after
// every operation it sent was answered; when the call breaks, the worker
// releases the clients whose operations the stream carried.
//
// Thread safety: safe for concurrent use by gRPC.

#include <memory>

#include "emulator/service/session_recorder.h"
#include "emulator/worker/worker.h"
#include "proto/tpu_service.grpc.pb.h"

namespace tpu::emulator {

using CloudTpuDriverServiceBase =
    tpu_driver::CloudTpuDriver::WithCallbackMethod_Open<
        tpu_driver::CloudTpuDriver::WithCallbackMethod_Close<
            tpu_driver::CloudTpuDriver::WithCallbackMethod_Reset<
                tpu_driver::CloudTpuDriver::WithCallbackMethod_QuerySystemInfo<
                    tpu_driver::CloudTpuDriver::
                        WithRawCallbackMethod_StreamExecute<
                            tpu_driver::CloudTpuDriver::Service>>>>>;

class CloudTpuDriverService : public CloudTpuDriverServiceBase {
 public:
  // `worker` is not owned and must outlive the gRPC server using this.
  // With `record_dir`, every stream's session is recorded there
  // (session_recorder.h).
  explicit CloudTpuDriverService(
      Worker* worker, std::shared_ptr<RecordDirectory> record_dir = nullptr)
      : worker_(worker), record_dir_(std::move(record_dir)) {}

  grpc::ServerUnaryReactor* Open(grpc::CallbackServerContext* context,
                                 const tpu_driver::OpenRequest* request,
                                 tpu_driver::OpenResponse* response) override;
  grpc::ServerUnaryReactor* Close(grpc::CallbackServerContext* context,
                                  const tpu_driver::CloseRequest* request,
                                  tpu_driver::CloseResponse* response) override;
  grpc::ServerUnaryReactor* Reset(grpc::CallbackServerContext* context,
                                  const tpu_driver::ResetRequest* request,
                                  tpu_driver::ResetResponse* response) override;
  grpc::ServerUnaryReactor* QuerySystemInfo(
      grpc::CallbackServerContext* context,
      const tpu_driver::QuerySystemInfoRequest* request,
      tpu_driver::QuerySystemInfoResponse* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StreamExecute(
      grpc::CallbackServerContext* context) override;

 private:
  Worker* const worker_;
  const std::shared_ptr<RecordDirectory> record_dir_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_SERVICE_H_
