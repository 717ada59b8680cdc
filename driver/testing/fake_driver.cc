#include "driver/testing/fake_driver.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "driver/testing/fake_worker_state.h"
#include "driver/testing/manual_event.h"
#include "hlo/aligned_buffer.h"

namespace tpu::driver::testing {
namespace {

struct FakeBuffer {
  int32_t core = 0;
  // What the buffer is charged in HBM, and its size_in_bytes.
  int64_t bytes = 0;
  // u8[bytes] for an allocation by size.
  Shape shape;
  std::vector<uint8_t> data;                          // Arrays.
  std::vector<std::shared_ptr<FakeBuffer>> children;  // Tuples.
  // Written by the allocation and the deallocation, which every operation
  // on the buffer is ordered after or before.
  bool allocated = false;
  bool freed = false;
};

// The array leaves of `buffer`, in order.
void AppendLeaves(const std::shared_ptr<FakeBuffer>& buffer,
                  std::vector<std::shared_ptr<FakeBuffer>>* leaves) {
  if (!buffer->shape.IsTuple()) {
    leaves->push_back(buffer);
    return;
  }
  for (const auto& child : buffer->children) AppendLeaves(child, leaves);
}

// FAILED_PRECONDITION unless the buffer is allocated and not freed.
absl::Status CheckAllocated(const FakeBuffer& buffer) {
  if (buffer.allocated && !buffer.freed) return absl::OkStatus();
  return absl::FailedPreconditionError("fake: buffer not allocated");
}

struct FakeCompiled {
  std::string module;
  absl::StatusOr<xla::ProgramShapeProto> shape;
  bool ok = false;  // Set by the compilation.
};

struct FakeLoaded {
  int32_t core = 0;
  std::shared_ptr<FakeCompiled> program;
  bool loaded = false;  // Set by the load, cleared by the unload.
};

// `owner` identifies the driver (compared, never dereferenced).
class FakeBufferHandle : public BufferHandle {
 public:
  FakeBufferHandle(const void* owner, std::shared_ptr<FakeBuffer> buffer,
                   std::shared_ptr<ManualEvent> ready,
                   std::optional<xla::ShapeProto> shape)
      : owner(owner),
        buffer(std::move(buffer)),
        ready(std::move(ready)),
        shape_(std::move(shape)) {}
  std::shared_ptr<Event> OnReady() override { return ready; }
  int64_t size_in_bytes() override { return buffer->bytes; }
  std::optional<xla::ShapeProto> shape() override { return shape_; }

  const void* const owner;
  const std::shared_ptr<FakeBuffer> buffer;
  const std::shared_ptr<ManualEvent> ready;

 private:
  const std::optional<xla::ShapeProto> shape_;
};

class FakeCompiledHandle : public CompiledProgramHandle {
 public:
  FakeCompiledHandle(const void* owner, std::shared_ptr<FakeCompiled> program,
                     std::shared_ptr<ManualEvent> ready)
      : owner(owner), program(std::move(program)), ready(std::move(ready)) {}
  std::shared_ptr<Event> OnReady() override { return ready; }
  absl::StatusOr<xla::ProgramShapeProto> program_shape() override {
    absl::Status status = ready->Await();
    if (!status.ok()) return status;
    return program->shape;
  }

  const void* const owner;
  const std::shared_ptr<FakeCompiled> program;
  const std::shared_ptr<ManualEvent> ready;
};

class FakeLoadedHandle : public LoadedProgramHandle {
 public:
  FakeLoadedHandle(const void* owner, std::shared_ptr<FakeLoaded> loaded,
                   std::shared_ptr<ManualEvent> ready)
      : owner(owner), loaded(std::move(loaded)), ready(std::move(ready)) {}
  std::shared_ptr<Event> OnReady() override { return ready; }

  const void* const owner;
  const std::shared_ptr<FakeLoaded> loaded;
  const std::shared_ptr<ManualEvent> ready;
};

// The leaves' contents as literals.
std::vector<Literal> ToLiterals(
    const std::vector<std::shared_ptr<FakeBuffer>>& leaves) {
  std::vector<Literal> literals;
  for (const auto& leaf : leaves) {
    std::shared_ptr<AlignedBuffer> bytes =
        AlignedBuffer::Allocate(leaf->data.size());
    if (!leaf->data.empty()) {
      std::memcpy(bytes->data(), leaf->data.data(), leaf->data.size());
    }
    absl::StatusOr<Literal> literal = Literal::FromBuffer(leaf->shape, bytes);
    literals.push_back(literal.ok() ? *std::move(literal)
                                    : Literal::Zeros(leaf->shape));
  }
  return literals;
}

using State = FakeWorker::State;

class FakeDriver : public TpuDriver {
 public:
  explicit FakeDriver(std::shared_ptr<State> state) : s_(std::move(state)) {
    absl::MutexLock lock(&s_->mu);
    ++s_->drivers_open;
  }
  ~FakeDriver() override {
    {
      absl::MutexLock lock(&s_->mu);
      --s_->drivers_open;
    }
    // Closing the connection: what it still has held is cancelled.
    s_->FailQueued(this, absl::CancelledError("fake driver closed"));
  }

  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override {
    absl::MutexLock lock(&s_->mu);
    if (s_->gone) return s_->Lost();
    tpu_driver::SystemInfo info = s_->info;
    auto live = [this](tpu_driver::TpuCoreInfo& core)
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_->mu) {
                      auto it = s_->hbm_in_use.find(core.id());
                      if (it == s_->hbm_in_use.end()) return;
                      core.set_hbm_bytes_available(
                          s_->options.hbm_bytes_per_core - it->second);
                    };
    for (auto& chip : *info.mutable_tpu_chip()) {
      for (auto& core : *chip.mutable_core()) live(core);
    }
    for (auto& core : *info.mutable_local_core()) live(core);
    return info;
  }

  absl::Status Reset() override {
    absl::MutexLock lock(&s_->mu);
    if (s_->gone) return s_->Lost();
    ++s_->resets;
    s_->live_buffers = 0;
    s_->live_loaded = 0;
    s_->hbm_in_use.clear();
    return absl::OkStatus();
  }

  std::unique_ptr<BufferHandle> Allocate(
      int32_t core_id, tpu_driver::MemoryRegion, int64_t num_bytes,
      absl::Span<Event* const> wait_for) override {
    auto buffer = std::make_shared<FakeBuffer>();
    buffer->bytes = num_bytes;
    buffer->shape = Shape::Array(xla::U8, {std::max<int64_t>(num_bytes, 0)});
    return NewBuffer("Allocate", core_id, std::move(buffer), std::nullopt,
                     Deps(wait_for));
  }

  std::unique_ptr<BufferHandle> Allocate(
      int32_t core_id, tpu_driver::MemoryRegion, const xla::ShapeProto& shape,
      absl::Span<Event* const> wait_for) override {
    auto buffer = std::make_shared<FakeBuffer>();
    buffer->bytes = ComputeBytesFromShape(shape);
    absl::StatusOr<Shape> parsed = Shape::FromProto(shape);
    if (!parsed.ok()) return FailedBuffer(std::move(buffer), parsed.status());
    buffer->shape = *std::move(parsed);
    return NewBuffer("Allocate", core_id, std::move(buffer), shape,
                     Deps(wait_for));
  }

  std::unique_ptr<BufferHandle> AllocateTuple(
      int32_t core_id, tpu_driver::MemoryRegion,
      absl::Span<BufferHandle* const> children,
      absl::Span<Event* const> wait_for) override {
    auto buffer = std::make_shared<FakeBuffer>();
    buffer->bytes = 8 * static_cast<int64_t>(children.size());
    std::vector<Event*> deps = Deps(wait_for);
    std::vector<Shape> shapes;
    std::optional<xla::ShapeProto> shape = xla::ShapeProto();
    shape->set_element_type(xla::TUPLE);
    for (BufferHandle* child : children) {
      absl::StatusOr<const FakeBufferHandle*> fake = Check(child);
      if (!fake.ok()) return FailedBuffer(std::move(buffer), fake.status());
      buffer->children.push_back((*fake)->buffer);
      shapes.push_back((*fake)->buffer->shape);
      deps.push_back((*fake)->ready.get());
      std::optional<xla::ShapeProto> child_shape = child->shape();
      if (child_shape.has_value() && shape.has_value()) {
        *shape->add_tuple_shapes() = *std::move(child_shape);
      } else {
        shape.reset();
      }
    }
    buffer->shape = Shape::Tuple(std::move(shapes));
    return NewBuffer("AllocateTuple", core_id, std::move(buffer),
                     std::move(shape), std::move(deps));
  }

  std::shared_ptr<Event> Deallocate(
      std::unique_ptr<BufferHandle> handle,
      absl::Span<Event* const> wait_for) override {
    return OnBuffer("Deallocate", handle.get(), wait_for,
                    [s = s_](FakeBuffer& b) {
                      b.freed = true;
                      absl::MutexLock lock(&s->mu);
                      --s->live_buffers;
                      s->hbm_in_use[b.core] -= b.bytes;
                    });
  }

  std::shared_ptr<Event> TransferToDevice(
      const void* src, BufferHandle* dst,
      absl::Span<Event* const> wait_for) override {
    return OnBuffer("TransferToDevice", dst, wait_for, [src](FakeBuffer& b) {
      if (!b.data.empty()) std::memcpy(b.data.data(), src, b.data.size());
    });
  }

  std::shared_ptr<Event> TransferFromDevice(
      const BufferHandle* src, void* dst,
      absl::Span<Event* const> wait_for) override {
    return OnBuffer("TransferFromDevice", src, wait_for, [dst](FakeBuffer& b) {
      if (!b.data.empty()) std::memcpy(dst, b.data.data(), b.data.size());
    });
  }

  std::shared_ptr<Event> TransferFromDeviceToDevice(
      const BufferHandle* src, BufferHandle* dst,
      absl::Span<Event* const> wait_for) override {
    absl::StatusOr<const FakeBufferHandle*> from = Check(src);
    if (!from.ok()) return ManualEvent::Done(from.status());
    absl::StatusOr<const FakeBufferHandle*> to = Check(dst);
    if (!to.ok()) return ManualEvent::Done(to.status());
    return s_->Issue(
        this, "TransferFromDeviceToDevice",
        Deps(wait_for, {(*from)->ready.get(), (*to)->ready.get()}),
        [f = (*from)->buffer, t = (*to)->buffer]() {
          if (f->bytes != t->bytes) {
            return absl::InvalidArgumentError("fake: copy between sizes");
          }
          t->data = f->data;
          return absl::OkStatus();
        });
  }

  std::unique_ptr<CompiledProgramHandle> CompileProgram(
      const xla::HloProto& source, int32_t num_replicas,
      absl::Span<Event* const> wait_for) override {
    {
      absl::MutexLock lock(&s_->mu);
      s_->last_num_replicas = num_replicas;
    }
    auto program = std::make_shared<FakeCompiled>();
    program->module = source.hlo_module().name();
    program->shape = ProgramShape(source.hlo_module());
    auto ready = s_->Issue(this, "CompileProgram", Deps(wait_for), [program]() {
      if (program->module == "fail_compile") {
        return absl::InvalidArgumentError("fake: the program does not compile");
      }
      if (!program->shape.ok()) return program->shape.status();
      program->ok = true;
      return absl::OkStatus();
    });
    return std::make_unique<FakeCompiledHandle>(this, program, ready);
  }

  std::unique_ptr<LoadedProgramHandle> LoadProgram(
      int32_t core_id, const CompiledProgramHandle* handle,
      absl::Span<Event* const> wait_for) override {
    auto loaded = std::make_shared<FakeLoaded>();
    loaded->core = core_id;
    auto* compiled = dynamic_cast<const FakeCompiledHandle*>(handle);
    if (compiled == nullptr || compiled->owner != this) {
      return std::make_unique<FakeLoadedHandle>(
          this, loaded, ManualEvent::Done(Foreign("compiled program")));
    }
    if (!s_->local_cores.contains(core_id)) {
      return std::make_unique<FakeLoadedHandle>(
          this, loaded, ManualEvent::Done(NoCore(core_id)));
    }
    loaded->program = compiled->program;
    auto ready = s_->Issue(
        this, "LoadProgram", Deps(wait_for, {compiled->ready.get()}),
        [s = s_, loaded]() {
          if (!loaded->program->ok) {
            return absl::FailedPreconditionError("fake: program not compiled");
          }
          loaded->loaded = true;
          absl::MutexLock lock(&s->mu);
          ++s->live_loaded;
          return absl::OkStatus();
        });
    return std::make_unique<FakeLoadedHandle>(this, loaded, ready);
  }

  std::shared_ptr<Event> UnloadProgram(
      std::unique_ptr<LoadedProgramHandle> handle,
      absl::Span<Event* const> wait_for) override {
    absl::StatusOr<const FakeLoadedHandle*> loaded = CheckLoaded(handle.get());
    if (!loaded.ok()) return ManualEvent::Done(loaded.status());
    return s_->Issue(
        this, "UnloadProgram", Deps(wait_for, {(*loaded)->ready.get()}),
        [s = s_, l = (*loaded)->loaded]() {
          if (!l->loaded) {
            return absl::FailedPreconditionError("fake: program not loaded");
          }
          l->loaded = false;
          absl::MutexLock lock(&s->mu);
          --s->live_loaded;
          return absl::OkStatus();
        });
  }

  std::shared_ptr<Event> ExecuteProgram(
      LoadedProgramHandle* program, absl::Span<BufferHandle* const> inputs,
      absl::Span<BufferHandle* const> outputs,
      const xla::DeviceAssignmentProto& device_assignment,
      absl::Span<Event* const> wait_for) override {
    absl::StatusOr<const FakeLoadedHandle*> loaded = CheckLoaded(program);
    if (!loaded.ok()) return ManualEvent::Done(loaded.status());
    std::vector<Event*> deps = Deps(wait_for, {(*loaded)->ready.get()});
    std::vector<std::shared_ptr<FakeBuffer>> ins, outs;
    for (int pass = 0; pass < 2; ++pass) {
      for (BufferHandle* handle : pass == 0 ? inputs : outputs) {
        absl::StatusOr<const FakeBufferHandle*> fake = Check(handle);
        if (!fake.ok()) return ManualEvent::Done(fake.status());
        AppendLeaves((*fake)->buffer, pass == 0 ? &ins : &outs);
        deps.push_back((*fake)->ready.get());
      }
    }
    std::shared_ptr<FakeLoaded> l = (*loaded)->loaded;
    {
      absl::MutexLock lock(&s_->mu);
      s_->assignments[l->core] = device_assignment;
      s_->last_assignment = device_assignment;
      s_->executed_cores.push_back(l->core);
    }
    return s_->Issue(this, "ExecuteProgram", deps, [s = s_, l, ins, outs]() {
      return Run(*s, *l, ins, outs);
    });
  }

 private:
  // An execution's effect.
  static absl::Status Run(
      State& s, const FakeLoaded& loaded,
      const std::vector<std::shared_ptr<FakeBuffer>>& ins,
      const std::vector<std::shared_ptr<FakeBuffer>>& outs) {
    if (!loaded.loaded) {
      return absl::FailedPreconditionError("fake: program not loaded");
    }
    if (loaded.program->module == "fail_execute") {
      return absl::InternalError("fake: the program failed");
    }
    FakeWorker::Executor executor;
    {
      absl::MutexLock lock(&s.mu);
      executor = s.executor;
    }
    std::vector<Literal> results = ToLiterals(outs);
    absl::Status status = executor(ToLiterals(ins), &results);
    if (!status.ok()) return status;
    for (size_t i = 0; i < outs.size() && i < results.size(); ++i) {
      const size_t n =
          std::min<size_t>(outs[i]->data.size(), results[i].size_bytes());
      if (n > 0)
        std::memcpy(outs[i]->data.data(), results[i].untyped_data(), n);
    }
    return absl::OkStatus();
  }

  static absl::StatusOr<xla::ProgramShapeProto> ProgramShape(
      const xla::HloModuleProto& module) {
    for (const auto& computation : module.computations()) {
      if (computation.id() == module.entry_computation_id()) {
        return computation.program_shape();
      }
    }
    if (module.has_host_program_shape()) return module.host_program_shape();
    return absl::InvalidArgumentError("the module has no entry computation");
  }

  absl::Status Foreign(const char* what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("fake ", s_->options.name, ": the ", what,
                     " is null or belongs to another driver"));
  }
  absl::Status NoCore(int32_t core) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "fake ", s_->options.name, ": core ", core, " is not served here"));
  }

  absl::StatusOr<const FakeBufferHandle*> Check(
      const BufferHandle* handle) const {
    auto* fake = dynamic_cast<const FakeBufferHandle*>(handle);
    if (fake == nullptr || fake->owner != this) return Foreign("buffer");
    return fake;
  }
  absl::StatusOr<const FakeLoadedHandle*> CheckLoaded(
      const LoadedProgramHandle* handle) const {
    auto* fake = dynamic_cast<const FakeLoadedHandle*>(handle);
    if (fake == nullptr || fake->owner != this) {
      return Foreign("loaded program");
    }
    return fake;
  }

  // Issues `kind` on the buffer of `handle`: once `wait_for` and its
  // allocation completed, `effect` runs on it if it is allocated and not
  // freed (else the operation fails FAILED_PRECONDITION).
  std::shared_ptr<Event> OnBuffer(const char* kind, const BufferHandle* handle,
                                  absl::Span<Event* const> wait_for,
                                  std::function<void(FakeBuffer&)> effect) {
    absl::StatusOr<const FakeBufferHandle*> fake = Check(handle);
    if (!fake.ok()) return ManualEvent::Done(fake.status());
    return s_->Issue(this, kind, Deps(wait_for, {(*fake)->ready.get()}),
                     [b = (*fake)->buffer, effect = std::move(effect)]() {
                       absl::Status status = CheckAllocated(*b);
                       if (status.ok()) effect(*b);
                       return status;
                     });
  }

  // `wait_for` and the creators of the handles an operation names.
  static std::vector<Event*> Deps(absl::Span<Event* const> wait_for,
                                  std::initializer_list<Event*> named = {}) {
    std::vector<Event*> deps(wait_for.begin(), wait_for.end());
    deps.insert(deps.end(), named.begin(), named.end());
    return deps;
  }

  std::unique_ptr<BufferHandle> FailedBuffer(std::shared_ptr<FakeBuffer> buffer,
                                             absl::Status status) {
    return std::make_unique<FakeBufferHandle>(
        this, std::move(buffer), ManualEvent::Done(std::move(status)),
        std::nullopt);
  }

  std::unique_ptr<BufferHandle> NewBuffer(const char* kind, int32_t core,
                                          std::shared_ptr<FakeBuffer> buffer,
                                          std::optional<xla::ShapeProto> shape,
                                          std::vector<Event*> deps) {
    buffer->core = core;
    if (!s_->local_cores.contains(core)) {
      return FailedBuffer(std::move(buffer), NoCore(core));
    }
    auto ready = s_->Issue(this, kind, deps, [s = s_, buffer]() {
      absl::MutexLock lock(&s->mu);
      int64_t& in_use = s->hbm_in_use[buffer->core];
      if (in_use + buffer->bytes > s->options.hbm_bytes_per_core) {
        return absl::ResourceExhaustedError(
            absl::StrCat("fake ", s->options.name, ": requested ",
                         buffer->bytes, " bytes, in use ", in_use,
                         ", capacity ", s->options.hbm_bytes_per_core));
      }
      in_use += buffer->bytes;
      if (!buffer->shape.IsTuple()) buffer->data.assign(buffer->bytes, 0);
      buffer->allocated = true;
      ++s->live_buffers;
      return absl::OkStatus();
    });
    return std::make_unique<FakeBufferHandle>(
        this, std::move(buffer), std::move(ready), std::move(shape));
  }

  const std::shared_ptr<State> s_;
};

}  // namespace

std::unique_ptr<TpuDriver> NewFakeDriver(
    std::shared_ptr<FakeWorker::State> state) {
  return std::make_unique<FakeDriver>(std::move(state));
}

}  // namespace tpu::driver::testing
