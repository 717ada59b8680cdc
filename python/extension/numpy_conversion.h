#ifndef SOFTWARE_TPU_PYTHON_EXTENSION_NUMPY_CONVERSION_H_
#define SOFTWARE_TPU_PYTHON_EXTENSION_NUMPY_CONVERSION_H_

// numpy arrays and Python tuples <-> TPU host values, without copying bytes
// where numpy allows it.
//
// Element types: bool <-> pred; int8/16/32 <-> s8/16/32; uint8/16/32 <->
// u8/16/32; float16 <-> f16; float32 <-> f32; complex64 <-> c64. bf16 travels
// as its raw bits in BFloat16Dtype(): uint16 marked by dtype metadata, so an
// array read back from a bf16 buffer goes back in as bf16. 64-bit numpy types
// map to s64/u64/f64/c128, which the client rejects with the reference
// client's guidance to convert to 32 bits.
//
// Thread safety: every function needs the GIL.

#include <vector>

#include "absl/status/statusor.h"
#include "hlo/literal.h"
#include "hlo/shape.h"
#include "proto/xla_data.pb.h"
#include "pybind11/numpy.h"
#include "pybind11/pybind11.h"

namespace tpu::python {

// uint16 with metadata {"softtpu_type": "bfloat16"}: bf16 raw bits.
pybind11::dtype BFloat16Dtype();

// INVALID_ARGUMENT for dtypes without a TPU element type (object, str...).
absl::StatusOr<xla::PrimitiveType> PrimitiveTypeOf(
    const pybind11::dtype& dtype);

// The dtype to_py returns for `type` (BFloat16Dtype() for bf16).
pybind11::dtype DtypeOf(xla::PrimitiveType type);

// A Python value lent to TpuBuffer::FromHostBuffers: the shape, where each
// array leaf's bytes are, and the arrays owning those bytes (the caller's
// own arrays when they are C-contiguous, aligned and native-endian;
// contiguous copies otherwise, or always with force_copy).
struct LentValue {
  Shape shape;
  std::vector<const void*> leaf_data;
  std::vector<pybind11::object> owners;
};

// Python tuples become TPU tuples (nested); anything else goes through
// numpy.asarray. INVALID_ARGUMENT for a leaf whose dtype has no TPU type.
absl::StatusOr<LentValue> LendPythonValue(pybind11::handle value,
                                          bool force_copy);

// Arrays for the array leaves of `literal`, nested in Python tuples. Each
// array is a read-only view of the literal's bytes (shared with the buffer's
// cached host copy, hence read-only) that keeps them alive; bf16 leaves come
// as BFloat16Dtype() raw bits, or as float32 copies if bf16_as_float32.
pybind11::object LiteralToPython(const Literal& literal, bool bf16_as_float32);

// The Python form of a shape: a tuple of dimensions for an array, a tuple of
// element forms for a tuple. Likewise DtypeTree gives dtypes.
pybind11::object DimensionsTree(const Shape& shape);
pybind11::object DtypeTree(const Shape& shape);

}  // namespace tpu::python

#endif  // SOFTWARE_TPU_PYTHON_EXTENSION_NUMPY_CONVERSION_H_
