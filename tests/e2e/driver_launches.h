#ifndef SOFTWARE_TPU_TESTS_E2E_DRIVER_LAUNCHES_H_
#define SOFTWARE_TPU_TESTS_E2E_DRIVER_LAUNCHES_H_

// Programs launched one core at a time through the driver API, below
// TpuClient's all-replicas Execute: how the end-to-end tests leave one
// replica of a replicated program waiting for the others, or make two
// programs meet their peers in opposite orders. Each program reads an s32[1]
// input holding 1 and writes an s32[1] output.
//
// Thread safety: thread-compatible.

#include <memory>
#include <string>
#include <vector>

#include "driver/tpu_driver.h"

namespace tpu::e2e {

class DriverLaunches {
 public:
  // `driver` is not owned and must outlive Release().
  explicit DriverLaunches(driver::TpuDriver* driver) : driver_(driver) {}
  ~DriverLaunches() { Release(); }

  // Compiles `hlo` for `replicas` replicas (on cores 0 .. replicas-1; no
  // device assignment for one), loads it on `core` and executes it there
  // once its input is written. Returns the execute's event.
  std::shared_ptr<driver::Event> Launch(const std::string& hlo, int core,
                                        int replicas);
  // The same with the replicas on `devices` (replica r on devices[r]).
  std::shared_ptr<driver::Event> Launch(const std::string& hlo, int core,
                                        const std::vector<int>& devices);

  // The output buffer of the latest Launch.
  driver::BufferHandle* last_output() const { return buffers_.back().get(); }

  // Drops every handle, events first (before the client closes).
  void Release();

 private:
  driver::TpuDriver* const driver_;
  std::vector<std::unique_ptr<driver::CompiledProgramHandle>> compiled_;
  std::vector<std::unique_ptr<driver::LoadedProgramHandle>> loaded_;
  std::vector<std::unique_ptr<driver::BufferHandle>> buffers_;
  std::vector<std::shared_ptr<driver::Event>> events_;
};

}  // namespace tpu::e2e

#endif  // SOFTWARE_TPU_TESTS_E2E_DRIVER_LAUNCHES_H_
