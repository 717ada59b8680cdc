#ifndef SOFTWARE_TPU_TOOLS_TPU_RUN_NPY_H_
#define SOFTWARE_TPU_TOOLS_TPU_RUN_NPY_H_

// NumPy's .npy array files: format versions 1.0, 2.0 and 3.0, C order,
// little-endian (or byte-order-free) element types. Fortran-ordered arrays,
// big-endian element types and structured dtypes are rejected with an error
// that says how to re-save the file.
//
// Thread safety: plain functions and a value type.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tpu {

// A NumPy element type: kind 'b' (bool), 'i' (signed), 'u' (unsigned),
// 'f' (float) or 'c' (complex), and its size in bytes.
struct NpyDtype {
  char kind = 'f';
  int item_size = 4;

  // NumPy's name: "bool", "int32", "float16", "complex64", ...
  std::string Name() const;
  // The .npy descr: "|b1", "|u1", "<f4", "<c16", ...
  std::string Descr() const;
  bool operator==(const NpyDtype& other) const {
    return kind == other.kind && item_size == other.item_size;
  }
  bool operator!=(const NpyDtype& other) const { return !(*this == other); }
};

struct NpyArray {
  NpyDtype dtype;
  // Empty for a 0-d (scalar) array.
  std::vector<int64_t> shape;
  // The elements in C order, each little-endian.
  std::string data;

  int64_t element_count() const;
  // "(2, 3)", "(5,)", "()": the shape as NumPy prints it.
  std::string ShapeString() const;
};

// Parses the contents of a .npy file. INVALID_ARGUMENT names what is wrong
// (bad magic, unsupported version, malformed header, Fortran order, big
// endian, data size not matching the shape).
absl::StatusOr<NpyArray> ParseNpy(absl::string_view contents);

// Serializes as format 1.0 (2.0 when the header needs more than 64 KiB),
// header padded so the data starts 64-byte aligned, as NumPy writes it.
// REQUIRES: data.size() == element_count() * dtype.item_size.
std::string SerializeNpy(const NpyArray& array);

// File wrappers; errors name the path. NOT_FOUND for a missing file.
absl::StatusOr<NpyArray> ReadNpyFile(const std::string& path);
absl::Status WriteNpyFile(const std::string& path, const NpyArray& array);

}  // namespace tpu

#endif  // SOFTWARE_TPU_TOOLS_TPU_RUN_NPY_H_
