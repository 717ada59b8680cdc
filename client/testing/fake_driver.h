#ifndef SOFTWARE_TPU_CLIENT_TESTING_FAKE_DRIVER_H_
#define SOFTWARE_TPU_CLIENT_TESTING_FAKE_DRIVER_H_

// An in-memory TpuDriver for the client's unit tests: buffers are host
// vectors, every operation runs on the calling thread as soon as what it
// waits for has completed, and "execution" is a function the test supplies.
// Executions can be held (their events stay pending) to test deadlines; the
// destructor fails whatever is still held, as a real driver does when it
// closes.
//
// Thread safety: safe for concurrent use.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "driver/tpu_driver.h"
#include "hlo/literal.h"

namespace tpu::client {

class FakeDriver : public driver::TpuDriver {
 public:
  // Computes the result leaves from the argument leaves (flattened, in
  // order). `outputs` arrive sized for the result's leaves.
  using Executor = std::function<absl::Status(
      const std::vector<Literal>& arguments, std::vector<Literal>* outputs)>;

  // A module whose entry computation has this signature: all the fake's
  // "compiler" looks at.
  static xla::HloModuleProto ModuleWithSignature(
      const std::vector<Shape>& parameters, const Shape& result);

  // `chips` chips of `cores_per_chip` cores on host 0; core ids 0..n-1.
  FakeDriver(int chips, int cores_per_chip);
  ~FakeDriver() override;

  void set_executor(Executor executor);
  // While held, executions stay pending until ReleaseExecutions.
  void HoldExecutions();
  void ReleaseExecutions();

  // Inspection.
  int live_allocations() const;
  int transfers_from_device() const;
  int device_to_device_copies() const;
  int loaded_programs() const;
  xla::DeviceAssignmentProto last_device_assignment() const;
  int32_t last_num_replicas() const;
  // Cores of the executions so far, in launch order.
  std::vector<int> executed_cores() const;

  // TpuDriver.
  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override;
  absl::Status Reset() override;
  std::unique_ptr<driver::BufferHandle> Allocate(
      int32_t core_id, tpu_driver::MemoryRegion region, int64_t num_bytes,
      absl::Span<driver::Event* const> wait_for) override;
  std::unique_ptr<driver::BufferHandle> Allocate(
      int32_t core_id, tpu_driver::MemoryRegion region,
      const xla::ShapeProto& shape,
      absl::Span<driver::Event* const> wait_for) override;
  std::unique_ptr<driver::BufferHandle> AllocateTuple(
      int32_t core_id, tpu_driver::MemoryRegion region,
      absl::Span<driver::BufferHandle* const> children,
      absl::Span<driver::Event* const> wait_for) override;
  std::shared_ptr<driver::Event> Deallocate(
      std::unique_ptr<driver::BufferHandle> handle,
      absl::Span<driver::Event* const> wait_for) override;
  std::shared_ptr<driver::Event> TransferToDevice(
      const void* src, driver::BufferHandle* dst,
      absl::Span<driver::Event* const> wait_for) override;
  std::shared_ptr<driver::Event> TransferFromDevice(
      const driver::BufferHandle* src, void* dst,
      absl::Span<driver::Event* const> wait_for) override;
  std::shared_ptr<driver::Event> TransferFromDeviceToDevice(
      const driver::BufferHandle* src, driver::BufferHandle* dst,
      absl::Span<driver::Event* const> wait_for) override;
  std::unique_ptr<driver::CompiledProgramHandle> CompileProgram(
      const xla::HloProto& source, int32_t num_replicas,
      absl::Span<driver::Event* const> wait_for) override;
  std::unique_ptr<driver::LoadedProgramHandle> LoadProgram(
      int32_t core_id, const driver::CompiledProgramHandle* handle,
      absl::Span<driver::Event* const> wait_for) override;
  std::shared_ptr<driver::Event> UnloadProgram(
      std::unique_ptr<driver::LoadedProgramHandle> handle,
      absl::Span<driver::Event* const> wait_for) override;
  std::shared_ptr<driver::Event> ExecuteProgram(
      driver::LoadedProgramHandle* program,
      absl::Span<driver::BufferHandle* const> inputs,
      absl::Span<driver::BufferHandle* const> outputs,
      const xla::DeviceAssignmentProto& device_assignment,
      absl::Span<driver::Event* const> wait_for) override;

  class FakeEvent;
  class FakeBuffer;

 private:
  // Runs `op` once every event of `wait_for` completed; the returned event
  // completes with op's status (or the first failed dependency's).
  std::shared_ptr<driver::Event> After(
      absl::Span<driver::Event* const> wait_for,
      std::function<absl::Status()> op);

  const int chips_;
  const int cores_per_chip_;

  mutable absl::Mutex mu_;
  Executor executor_ ABSL_GUARDED_BY(mu_);
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::function<void()>> held_ ABSL_GUARDED_BY(mu_);
  int live_allocations_ ABSL_GUARDED_BY(mu_) = 0;
  int transfers_from_device_ ABSL_GUARDED_BY(mu_) = 0;
  int device_to_device_copies_ ABSL_GUARDED_BY(mu_) = 0;
  int loaded_programs_ ABSL_GUARDED_BY(mu_) = 0;
  xla::DeviceAssignmentProto last_device_assignment_ ABSL_GUARDED_BY(mu_);
  int32_t last_num_replicas_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> executed_cores_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tpu::client

#endif  // SOFTWARE_TPU_CLIENT_TESTING_FAKE_DRIVER_H_
