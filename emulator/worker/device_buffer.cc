#include "emulator/worker/device_buffer.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace tpu::emulator {

std::shared_ptr<DeviceBuffer> DeviceBuffer::CreateArray(
    int core_id, int64_t size, std::optional<Shape> shape,
    HbmReservation reservation) {
  return std::shared_ptr<DeviceBuffer>(new DeviceBuffer(
      false, core_id, size, std::move(shape), {}, std::move(reservation)));
}

std::shared_ptr<DeviceBuffer> DeviceBuffer::CreateTuple(
    int core_id, std::vector<std::shared_ptr<DeviceBuffer>> children) {
  const int64_t size = 8 * static_cast<int64_t>(children.size());
  return std::shared_ptr<DeviceBuffer>(
      new DeviceBuffer(true, core_id, size, std::nullopt, std::move(children),
                       HbmReservation()));
}

DeviceBuffer::DeviceBuffer(bool is_tuple, int core_id, int64_t size,
                           std::optional<Shape> shape,
                           std::vector<std::shared_ptr<DeviceBuffer>> children,
                           HbmReservation reservation)
    : is_tuple_(is_tuple),
      core_id_(core_id),
      size_(size),
      shape_(std::move(shape)),
      children_(std::move(children)),
      reservation_(std::move(reservation)) {}

std::shared_ptr<AlignedBuffer> DeviceBuffer::contents() const {
  absl::MutexLock lock(&mu_);
  return contents_;
}

void DeviceBuffer::set_contents(std::shared_ptr<AlignedBuffer> bytes) {
  absl::MutexLock lock(&mu_);
  if (released_) return;  // a late writer must not resurrect freed memory
  contents_ = std::move(bytes);
}

void DeviceBuffer::Release() {
  absl::MutexLock lock(&mu_);
  released_ = true;
  reservation_.Reset();
  contents_.reset();
}

bool DeviceBuffer::released() const {
  absl::MutexLock lock(&mu_);
  return released_;
}

std::string DeviceBuffer::Describe() const {
  if (is_tuple_) {
    return absl::StrCat("tuple of ", children_.size(), " buffers on core ",
                        core_id_);
  }
  if (shape_.has_value()) {
    return absl::StrCat(shape_->ToString(), " (", size_, " bytes) on core ",
                        core_id_);
  }
  return absl::StrCat(size_, " bytes on core ", core_id_);
}

absl::Status CheckCompatible(const DeviceBuffer& buffer, const Shape& shape,
                             const std::string& what) {
  if (shape.IsTuple()) {
    if (!buffer.is_tuple()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " is ", buffer.Describe(), " but the program needs ",
          shape.ToString(), ": pass an alloc_tuple handle."));
    }
    if (static_cast<int64_t>(buffer.children().size()) != shape.tuple_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " is a tuple of ", buffer.children().size(),
                       " buffers but the program needs ", shape.ToString(),
                       " (", shape.tuple_size(), " elements)."));
    }
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      absl::Status s =
          CheckCompatible(*buffer.children()[i], shape.tuple_shapes()[i],
                          absl::StrCat(what, " element ", i));
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  if (buffer.is_tuple()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is a ", buffer.Describe(), " but the program needs the array ",
        shape.ToString(), "."));
  }
  if (!shape.IsArray()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the program needs ", shape.ToString(),
                     ", which cannot live in a device buffer."));
  }
  if (buffer.shape().has_value()) {
    if (*buffer.shape() != shape) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " is ", buffer.Describe(),
                       " but the program needs ", shape.ToString(), "."));
    }
  } else if (buffer.size() != shape.ByteSize()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is ", buffer.Describe(), " but the program needs ",
                     shape.ToString(), " (", shape.ByteSize(), " bytes)."));
  }
  return absl::OkStatus();
}

absl::StatusOr<Literal> ReadLiteral(const DeviceBuffer& buffer,
                                    const Shape& shape,
                                    const std::string& what) {
  if (buffer.released()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " was deallocated before the program ran."));
  }
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    elements.reserve(shape.tuple_size());
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      absl::StatusOr<Literal> element =
          ReadLiteral(*buffer.children()[i], shape.tuple_shapes()[i],
                      absl::StrCat(what, " element ", i));
      if (!element.ok()) return element.status();
      elements.push_back(*std::move(element));
    }
    return Literal::Tuple(std::move(elements));
  }
  std::shared_ptr<AlignedBuffer> bytes = buffer.contents();
  if (bytes == nullptr) return Literal::Zeros(shape);
  return Literal::FromBuffer(shape, std::move(bytes));
}

void WriteLiteral(DeviceBuffer& buffer, const Literal& value) {
  if (value.shape().IsTuple()) {
    for (int64_t i = 0; i < value.tuple_size(); ++i) {
      WriteLiteral(*buffer.children()[i], value.element(i));
    }
    return;
  }
  std::shared_ptr<AlignedBuffer> bytes = value.buffer();
  if (bytes == nullptr) bytes = AlignedBuffer::Allocate(0);
  buffer.set_contents(std::move(bytes));
}

}  // namespace tpu::emulator
