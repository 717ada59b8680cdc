#include "tests/e2e/driver_launches.h"

#include "gtest/gtest.h"
#include "hlo/shape.h"
#include "hlo/text/hlo_parser.h"
#include "proto/hlo.pb.h"

namespace tpu::e2e {

std::shared_ptr<driver::Event> DriverLaunches::Launch(const std::string& hlo,
                                                      int core, int replicas) {
  std::vector<int> devices;
  for (int r = 0; r < replicas; ++r) devices.push_back(r);
  return Launch(hlo, core, devices);
}

std::shared_ptr<driver::Event> DriverLaunches::Launch(
    const std::string& hlo, int core, const std::vector<int>& devices) {
  const int replicas = static_cast<int>(devices.size());
  auto module = hlo::ParseHloModule(hlo);
  EXPECT_TRUE(module.ok()) << module.status();
  xla::HloProto proto;
  if (module.ok()) *proto.mutable_hlo_module() = *module;
  compiled_.push_back(driver_->CompileProgram(proto, replicas, {}));
  loaded_.push_back(driver_->LoadProgram(core, compiled_.back().get(), {}));
  const xla::ShapeProto shape = Shape::Array(xla::S32, {1}).ToProto();
  buffers_.push_back(
      driver_->Allocate(core, tpu_driver::MemoryRegion::HBM, shape, {}));
  driver::BufferHandle* input = buffers_.back().get();
  static const int32_t kOne = 1;
  events_.push_back(driver_->TransferToDevice(&kOne, input, {}));
  buffers_.push_back(
      driver_->Allocate(core, tpu_driver::MemoryRegion::HBM, shape, {}));
  xla::DeviceAssignmentProto assignment;
  if (replicas > 1) {
    assignment.set_replica_count(replicas);
    assignment.set_computation_count(1);
    auto* ids = assignment.add_computation_devices();
    for (int device : devices) ids->add_replica_device_ids(device);
  }
  driver::Event* written = events_.back().get();
  return driver_->ExecuteProgram(loaded_.back().get(), {input},
                                 {buffers_.back().get()}, assignment,
                                 {written});
}

void DriverLaunches::Release() {
  events_.clear();
  loaded_.clear();
  compiled_.clear();
  buffers_.clear();
}

}  // namespace tpu::e2e
