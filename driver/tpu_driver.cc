#include "driver/tpu_driver.h"

#include <limits>

namespace tpu::driver {
namespace {

// Bytes per element in the driver's layout; 0 for types without a size.
int64_t ElementBytes(xla::PrimitiveType type) {
  switch (type) {
    case xla::PRED:
    case xla::S8:
    case xla::U8:
      return 1;
    case xla::S16:
    case xla::U16:
    case xla::F16:
    case xla::BF16:
      return 2;
    case xla::S32:
    case xla::U32:
    case xla::F32:
      return 4;
    case xla::S64:
    case xla::U64:
    case xla::F64:
    case xla::C64:
      return 8;
    case xla::C128:
      return 16;
    default:
      return 0;
  }
}

}  // namespace

int64_t ComputeBytesFromShape(const xla::ShapeProto& shape) {
  if (shape.element_type() == xla::TUPLE) {
    return int64_t{8} * shape.tuple_shapes_size();
  }
  // Shapes come from users and the wire: a negative dimension sizes nothing
  // and an overflowing product saturates, so the worker's own validation
  // (which sees the same shape) reports what is wrong.
  int64_t bytes = ElementBytes(shape.element_type());
  for (int64_t dim : shape.dimensions()) {
    if (dim < 0) return 0;
    if (dim != 0 && bytes > std::numeric_limits<int64_t>::max() / dim) {
      return std::numeric_limits<int64_t>::max();
    }
    bytes *= dim;
  }
  return bytes;
}

}  // namespace tpu::driver
