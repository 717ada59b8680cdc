#ifndef SOFTWARE_TPU_CLIENT_TPU_CLIENT_H_
#define SOFTWARE_TPU_CLIENT_TPU_CLIENT_H_

// The entry point of the client stack: a connection to a TPU system (through
// a TpuDriver chosen by address) and its devices. Buffers (tpu_buffer.h) and
// executables (tpu_executable.h) hold a shared_ptr to their client, so the
// driver stays open while any of them lives.
//
// Behaviour follows TensorFlow's tpu_driver client (tpu_client.cc): one device
// per core, named TPU_<core id>; devices of this host are local; the default
// device assignment puts replica i on local device i.
//
// Thread safety: safe for concurrent use.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/client_options.h"
#include "client/device_assignment.h"
#include "client/thread_pool.h"
#include "client/tpu_device.h"
#include "driver/tpu_driver.h"
#include "proto/tpu_driver.pb.h"

namespace tpu::client {

class TpuClient : public std::enable_shared_from_this<TpuClient> {
 public:
  // Opens the driver for `address` ("grpc://host:port", "local://", ...; the
  // driver for the scheme must be linked in) and queries its topology.
  // Errors: the driver's (INVALID_ARGUMENT for an unknown scheme,
  // UNAVAILABLE when the worker refuses the connection for longer than
  // options.connect_timeout (zero: at once) or does not answer within
  // options.connection_timeout); INVALID_ARGUMENT for a negative timeout;
  // FAILED_PRECONDITION if the system has no core on this host.
  static absl::StatusOr<std::shared_ptr<TpuClient>> Get(
      absl::string_view address, const ClientOptions& options = {});

  // As Get, over an already open driver (tests, custom drivers).
  // REQUIRES: driver != nullptr.
  static absl::StatusOr<std::shared_ptr<TpuClient>> Create(
      std::unique_ptr<driver::TpuDriver> driver,
      const ClientOptions& options = {});

  // Use Get or Create; public only for make_shared.
  TpuClient(const ClientOptions& options,
            std::unique_ptr<driver::TpuDriver> driver,
            std::vector<std::shared_ptr<TpuDevice>> devices, int host_id);
  ~TpuClient();

  TpuClient(const TpuClient&) = delete;
  TpuClient& operator=(const TpuClient&) = delete;

  // Every device of the system, including other hosts' (pod slices), in the
  // order the system reports them.
  const std::vector<std::shared_ptr<TpuDevice>>& devices() const {
    return devices_;
  }
  // The devices of this host; replica i of the default assignment runs on
  // local_devices()[i].
  const std::vector<std::shared_ptr<TpuDevice>>& local_devices() const {
    return local_devices_;
  }
  int device_count() const { return static_cast<int>(devices_.size()); }
  int local_device_count() const {
    return static_cast<int>(local_devices_.size());
  }
  // The host this client runs on, as the worker reports it.
  int host_id() const { return host_id_; }

  // INVALID_ARGUMENT "<caller_name> got bad device_id: <id> (num_devices=<n>)."
  // unless `device_id` names a device of the system.
  absl::Status CheckDeviceId(int device_id,
                             absl::string_view caller_name) const;
  // The device with core id `device_id`, or CheckDeviceId's error.
  absl::StatusOr<std::shared_ptr<TpuDevice>> LookupDevice(
      int device_id, absl::string_view caller_name) const;

  // Replica r on local device r while there are enough local devices, else
  // replica r on device r (XLA's computation placer). Only one partition is
  // supported (INVALID_ARGUMENT otherwise).
  absl::StatusOr<DeviceAssignment> GetDefaultDeviceAssignment(
      int num_replicas, int num_partitions) const;

  const ClientOptions& options() const { return options_; }

  // Sends one warning line to options().warning_handler, or to stderr.
  void Warn(absl::string_view message) const;

  // Valid while the client lives.
  driver::TpuDriver* driver() const { return driver_.get(); }
  ThreadPool* thread_pool() const { return thread_pool_.get(); }

 private:
  // Constant after construction.
  const ClientOptions options_;
  const std::unique_ptr<driver::TpuDriver> driver_;
  const std::vector<std::shared_ptr<TpuDevice>> devices_;
  std::map<int, std::shared_ptr<TpuDevice>> id_to_device_;
  std::vector<std::shared_ptr<TpuDevice>> local_devices_;
  const int host_id_;

  // Last, so it is drained and joined before the driver closes.
  std::unique_ptr<ThreadPool> thread_pool_;
};

}  // namespace tpu::client

#endif  // SOFTWARE_TPU_CLIENT_TPU_CLIENT_H_
