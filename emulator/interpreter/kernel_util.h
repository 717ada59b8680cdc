#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_KERNEL_UTIL_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_KERNEL_UTIL_H_

// Helpers shared by kernel families: element-type dispatch, parallel loops,
// output allocation with buffer reuse, shape-check messages.
//
// Thread safety: stateless functions.

#include <complex>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "emulator/interpreter/kernel.h"
#include "hlo/literal.h"
#include "hlo/shape.h"

namespace Eigen {
struct ThreadPoolDevice;
}

namespace tpu::emulator::interpreter {

using c64 = std::complex<float>;
using c128 = std::complex<double>;
using bf16 = Eigen::bfloat16;
using f16 = Eigen::half;

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename T>
constexpr bool kIsComplex = std::is_same_v<T, c64> || std::is_same_v<T, c128>;
template <typename T>
constexpr bool kIsFloat =
    std::is_same_v<T, float> || std::is_same_v<T, double> ||
    std::is_same_v<T, bf16> || std::is_same_v<T, f16>;
template <typename T>
constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
constexpr bool kIsSigned = kIsInteger<T>&& std::is_signed_v<T>;

// The C++ element type of an xla::PrimitiveType.
template <xla::PrimitiveType kType>
struct NativeOf;
#define TPU_NATIVE_OF(ENUM, T) \
  template <>                  \
  struct NativeOf<xla::ENUM> { \
    using type = T;            \
  };
TPU_NATIVE_OF(PRED, bool)
TPU_NATIVE_OF(S8, int8_t)
TPU_NATIVE_OF(S16, int16_t)
TPU_NATIVE_OF(S32, int32_t)
TPU_NATIVE_OF(S64, int64_t)
TPU_NATIVE_OF(U8, uint8_t)
TPU_NATIVE_OF(U16, uint16_t)
TPU_NATIVE_OF(U32, uint32_t)
TPU_NATIVE_OF(U64, uint64_t)
TPU_NATIVE_OF(F16, f16)
TPU_NATIVE_OF(BF16, bf16)
TPU_NATIVE_OF(F32, float)
TPU_NATIVE_OF(F64, double)
TPU_NATIVE_OF(C64, c64)
TPU_NATIVE_OF(C128, c128)
#undef TPU_NATIVE_OF

// Calls fn(TypeTag<T>{}) for the C++ type of `type`; `fallback()` for
// non-array types.
template <typename Fn, typename Fallback>
auto DispatchType(xla::PrimitiveType type, Fn&& fn, Fallback&& fallback)
    -> decltype(fallback()) {
  switch (type) {
#define TPU_CASE(ENUM) \
  case xla::ENUM:      \
    return fn(TypeTag<typename NativeOf<xla::ENUM>::type>{});
    TPU_CASE(PRED)
    TPU_CASE(S8)
    TPU_CASE(S16)
    TPU_CASE(S32)
    TPU_CASE(S64)
    TPU_CASE(U8)
    TPU_CASE(U16)
    TPU_CASE(U32)
    TPU_CASE(U64)
    TPU_CASE(F16)
    TPU_CASE(BF16)
    TPU_CASE(F32)
    TPU_CASE(F64)
    TPU_CASE(C64)
    TPU_CASE(C128)
#undef TPU_CASE
    default:
      return fallback();
  }
}

// UNIMPLEMENTED naming opcode and type (the caller adds the instruction).
absl::Status UnsupportedType(const HloInstruction& instruction,
                             xla::PrimitiveType type);
absl::Status Malformed(absl::string_view what);  // INVALID_ARGUMENT

// Checks operand count; INVALID_ARGUMENT otherwise.
absl::Status ExpectOperands(const HloInstruction& instruction, int64_t n);
// INVALID_ARGUMENT unless `shape` is an array.
absl::Status ExpectArray(const Shape& shape, absl::string_view what);
// INVALID_ARGUMENT unless the instruction's shape equals `expected`.
absl::Status ExpectResultShape(const HloInstruction& instruction,
                               const Shape& expected);

// Runs fn(begin, end) over [0, n) in parallel chunks on `device` (or inline
// when device is null or n is small). `cost_per_item` is in cycles.
void ParallelFor(const Eigen::ThreadPoolDevice* device, int64_t n,
                 double cost_per_item,
                 const std::function<void(int64_t, int64_t)>& fn);

// A kernel returning operand `index` as it is: values are immutable, so
// sharing the bytes is a correct copy.
std::unique_ptr<Kernel> MakeForwardKernel(int64_t index);
// A kernel returning tuple element `index` of operand 0.
std::unique_ptr<Kernel> MakeElementKernel(int64_t index);
// A kernel returning `value` on every run (sharing its bytes, which the
// shared count keeps any kernel from writing into).
std::unique_ptr<Kernel> MakeConstantKernel(Literal value);

// An output array of `shape`: the buffer of the first operand in `candidates`
// that is at its last use, uniquely owned and of the same byte size, else a
// fresh buffer. Only for kernels that read element i of the candidates before
// writing element i of the output.
Literal OutputReusing(const Shape& shape, absl::Span<const Operand> operands,
                      std::initializer_list<int> candidates);

// Row-major strides (in elements) of `dims`.
std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims);

// Copies an array of `out_dims` into `dst` where element (i0..in) comes from
// src + sum(i_d * src_strides[d]) (strides in elements; may be 0 or negative).
// Works for any element width.
void StridedCopy(const Eigen::ThreadPoolDevice* device, int64_t width,
                 absl::Span<const int64_t> out_dims, const void* src,
                 absl::Span<const int64_t> src_strides, void* dst);

// out = transpose(in) with out dim i = in dim perm[i].
void Transpose(const Eigen::ThreadPoolDevice* device, int64_t width,
               absl::Span<const int64_t> in_dims,
               absl::Span<const int64_t> perm, const void* src, void* dst);

// dst[sum(i_d * dst_strides[d])] = src[sum(i_d * src_strides[d])] for every
// index i of `dims` (strides in elements, any sign).
void CopyND(const Eigen::ThreadPoolDevice* device, int64_t width,
            const std::vector<int64_t>& dims, const char* src,
            const std::vector<int64_t>& src_strides, char* dst,
            const std::vector<int64_t>& dst_strides);

// Fills `n` elements of `width` bytes with `*value`.
void Fill(const Eigen::ThreadPoolDevice* device, int64_t width, int64_t n,
          const void* value, void* dst);

// The elements of a real (non-complex) array as doubles, and back (rounded
// once to the element type; integers saturate, NaN becomes 0, as convert
// does). For kernels that compute in double whatever the element type.
// REQUIRES: a real array type.
std::vector<double> ValuesAsDouble(const Literal& literal);
Literal LiteralFromDoubles(const Shape& shape, absl::Span<const double> values);

// Element `linear` (row-major) of an integer or pred array as int64 (u64
// values past INT64_MAX read as INT64_MAX).
int64_t ElementAsInt64(const Literal& literal, int64_t linear);
// A scalar integer literal of any integer type as int64.
inline int64_t ScalarAsInt64(const Literal& literal) {
  return ElementAsInt64(literal, 0);
}

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_KERNEL_UTIL_H_
