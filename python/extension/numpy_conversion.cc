#include "python/extension/numpy_conversion.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tpu::python {
namespace py = pybind11;

namespace {

constexpr char kBFloat16MetadataKey[] = "softtpu_type";
constexpr char kBFloat16MetadataValue[] = "bfloat16";

// Process-lifetime references, leaked on purpose: they must not be released
// after the interpreter has finalized.
const py::object& Numpy() {
  static const py::object* numpy = new py::object(py::module_::import("numpy"));
  return *numpy;
}

bool IsBFloat16(const py::dtype& dtype) {
  // A mappingproxy, not a dict, so only the generic protocol applies.
  py::object metadata = dtype.attr("metadata");
  if (metadata.is_none()) return false;
  py::object tag = metadata.attr("get")(kBFloat16MetadataKey);
  return py::isinstance<py::str>(tag) &&
         tag.cast<std::string>() == kBFloat16MetadataValue;
}

// Whether the client can read `array` where it is.
bool CanLend(const py::array& array) {
  constexpr int kNeeded = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ |
                          py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  return (array.flags() & kNeeded) == kNeeded &&
         array.dtype().attr("isnative").cast<bool>();
}

absl::Status AddLeaves(py::handle value, bool force_copy, LentValue* lent,
                       std::vector<Shape>* shapes) {
  if (py::isinstance<py::tuple>(value)) {
    std::vector<Shape> elements;
    for (py::handle element : py::reinterpret_borrow<py::tuple>(value)) {
      absl::Status status = AddLeaves(element, force_copy, lent, &elements);
      if (!status.ok()) return status;
    }
    shapes->push_back(Shape::Tuple(std::move(elements)));
    return absl::OkStatus();
  }
  py::array array = py::isinstance<py::array>(value)
                        ? py::reinterpret_borrow<py::array>(value)
                        : py::array(Numpy().attr("asarray")(value));
  absl::StatusOr<xla::PrimitiveType> type = PrimitiveTypeOf(array.dtype());
  if (!type.ok()) return type.status();
  if (force_copy || !CanLend(array)) {
    // np.array, not np.ascontiguousarray, which would make 0-d arrays 1-d.
    py::dtype native = array.dtype().attr("newbyteorder")("=");
    array =
        Numpy().attr("array")(array, py::arg("dtype") = native,
                              py::arg("order") = "C", py::arg("copy") = true);
  }
  std::vector<int64_t> dimensions(array.shape(), array.shape() + array.ndim());
  shapes->push_back(Shape::Array(*type, std::move(dimensions)));
  lent->leaf_data.push_back(array.data());
  lent->owners.push_back(std::move(array));
  return absl::OkStatus();
}

py::array ArrayView(const Literal& leaf) {
  const Shape& shape = leaf.shape();
  std::vector<py::ssize_t> dimensions(shape.dimensions().begin(),
                                      shape.dimensions().end());
  // The capsule owns a Literal sharing the bytes; the array keeps it alive.
  auto* owner = new Literal(leaf);
  py::capsule base(owner, [](void* p) { delete static_cast<Literal*>(p); });
  py::array array(DtypeOf(shape.element_type()), std::move(dimensions),
                  owner->untyped_data(), base);
  py::detail::array_proxy(array.ptr())->flags &=
      ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return array;
}

py::array BFloat16ToFloat32(const Literal& leaf) {
  const Shape& shape = leaf.shape();
  std::vector<py::ssize_t> dimensions(shape.dimensions().begin(),
                                      shape.dimensions().end());
  py::array_t<float> result(std::move(dimensions));
  const auto* bits = static_cast<const uint16_t*>(leaf.untyped_data());
  float* out = result.mutable_data();
  for (int64_t i = 0; i < shape.element_count(); ++i) {
    // bf16 is the upper half of an f32.
    const uint32_t word = static_cast<uint32_t>(bits[i]) << 16;
    std::memcpy(&out[i], &word, sizeof(word));
  }
  return std::move(result);
}

// fn(array) for each array of `shape`, nested in Python tuples as the shape
// nests them.
template <typename Fn>
py::object MapArrays(const Shape& shape, const Fn& fn) {
  if (!shape.IsTuple()) return fn(shape);
  py::tuple elements(shape.tuple_size());
  for (int64_t i = 0; i < shape.tuple_size(); ++i) {
    elements[i] = MapArrays(shape.tuple_shapes()[i], fn);
  }
  return std::move(elements);
}

}  // namespace

py::dtype BFloat16Dtype() {
  static const py::dtype* dtype = new py::dtype(Numpy().attr("dtype")(
      "<u2", py::arg("metadata") = py::dict(py::arg(kBFloat16MetadataKey) =
                                                kBFloat16MetadataValue)));
  return *dtype;
}

absl::StatusOr<xla::PrimitiveType> PrimitiveTypeOf(const py::dtype& dtype) {
  const int size = static_cast<int>(dtype.itemsize());
  switch (dtype.kind()) {
    case 'b':
      return xla::PRED;
    case 'i':
      if (size == 1) return xla::S8;
      if (size == 2) return xla::S16;
      if (size == 4) return xla::S32;
      if (size == 8) return xla::S64;
      break;
    case 'u':
      if (size == 1) return xla::U8;
      if (size == 2) return IsBFloat16(dtype) ? xla::BF16 : xla::U16;
      if (size == 4) return xla::U32;
      if (size == 8) return xla::U64;
      break;
    case 'f':
      if (size == 2) return xla::F16;
      if (size == 4) return xla::F32;
      if (size == 8) return xla::F64;
      break;
    case 'c':
      if (size == 8) return xla::C64;
      if (size == 16) return xla::C128;
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "numpy dtype ", py::str(py::handle(dtype)).cast<std::string>(),
      " has no TPU element type; use bool, (u)int8/16/32, float16/32, "
      "complex64, or softtpu.bfloat16 for bf16 bits"));
}

py::dtype DtypeOf(xla::PrimitiveType type) {
  switch (type) {
    case xla::PRED:
      return py::dtype("bool");
    case xla::S8:
      return py::dtype("int8");
    case xla::S16:
      return py::dtype("int16");
    case xla::S32:
      return py::dtype("int32");
    case xla::S64:
      return py::dtype("int64");
    case xla::U8:
      return py::dtype("uint8");
    case xla::U16:
      return py::dtype("uint16");
    case xla::U32:
      return py::dtype("uint32");
    case xla::U64:
      return py::dtype("uint64");
    case xla::F16:
      return py::dtype("float16");
    case xla::BF16:
      return BFloat16Dtype();
    case xla::F32:
      return py::dtype("float32");
    case xla::F64:
      return py::dtype("float64");
    case xla::C64:
      return py::dtype("complex64");
    case xla::C128:
      return py::dtype("complex128");
    default:
      // Buffers hold arrays only (CheckBufferShape); nothing else gets here.
      return py::dtype("void");
  }
}

absl::StatusOr<LentValue> LendPythonValue(py::handle value, bool force_copy) {
  LentValue lent;
  std::vector<Shape> shapes;
  absl::Status status = AddLeaves(value, force_copy, &lent, &shapes);
  if (!status.ok()) return status;
  lent.shape = std::move(shapes.front());
  return lent;
}

py::object LiteralToPython(const Literal& literal, bool bf16_as_float32) {
  if (literal.shape().IsTuple()) {
    py::tuple elements(literal.tuple_size());
    for (int64_t i = 0; i < literal.tuple_size(); ++i) {
      elements[i] = LiteralToPython(literal.element(i), bf16_as_float32);
    }
    return std::move(elements);
  }
  if (bf16_as_float32 && literal.shape().element_type() == xla::BF16) {
    return BFloat16ToFloat32(literal);
  }
  return ArrayView(literal);
}

py::object DimensionsTree(const Shape& shape) {
  return MapArrays(shape, [](const Shape& array) {
    py::tuple dimensions(array.rank());
    for (int64_t i = 0; i < array.rank(); ++i) {
      dimensions[i] = py::int_(array.dimensions(i));
    }
    return py::object(std::move(dimensions));
  });
}

py::object DtypeTree(const Shape& shape) {
  return MapArrays(shape, [](const Shape& array) {
    return py::object(DtypeOf(array.element_type()));
  });
}

}  // namespace tpu::python
