#include "client/testing/fake_driver.h"

#include <atomic>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "hlo/shape.h"

namespace tpu::client {

class FakeDriver::FakeEvent : public driver::Event {
 public:
  void Complete(absl::Status status) {
    std::vector<std::function<void(absl::Status)>> callbacks;
    {
      absl::MutexLock lock(&mu_);
      if (status_.has_value()) return;
      status_ = status;
      callbacks.swap(callbacks_);
    }
    for (auto& cb : callbacks) cb(status);
  }
  absl::Status Await() override {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &FakeEvent::Done));
    return *status_;
  }
  std::optional<absl::Status> AwaitWithTimeout(
      absl::Duration timeout) override {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(this, &FakeEvent::Done), timeout);
    return status_;
  }
  void AddCallback(std::function<void(absl::Status)> callback) override {
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      if (!status_.has_value()) {
        callbacks_.push_back(std::move(callback));
        return;
      }
      status = *status_;
    }
    callback(status);
  }

 private:
  bool Done() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return status_.has_value();
  }
  absl::Mutex mu_;
  std::optional<absl::Status> status_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<void(absl::Status)>> callbacks_
      ABSL_GUARDED_BY(mu_);
};

namespace {

std::shared_ptr<FakeDriver::FakeEvent> Done(absl::Status status) {
  auto event = std::make_shared<FakeDriver::FakeEvent>();
  event->Complete(std::move(status));
  return event;
}

struct FakeCompiled : public driver::CompiledProgramHandle {
  std::shared_ptr<driver::Event> ready;
  absl::StatusOr<xla::ProgramShapeProto> shape;
  std::shared_ptr<driver::Event> OnReady() override { return ready; }
  absl::StatusOr<xla::ProgramShapeProto> program_shape() override {
    return shape;
  }
};

struct FakeLoaded : public driver::LoadedProgramHandle {
  std::shared_ptr<driver::Event> ready;
  int core = 0;
  absl::StatusOr<xla::ProgramShapeProto> shape;
  std::shared_ptr<driver::Event> OnReady() override { return ready; }
};

}  // namespace

class FakeDriver::FakeBuffer : public driver::BufferHandle {
 public:
  std::shared_ptr<driver::Event> ready = Done(absl::OkStatus());
  int core = 0;
  Shape value_shape;
  std::vector<char> bytes;            // arrays
  std::vector<FakeBuffer*> children;  // tuples

  std::shared_ptr<driver::Event> OnReady() override { return ready; }
  int64_t size_in_bytes() override { return value_shape.ByteSize(); }
  std::optional<xla::ShapeProto> shape() override {
    return value_shape.ToProto();
  }

  // The array leaves, in order.
  void Leaves(std::vector<FakeBuffer*>* out) {
    if (!value_shape.IsTuple()) {
      out->push_back(this);
      return;
    }
    for (FakeBuffer* c : children) c->Leaves(out);
  }
};

xla::HloModuleProto FakeDriver::ModuleWithSignature(
    const std::vector<Shape>& parameters, const Shape& result) {
  xla::HloModuleProto module;
  module.set_name("fake");
  module.set_entry_computation_id(7);
  xla::HloComputationProto* entry = module.add_computations();
  entry->set_id(7);
  entry->set_name("main");
  for (const Shape& p : parameters) {
    *entry->mutable_program_shape()->add_parameters() = p.ToProto();
  }
  *entry->mutable_program_shape()->mutable_result() = result.ToProto();
  return module;
}

FakeDriver::FakeDriver(int chips, int cores_per_chip)
    : chips_(chips), cores_per_chip_(cores_per_chip) {}

FakeDriver::~FakeDriver() {
  std::vector<std::function<void()>> held;
  {
    absl::MutexLock lock(&mu_);
    held.swap(held_);
    hold_ = false;
  }
  // Held executions are cancelled, not run: the driver is closing.
  (void)held;
}

void FakeDriver::set_executor(Executor executor) {
  absl::MutexLock lock(&mu_);
  executor_ = std::move(executor);
}

void FakeDriver::HoldExecutions() {
  absl::MutexLock lock(&mu_);
  hold_ = true;
}

void FakeDriver::ReleaseExecutions() {
  std::vector<std::function<void()>> held;
  {
    absl::MutexLock lock(&mu_);
    hold_ = false;
    held.swap(held_);
  }
  for (auto& run : held) run();
}

int FakeDriver::live_allocations() const {
  absl::MutexLock lock(&mu_);
  return live_allocations_;
}
int FakeDriver::transfers_from_device() const {
  absl::MutexLock lock(&mu_);
  return transfers_from_device_;
}
int FakeDriver::device_to_device_copies() const {
  absl::MutexLock lock(&mu_);
  return device_to_device_copies_;
}
int FakeDriver::loaded_programs() const {
  absl::MutexLock lock(&mu_);
  return loaded_programs_;
}
xla::DeviceAssignmentProto FakeDriver::last_device_assignment() const {
  absl::MutexLock lock(&mu_);
  return last_device_assignment_;
}
int32_t FakeDriver::last_num_replicas() const {
  absl::MutexLock lock(&mu_);
  return last_num_replicas_;
}
std::vector<int> FakeDriver::executed_cores() const {
  absl::MutexLock lock(&mu_);
  return executed_cores_;
}

std::shared_ptr<driver::Event> FakeDriver::After(
    absl::Span<driver::Event* const> wait_for,
    std::function<absl::Status()> op) {
  struct State {
    std::atomic<int> remaining;
    absl::Mutex mu;
    absl::Status failed;
  };
  auto event = std::make_shared<FakeEvent>();
  auto state = std::make_shared<State>();
  state->remaining = static_cast<int>(wait_for.size()) + 1;
  auto arrive = [state, event, op](absl::Status status) {
    if (!status.ok()) {
      absl::MutexLock lock(&state->mu);
      if (state->failed.ok()) state->failed = status;
    }
    if (--state->remaining != 0) return;
    absl::Status failed;
    {
      absl::MutexLock lock(&state->mu);
      failed = state->failed;
    }
    if (!failed.ok()) {
      event->Complete(absl::FailedPreconditionError(
          absl::StrCat("a dependency failed: ", failed.message())));
      return;
    }
    event->Complete(op());
  };
  for (driver::Event* e : wait_for) e->AddCallback(arrive);
  arrive(absl::OkStatus());
  return event;
}

absl::StatusOr<tpu_driver::SystemInfo> FakeDriver::QuerySystemInfo() {
  tpu_driver::SystemInfo info;
  int id = 0;
  for (int c = 0; c < chips_; ++c) {
    tpu_driver::TpuChipInfo* chip = info.add_tpu_chip();
    chip->set_host_id(0);
    chip->mutable_chip_coord()->set_x(c);
    chip->mutable_chip_coord()->set_y(0);
    chip->mutable_chip_coord()->set_z(0);
    for (int k = 0; k < cores_per_chip_; ++k) {
      tpu_driver::TpuCoreInfo* core = chip->add_core();
      core->set_id(id++);
      core->set_core_on_chip_index(k);
    }
  }
  info.mutable_cpu()->set_num_cpu_cores(1);
  info.mutable_cpu()->set_cpu_load_average_1min(0);
  info.mutable_cpu()->set_ram_bytes_total(1);
  info.mutable_cpu()->set_ram_bytes_available(1);
  info.set_host_id(0);
  info.set_host_count(1);
  info.set_chip_count(chips_);
  info.set_core_count(chips_ * cores_per_chip_);
  return info;
}

absl::Status FakeDriver::Reset() { return absl::OkStatus(); }

std::unique_ptr<driver::BufferHandle> FakeDriver::Allocate(
    int32_t core_id, tpu_driver::MemoryRegion region, int64_t num_bytes,
    absl::Span<driver::Event* const> wait_for) {
  return Allocate(core_id, region, Shape::Array(xla::U8, {num_bytes}).ToProto(),
                  wait_for);
}

std::unique_ptr<driver::BufferHandle> FakeDriver::Allocate(
    int32_t core_id, tpu_driver::MemoryRegion, const xla::ShapeProto& shape,
    absl::Span<driver::Event* const>) {
  auto buffer = std::make_unique<FakeBuffer>();
  buffer->core = core_id;
  absl::StatusOr<Shape> parsed = Shape::FromProto(shape);
  if (!parsed.ok()) {
    buffer->ready = Done(parsed.status());
    return buffer;
  }
  buffer->value_shape = *parsed;
  buffer->bytes.assign(buffer->value_shape.ByteSize(), '\xcd');
  absl::MutexLock lock(&mu_);
  ++live_allocations_;
  return buffer;
}

std::unique_ptr<driver::BufferHandle> FakeDriver::AllocateTuple(
    int32_t core_id, tpu_driver::MemoryRegion,
    absl::Span<driver::BufferHandle* const> children,
    absl::Span<driver::Event* const>) {
  auto buffer = std::make_unique<FakeBuffer>();
  buffer->core = core_id;
  std::vector<Shape> shapes;
  for (driver::BufferHandle* child : children) {
    auto* fake = static_cast<FakeBuffer*>(child);
    buffer->children.push_back(fake);
    shapes.push_back(fake->value_shape);
  }
  buffer->value_shape = Shape::Tuple(std::move(shapes));
  absl::MutexLock lock(&mu_);
  ++live_allocations_;
  return buffer;
}

std::shared_ptr<driver::Event> FakeDriver::Deallocate(
    std::unique_ptr<driver::BufferHandle> handle,
    absl::Span<driver::Event* const> wait_for) {
  std::shared_ptr<driver::BufferHandle> owned(std::move(handle));
  return After(wait_for, [this, owned]() mutable {
    owned.reset();
    absl::MutexLock lock(&mu_);
    --live_allocations_;
    return absl::OkStatus();
  });
}

std::shared_ptr<driver::Event> FakeDriver::TransferToDevice(
    const void* src, driver::BufferHandle* dst,
    absl::Span<driver::Event* const> wait_for) {
  auto* buffer = static_cast<FakeBuffer*>(dst);
  return After(wait_for, [src, buffer] {
    if (!buffer->bytes.empty()) {
      std::memcpy(buffer->bytes.data(), src, buffer->bytes.size());
    }
    return absl::OkStatus();
  });
}

std::shared_ptr<driver::Event> FakeDriver::TransferFromDevice(
    const driver::BufferHandle* src, void* dst,
    absl::Span<driver::Event* const> wait_for) {
  const auto* buffer = static_cast<const FakeBuffer*>(src);
  {
    absl::MutexLock lock(&mu_);
    ++transfers_from_device_;
  }
  return After(wait_for, [buffer, dst] {
    if (!buffer->bytes.empty()) {
      std::memcpy(dst, buffer->bytes.data(), buffer->bytes.size());
    }
    return absl::OkStatus();
  });
}

std::shared_ptr<driver::Event> FakeDriver::TransferFromDeviceToDevice(
    const driver::BufferHandle* src, driver::BufferHandle* dst,
    absl::Span<driver::Event* const> wait_for) {
  const auto* from = static_cast<const FakeBuffer*>(src);
  auto* to = static_cast<FakeBuffer*>(dst);
  {
    absl::MutexLock lock(&mu_);
    ++device_to_device_copies_;
  }
  return After(wait_for, [from, to] {
    if (from->bytes.size() != to->bytes.size()) {
      return absl::InvalidArgumentError("size mismatch");
    }
    to->bytes = from->bytes;
    return absl::OkStatus();
  });
}

std::unique_ptr<driver::CompiledProgramHandle> FakeDriver::CompileProgram(
    const xla::HloProto& source, int32_t num_replicas,
    absl::Span<driver::Event* const>) {
  auto compiled = std::make_unique<FakeCompiled>();
  {
    absl::MutexLock lock(&mu_);
    last_num_replicas_ = num_replicas;
  }
  const xla::HloModuleProto& module = source.hlo_module();
  const xla::HloComputationProto* entry = nullptr;
  for (const auto& c : module.computations()) {
    if (c.id() == module.entry_computation_id()) entry = &c;
  }
  if (entry == nullptr) {
    compiled->shape =
        absl::InvalidArgumentError("the module has no entry computation");
  } else {
    compiled->shape = entry->program_shape();
  }
  compiled->ready = Done(compiled->shape.status());
  return compiled;
}

std::unique_ptr<driver::LoadedProgramHandle> FakeDriver::LoadProgram(
    int32_t core_id, const driver::CompiledProgramHandle* handle,
    absl::Span<driver::Event* const>) {
  const auto* compiled = static_cast<const FakeCompiled*>(handle);
  auto loaded = std::make_unique<FakeLoaded>();
  loaded->core = core_id;
  loaded->shape = compiled->shape;
  loaded->ready = Done(compiled->shape.status());
  absl::MutexLock lock(&mu_);
  ++loaded_programs_;
  return loaded;
}

std::shared_ptr<driver::Event> FakeDriver::UnloadProgram(
    std::unique_ptr<driver::LoadedProgramHandle> handle,
    absl::Span<driver::Event* const> wait_for) {
  std::shared_ptr<driver::LoadedProgramHandle> owned(std::move(handle));
  return After(wait_for, [this, owned]() mutable {
    owned.reset();
    absl::MutexLock lock(&mu_);
    --loaded_programs_;
    return absl::OkStatus();
  });
}

std::shared_ptr<driver::Event> FakeDriver::ExecuteProgram(
    driver::LoadedProgramHandle* program,
    absl::Span<driver::BufferHandle* const> inputs,
    absl::Span<driver::BufferHandle* const> outputs,
    const xla::DeviceAssignmentProto& device_assignment,
    absl::Span<driver::Event* const> wait_for) {
  auto* loaded = static_cast<FakeLoaded*>(program);
  if (outputs.size() != 1) {
    return Done(absl::InvalidArgumentError("execute needs exactly one output"));
  }
  std::vector<FakeBuffer*> in_leaves, out_leaves;
  for (driver::BufferHandle* input : inputs) {
    static_cast<FakeBuffer*>(input)->Leaves(&in_leaves);
  }
  static_cast<FakeBuffer*>(outputs[0])->Leaves(&out_leaves);
  Executor executor;
  {
    absl::MutexLock lock(&mu_);
    last_device_assignment_ = device_assignment;
    executed_cores_.push_back(loaded->core);
    executor = executor_;
  }
  auto run = [in_leaves, out_leaves, executor]() -> absl::Status {
    if (!executor) return absl::UnimplementedError("no executor set");
    std::vector<Literal> arguments;
    for (FakeBuffer* leaf : in_leaves) {
      std::shared_ptr<AlignedBuffer> bytes =
          AlignedBuffer::Allocate(leaf->bytes.size());
      if (!leaf->bytes.empty()) {
        std::memcpy(bytes->data(), leaf->bytes.data(), leaf->bytes.size());
      }
      arguments.push_back(*Literal::FromBuffer(leaf->value_shape, bytes));
    }
    std::vector<Literal> results;
    for (FakeBuffer* leaf : out_leaves) {
      results.push_back(Literal::Zeros(leaf->value_shape));
    }
    absl::Status status = executor(arguments, &results);
    if (!status.ok()) return status;
    for (size_t i = 0; i < out_leaves.size(); ++i) {
      if (!out_leaves[i]->bytes.empty()) {
        std::memcpy(out_leaves[i]->bytes.data(), results[i].untyped_data(),
                    out_leaves[i]->bytes.size());
      }
    }
    return absl::OkStatus();
  };
  // The execution event completes when `run` does, now or on release.
  auto done = std::make_shared<FakeEvent>();
  std::shared_ptr<driver::Event> started =
      After(wait_for, [] { return absl::OkStatus(); });
  started->AddCallback([this, done, run](absl::Status status) {
    if (!status.ok()) {
      done->Complete(status);
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      if (hold_) {
        held_.push_back([done, run] { done->Complete(run()); });
        return;
      }
    }
    done->Complete(run());
  });
  return done;
}

}  // namespace tpu::client
