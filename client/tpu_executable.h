#ifndef SOFTWARE_TPU_CLIENT_TPU_EXECUTABLE_H_
#define SOFTWARE_TPU_CLIENT_TPU_EXECUTABLE_H_

// A program compiled for a TPU system and loaded on the device of every
// replica this host runs. Execute blocks until the program finished (or the
// client's execute deadline passed) and returns the result buffers.
//
// Deadlines (ClientOptions): while waiting, a warning is emitted every
// execute_warn_interval; after execute_max_time the call fails with
// DEADLINE_EXCEEDED "TPU program took more than N seconds to complete." The
// program itself keeps running on the device until the client closes.
//
// Thread safety: safe for concurrent use; concurrent Executes of one program
// queue on each device in the order the driver receives them.

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "client/compile_options.h"
#include "client/device_assignment.h"
#include "client/tpu_buffer.h"
#include "client/tpu_client.h"
#include "client/tpu_device.h"
#include "driver/tpu_driver.h"
#include "hlo/shape.h"
#include "proto/hlo.pb.h"
#include "proto/xla_data.pb.h"

namespace tpu::client {

class TpuExecutable {
 public:
  // Compiles `module` (sent to the driver wrapped in an HloProto) with
  // options.num_replicas replicas and loads it on every local replica's
  // device. Errors:
  //   INVALID_ARGUMENT "Mismatched number of replicas for device assignment
  //     and computation (A vs R)." when the given assignment disagrees;
  //   UNIMPLEMENTED "Only 1 computation per replica supported, C requested.";
  //   INVALID_ARGUMENT for num_replicas < 1 or an assignment naming an
  //     unknown device; FAILED_PRECONDITION if no replica is on this host;
  //   the compiler's error (as the driver reports it) for a bad module.
  static absl::StatusOr<std::unique_ptr<TpuExecutable>> Compile(
      const xla::HloModuleProto& module, const CompileOptions& options,
      std::shared_ptr<TpuClient> client);

  // A replica this host runs.
  struct LocalReplica {
    int replica = 0;
    std::shared_ptr<TpuDevice> device;
    std::unique_ptr<driver::LoadedProgramHandle> program;
  };

  // Use Compile.
  TpuExecutable(std::shared_ptr<TpuClient> client, DeviceAssignment assignment,
                std::vector<Shape> parameter_shapes, Shape result_shape,
                bool tuple_arguments, std::vector<LocalReplica> replicas);
  // Unloads the programs (after executions still in flight).
  ~TpuExecutable();

  TpuExecutable(const TpuExecutable&) = delete;
  TpuExecutable& operator=(const TpuExecutable&) = delete;

  const std::shared_ptr<TpuClient>& client() const { return client_; }
  int num_replicas() const { return device_assignment_.replica_count(); }
  int num_partitions() const { return device_assignment_.computation_count(); }
  const DeviceAssignment& device_assignment() const {
    return device_assignment_;
  }
  // The devices of the replicas this host runs, in replica order; argument
  // list i of ExecutePerReplica goes to local_devices()[i].
  const std::vector<std::shared_ptr<TpuDevice>>& local_devices() const {
    return local_devices_;
  }
  // The entry computation's parameters and result, as compiled.
  const std::vector<Shape>& parameter_shapes() const {
    return parameter_shapes_;
  }
  const Shape& result_shape() const { return result_shape_; }

  // Runs the single replica with `arguments` (one buffer per entry
  // parameter, on the replica's device) and waits for it. Returns one buffer
  // per result tuple element, or the one result array.
  // INVALID_ARGUMENT for a program with more than one replica, or arguments
  // that are deleted, misplaced, miscounted or of the wrong shape.
  absl::StatusOr<std::vector<std::unique_ptr<TpuBuffer>>> Execute(
      absl::Span<TpuBuffer* const> arguments);

  // Runs every local replica at once, replica i with arguments[i], and waits
  // for all. Returns results per replica. If any replica fails, returns the
  // failure of the first failing replica (in replica order).
  // INVALID_ARGUMENT unless arguments.size() == local_devices().size(); all
  // argument lists are checked before anything is launched.
  absl::StatusOr<std::vector<std::vector<std::unique_ptr<TpuBuffer>>>>
  ExecutePerReplica(absl::Span<const std::vector<TpuBuffer*>> arguments);

  // Unloads the programs now; later executions fail with FAILED_PRECONDITION.
  void Delete();

 private:
  struct Launched {
    std::unique_ptr<TpuBuffer> result;
    std::shared_ptr<driver::Event> done;
    // A tuple built from the arguments (tuple_arguments), kept until done.
    std::unique_ptr<TpuBuffer> tupled_arguments;
  };

  // Host-side checks of one replica's arguments.
  absl::Status CheckArguments(int local_index,
                              absl::Span<TpuBuffer* const> arguments) const;
  // Schedules one replica. REQUIRES: CheckArguments passed.
  absl::StatusOr<Launched> Launch(int local_index,
                                  absl::Span<TpuBuffer* const> arguments);
  // Waits for `launched` under the client's deadlines.
  absl::Status Await(const std::vector<Launched>& launched) const;
  static absl::StatusOr<std::vector<std::unique_ptr<TpuBuffer>>> Unpack(
      std::unique_ptr<TpuBuffer> result);

  // Constant after construction.
  const std::shared_ptr<TpuClient> client_;
  const DeviceAssignment device_assignment_;
  const xla::DeviceAssignmentProto device_assignment_proto_;
  const std::vector<Shape> parameter_shapes_;
  const Shape result_shape_;
  const bool tuple_arguments_;
  std::vector<std::shared_ptr<TpuDevice>> local_devices_;
  std::vector<int> local_replica_ids_;

  mutable absl::Mutex mu_;
  // Indexed like local_devices_; null once deleted.
  std::vector<std::unique_ptr<driver::LoadedProgramHandle>> programs_
      ABSL_GUARDED_BY(mu_);
  // The latest execution on each local replica, so unloading waits for it.
  std::vector<std::shared_ptr<driver::Event>> last_execution_
      ABSL_GUARDED_BY(mu_);
  bool deleted_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tpu::client

#endif  // SOFTWARE_TPU_CLIENT_TPU_EXECUTABLE_H_
