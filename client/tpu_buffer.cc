#include "client/tpu_buffer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"

namespace tpu::client {

struct TpuBuffer::HostValue {
  absl::Notification ready;
  absl::Mutex mu;
  int pending ABSL_GUARDED_BY(mu) = 0;
  absl::Status status ABSL_GUARDED_BY(mu);
  // One per array leaf, in leaf order; the transfers write into them.
  std::vector<Literal> leaves ABSL_GUARDED_BY(mu);
  // Valid once `ready` is notified and status is OK.
  Literal value;
};

namespace {

bool Is64BitType(xla::PrimitiveType type) {
  return type == xla::S64 || type == xla::U64 || type == xla::F64 ||
         type == xla::C128;
}

// Host memory lent by the caller of FromHostBuffers; the last transfer
// reading it drops the last reference, and the caller is told.
class HostMemoryLease {
 public:
  explicit HostMemoryLease(std::function<void()> on_done)
      : on_done_(std::move(on_done)) {}
  ~HostMemoryLease() {
    if (on_done_) on_done_();
  }
  HostMemoryLease(const HostMemoryLease&) = delete;
  HostMemoryLease& operator=(const HostMemoryLease&) = delete;

 private:
  std::function<void()> on_done_;
};

// Where the array leaves' contents come from, consumed in leaf order.
struct LeafSource {
  absl::Span<const void* const> data;
  size_t next = 0;
  std::shared_ptr<HostMemoryLease> lease;
};

// Allocates one array on the device; the next leaf of `source`, if given, is
// copied into it.
absl::StatusOr<std::shared_ptr<DeviceBuffer>> CreateArray(
    const Shape& shape, LeafSource* source,
    const std::shared_ptr<TpuClient>& client, int device_id) {
  driver::TpuDriver* driver = client->driver();
  std::unique_ptr<driver::BufferHandle> handle = driver->Allocate(
      device_id, tpu_driver::MemoryRegion::HBM, shape.ToProto(), {});
  std::vector<std::shared_ptr<driver::Event>> definition;
  if (source != nullptr) {
    std::shared_ptr<driver::Event> event = driver->TransferToDevice(
        source->data[source->next++], handle.get(), {});
    // The lender's memory must stay until the transfer has read it.
    event->AddCallback([lease = source->lease](absl::Status) {});
    definition.push_back(std::move(event));
  }
  return std::make_shared<DeviceBuffer>(
      client, device_id, std::move(handle),
      /*is_tuple=*/false, std::move(definition),
      std::vector<std::shared_ptr<DeviceBuffer>>{});
}

// A tuple over `children`; it waits for every child's definition events.
std::shared_ptr<DeviceBuffer> CreateTuple(
    std::vector<std::shared_ptr<DeviceBuffer>> children,
    const std::shared_ptr<TpuClient>& client, int device_id) {
  std::vector<driver::BufferHandle*> handles;
  std::vector<std::shared_ptr<driver::Event>> definition;
  for (const auto& child : children) {
    handles.push_back(child->handle());
    for (auto& event : child->definition_events()) {
      definition.push_back(std::move(event));
    }
  }
  std::unique_ptr<driver::BufferHandle> handle =
      client->driver()->AllocateTuple(device_id, tpu_driver::MemoryRegion::HBM,
                                      handles, {});
  return std::make_shared<DeviceBuffer>(
      client, device_id, std::move(handle),
      /*is_tuple=*/true, std::move(definition), std::move(children));
}

// Allocates `shape` recursively; array leaves are filled from `source` when
// it is given. REQUIRES: CheckBufferShape(shape) is OK; `source` holds one
// pointer per array leaf of `shape`.
absl::StatusOr<std::shared_ptr<DeviceBuffer>> CreateRecursive(
    const Shape& shape, LeafSource* source,
    const std::shared_ptr<TpuClient>& client, int device_id) {
  if (!shape.IsTuple()) return CreateArray(shape, source, client, device_id);
  std::vector<std::shared_ptr<DeviceBuffer>> children;
  for (int64_t i = 0; i < shape.tuple_size(); ++i) {
    absl::StatusOr<std::shared_ptr<DeviceBuffer>> child =
        CreateRecursive(shape.tuple_shapes()[i], source, client, device_id);
    if (!child.ok()) return child.status();
    children.push_back(*std::move(child));
  }
  return CreateTuple(std::move(children), client, device_id);
}

// FromLiteral and FromHostBuffers; errors name `caller_name`.
absl::StatusOr<std::unique_ptr<TpuBuffer>> CreateFromHost(
    absl::string_view caller_name, const Shape& shape,
    absl::Span<const void* const> leaf_data, std::function<void()> on_done,
    std::shared_ptr<TpuClient> client, int device_id) {
  LeafSource source;
  source.data = leaf_data;
  // Held here too, so every early return below still tells the lender.
  source.lease = std::make_shared<HostMemoryLease>(std::move(on_done));
  absl::StatusOr<std::shared_ptr<TpuDevice>> device =
      client->LookupDevice(device_id, caller_name);
  if (!device.ok()) return device.status();
  absl::Status status = CheckBufferShape(shape);
  if (!status.ok()) return status;
  const size_t leaf_count = shape.Leaves().size();
  if (leaf_data.size() != leaf_count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s got %d leaf pointers for %s, which has %d array leaves",
        caller_name, leaf_data.size(), shape.ToString(), leaf_count));
  }
  absl::StatusOr<std::shared_ptr<DeviceBuffer>> buffer =
      CreateRecursive(shape, &source, client, device_id);
  if (!buffer.ok()) return buffer.status();
  return std::make_unique<TpuBuffer>(shape, *std::move(buffer),
                                     std::move(client), *std::move(device));
}

// Collects the array leaves of `buffer` in order, with their shapes.
void CollectLeaves(
    const Shape& shape, const std::shared_ptr<DeviceBuffer>& buffer,
    std::vector<std::pair<Shape, std::shared_ptr<DeviceBuffer>>>* leaves) {
  if (!shape.IsTuple()) {
    leaves->emplace_back(shape, buffer);
    return;
  }
  for (int64_t i = 0; i < shape.tuple_size(); ++i) {
    CollectLeaves(shape.tuple_shapes()[i], buffer->children()[i], leaves);
  }
}

// Rebuilds a literal of `shape` from its array leaves in order.
Literal AssembleLiteral(const Shape& shape, const std::vector<Literal>& leaves,
                        size_t* next) {
  if (!shape.IsTuple()) return leaves[(*next)++];
  std::vector<Literal> elements;
  for (const Shape& element : shape.tuple_shapes()) {
    elements.push_back(AssembleLiteral(element, leaves, next));
  }
  return Literal::Tuple(std::move(elements));
}

}  // namespace

absl::Status CheckBufferShape(const Shape& shape) {
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes()) {
      absl::Status status = CheckBufferShape(element);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  if (Is64BitType(shape.element_type())) {
    return absl::InvalidArgumentError(k64BitUnsupportedMessage);
  }
  if (!shape.IsArray()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a TPU buffer holds arrays and tuples of arrays; ",
                     shape.ToString(), " cannot be stored in one"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TpuBuffer>> TpuBuffer::FromLiteral(
    const Literal& literal, std::shared_ptr<TpuClient> client, int device_id) {
  // The leaves share the literal's bytes, which copy on write keeps
  // unchanged for as long as the lease holds them.
  auto leaves = std::make_shared<std::vector<Literal>>(literal.Leaves());
  std::vector<const void*> data;
  for (const Literal& leaf : *leaves) data.push_back(leaf.untyped_data());
  return CreateFromHost(
      "TpuBuffer::FromLiteral", literal.shape(), data, [leaves]() {},
      std::move(client), device_id);
}

absl::StatusOr<std::unique_ptr<TpuBuffer>> TpuBuffer::FromHostBuffers(
    const Shape& shape, absl::Span<const void* const> leaf_data,
    std::function<void()> on_done_with_host_memory,
    std::shared_ptr<TpuClient> client, int device_id) {
  return CreateFromHost("TpuBuffer::FromHostBuffers", shape, leaf_data,
                        std::move(on_done_with_host_memory), std::move(client),
                        device_id);
}

absl::StatusOr<std::unique_ptr<TpuBuffer>> TpuBuffer::AllocateBuffer(
    const Shape& shape, std::shared_ptr<TpuClient> client, int device_id) {
  absl::StatusOr<std::shared_ptr<TpuDevice>> device =
      client->LookupDevice(device_id, "TpuBuffer::AllocateBuffer");
  if (!device.ok()) return device.status();
  absl::Status status = CheckBufferShape(shape);
  if (!status.ok()) return status;
  absl::StatusOr<std::shared_ptr<DeviceBuffer>> buffer =
      CreateRecursive(shape, nullptr, client, device_id);
  if (!buffer.ok()) return buffer.status();
  return std::make_unique<TpuBuffer>(shape, *std::move(buffer),
                                     std::move(client), *std::move(device));
}

absl::StatusOr<std::unique_ptr<TpuBuffer>> TpuBuffer::MakeTuple(
    absl::Span<TpuBuffer* const> elements, std::shared_ptr<TpuClient> client,
    int device_id) {
  absl::StatusOr<std::shared_ptr<TpuDevice>> device =
      client->LookupDevice(device_id, "TpuBuffer::MakeTuple");
  if (!device.ok()) return device.status();
  std::vector<Shape> shapes;
  std::vector<std::shared_ptr<DeviceBuffer>> children;
  for (size_t i = 0; i < elements.size(); ++i) {
    std::shared_ptr<DeviceBuffer> child = elements[i]->device_buffer();
    if (child == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("MakeTuple: element %d is a deleted buffer", i));
    }
    if (child->device_id() != device_id) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "MakeTuple: element %d is on %s but the tuple is on %s; copy it "
          "there with CopyToDevice first",
          i, elements[i]->device()->ToString(), (*device)->ToString()));
    }
    shapes.push_back(elements[i]->on_host_shape());
    children.push_back(std::move(child));
  }
  std::shared_ptr<DeviceBuffer> tuple =
      CreateTuple(std::move(children), client, device_id);
  return std::make_unique<TpuBuffer>(Shape::Tuple(std::move(shapes)),
                                     std::move(tuple), std::move(client),
                                     *std::move(device));
}

TpuBuffer::TpuBuffer(Shape on_host_shape,
                     std::shared_ptr<DeviceBuffer> device_buffer,
                     std::shared_ptr<TpuClient> client,
                     std::shared_ptr<TpuDevice> device)
    : client_(std::move(client)),
      on_host_shape_(std::move(on_host_shape)),
      device_(std::move(device)),
      device_buffer_(std::move(device_buffer)) {}

TpuBuffer::~TpuBuffer() = default;

std::shared_ptr<DeviceBuffer> TpuBuffer::device_buffer() const {
  absl::MutexLock lock(&mu_);
  return device_buffer_;
}

void TpuBuffer::Delete() {
  std::shared_ptr<DeviceBuffer> released;
  {
    absl::MutexLock lock(&mu_);
    released = std::move(device_buffer_);
    device_buffer_ = nullptr;
    host_value_ = nullptr;
  }
  // `released` goes out of scope here, outside the lock: the last reference's
  // destructor calls the driver.
}

bool TpuBuffer::IsDeleted() const {
  absl::MutexLock lock(&mu_);
  return device_buffer_ == nullptr;
}

absl::Status TpuBuffer::CopyToHostAsync() {
  std::vector<std::pair<Shape, std::shared_ptr<DeviceBuffer>>> leaves;
  auto host_value = std::make_shared<HostValue>();
  {
    absl::MutexLock lock(&mu_);
    if (device_buffer_ == nullptr) {
      return absl::InvalidArgumentError(
          "CopyToHostAsync() called on invalid buffer.");
    }
    if (host_value_ != nullptr) return absl::OkStatus();  // already requested
    host_value_ = host_value;
    CollectLeaves(on_host_shape_, device_buffer_, &leaves);
  }

  // Pointers into the leaf literals are taken while each is still unshared,
  // so the transfers write into the very bytes `host_value` keeps.
  std::vector<void*> destinations;
  {
    absl::MutexLock lock(&host_value->mu);
    host_value->pending = static_cast<int>(leaves.size());
    for (const auto& [shape, buffer] : leaves) {
      Literal leaf = Literal::Uninitialized(shape);
      destinations.push_back(leaf.mutable_untyped_data());
      host_value->leaves.push_back(std::move(leaf));
    }
  }

  auto finish = [host_value, shape = on_host_shape_]() {
    size_t next = 0;
    {
      absl::MutexLock lock(&host_value->mu);
      if (host_value->status.ok()) {
        host_value->value = AssembleLiteral(shape, host_value->leaves, &next);
      }
      host_value->leaves.clear();
    }
    host_value->ready.Notify();
  };
  if (leaves.empty()) {  // an empty tuple: nothing to transfer
    finish();
    return absl::OkStatus();
  }

  for (size_t i = 0; i < leaves.size(); ++i) {
    const std::shared_ptr<DeviceBuffer>& buffer = leaves[i].second;
    std::vector<std::shared_ptr<driver::Event>> definition =
        buffer->definition_events();
    std::vector<driver::Event*> wait_for;
    for (const auto& e : definition) wait_for.push_back(e.get());
    std::shared_ptr<driver::Event> transfer =
        client_->driver()->TransferFromDevice(buffer->handle(), destinations[i],
                                              wait_for);
    buffer->AddReadEvent(transfer);
    transfer->AddCallback([host_value, finish](absl::Status status) {
      bool last;
      {
        absl::MutexLock lock(&host_value->mu);
        if (!status.ok() && host_value->status.ok()) {
          host_value->status = std::move(status);
        }
        last = --host_value->pending == 0;
      }
      if (last) finish();
    });
  }
  return absl::OkStatus();
}

absl::StatusOr<Literal> TpuBuffer::ToLiteral() {
  absl::Status status = CopyToHostAsync();
  if (!status.ok()) return status;
  std::shared_ptr<HostValue> host_value;
  {
    absl::MutexLock lock(&mu_);
    host_value = host_value_;
  }
  if (host_value == nullptr) {  // deleted concurrently
    return absl::InvalidArgumentError("ToLiteral() called on deleted buffer.");
  }
  // Bounded: the driver completes every transfer, with an error if the
  // worker goes away.
  host_value->ready.WaitForNotification();
  absl::MutexLock lock(&host_value->mu);
  if (!host_value->status.ok()) return host_value->status;
  return host_value->value;
}

absl::StatusOr<std::vector<std::unique_ptr<TpuBuffer>>>
TpuBuffer::DestructureTuple() {
  if (!on_host_shape_.IsTuple()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Attempted to destructure a TpuBuffer that did not have a tuple "
        "shape; shape: %s.",
        on_host_shape_.ToString()));
  }
  std::shared_ptr<DeviceBuffer> buffer = device_buffer();
  if (buffer == nullptr) {
    return absl::InvalidArgumentError(
        "Attempted to destructure a deleted buffer.");
  }
  std::vector<std::unique_ptr<TpuBuffer>> results;
  for (int64_t i = 0; i < on_host_shape_.tuple_size(); ++i) {
    results.push_back(
        std::make_unique<TpuBuffer>(on_host_shape_.tuple_shapes()[i],
                                    buffer->children()[i], client_, device_));
  }
  return results;
}

absl::StatusOr<std::unique_ptr<TpuBuffer>> TpuBuffer::CopyToDevice(
    int dst_device_id) {
  if (on_host_shape_.IsTuple()) {
    return absl::UnimplementedError(
        "CopyToDevice for tuples is not supported.");
  }
  absl::StatusOr<std::shared_ptr<TpuDevice>> dst_device =
      client_->LookupDevice(dst_device_id, "TpuBuffer::CopyToDevice");
  if (!dst_device.ok()) return dst_device.status();
  std::shared_ptr<DeviceBuffer> src = device_buffer();
  if (src == nullptr) {
    return absl::InvalidArgumentError(
        "CopyToDevice() called on deleted or donated buffer");
  }
  if (dst_device_id == device_->id()) {
    return std::make_unique<TpuBuffer>(on_host_shape_, std::move(src), client_,
                                       device_);
  }

  driver::TpuDriver* driver = client_->driver();
  std::unique_ptr<driver::BufferHandle> dst_handle =
      driver->Allocate(dst_device_id, tpu_driver::MemoryRegion::HBM,
                       on_host_shape_.ToProto(), {});
  std::vector<std::shared_ptr<driver::Event>> src_definition =
      src->definition_events();
  std::vector<driver::Event*> wait_for;
  for (const auto& e : src_definition) wait_for.push_back(e.get());
  std::shared_ptr<driver::Event> copy = driver->TransferFromDeviceToDevice(
      src->handle(), dst_handle.get(), wait_for);
  // The source must not be released while the copy reads it.
  src->AddReadEvent(copy);
  auto dst = std::make_shared<DeviceBuffer>(
      client_, dst_device_id, std::move(dst_handle), /*is_tuple=*/false,
      std::vector<std::shared_ptr<driver::Event>>{std::move(copy)},
      std::vector<std::shared_ptr<DeviceBuffer>>{});
  return std::make_unique<TpuBuffer>(on_host_shape_, std::move(dst), client_,
                                     *std::move(dst_device));
}

absl::Status TpuBuffer::BlockHostUntilReady() {
  std::shared_ptr<DeviceBuffer> buffer = device_buffer();
  if (buffer == nullptr) {
    return absl::InvalidArgumentError(
        "BlockHostUntilReady() called on deleted or donated buffer");
  }
  absl::Status status = buffer->handle()->OnReady()->Await();
  for (const auto& event : buffer->definition_events()) {
    absl::Status defined = event->Await();
    if (status.ok()) status = defined;
  }
  return status;
}

}  // namespace tpu::client
