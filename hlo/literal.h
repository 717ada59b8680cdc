#ifndef SOFTWARE_TPU_HLO_LITERAL_H_
#define SOFTWARE_TPU_HLO_LITERAL_H_

// Host values: dense row-major arrays and nested tuples of them.
//
// Array bytes live in a 64-byte aligned AlignedBuffer shared between copies:
// copying a Literal is cheap and shares the bytes; the mutable_* accessors
// first make the bytes unique (copy on write). This lets HBM buffers, program
// arguments and results move between the emulator and the interpreter without
// copying.
//
// Element C++ types: bool (pred), int8_t..int64_t, uint8_t..uint64_t,
// Eigen::half (f16), Eigen::bfloat16 (bf16), float, double,
// std::complex<float> (c64), std::complex<double> (c128).
//
// Thread safety: thread-compatible. Concurrent const access is safe, also
// across copies sharing bytes; a mutable_* call needs exclusive access to
// that Literal object.

#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hlo/aligned_buffer.h"
#include "hlo/shape.h"
#include "proto/xla_data.pb.h"

namespace tpu {

class Literal {
 public:
  // An empty tuple.
  Literal();

  // Arrays (and tuples of arrays) with every byte zero.
  static Literal Zeros(const Shape& shape);
  // Arrays with unspecified contents, for outputs about to be overwritten.
  static Literal Uninitialized(const Shape& shape);
  // Adopts `bytes` as the contents of an array of `shape`.
  // INVALID_ARGUMENT unless shape is an array and bytes->size() ==
  // shape.ByteSize().
  static absl::StatusOr<Literal> FromBuffer(
      const Shape& shape, std::shared_ptr<AlignedBuffer> bytes);
  static Literal Tuple(std::vector<Literal> elements);

  // A rank-N array from `values` in row-major order.
  // REQUIRES: values.size() == product(dimensions) and T matches `type`'s
  // C++ element type (see above).
  template <typename T>
  static Literal FromVector(xla::PrimitiveType type,
                            std::vector<int64_t> dimensions,
                            absl::Span<const T> values);

  // Reads XLA's LiteralProto (values in the typed repeated fields, f16/bf16
  // and s8/u8 etc. in the bytes fields, little-endian). INVALID_ARGUMENT if
  // the value count does not match the shape. Honors a non-default layout's
  // minor_to_major by transposing into row-major.
  static absl::StatusOr<Literal> FromProto(const xla::LiteralProto& proto);
  xla::LiteralProto ToProto() const;

  const Shape& shape() const { return shape_; }

  // Arrays only.
  int64_t size_bytes() const;
  const void* untyped_data() const;
  void* mutable_untyped_data();
  template <typename T>
  absl::Span<const T> data() const {
    return absl::MakeConstSpan(static_cast<const T*>(untyped_data()),
                               shape_.element_count());
  }
  template <typename T>
  absl::Span<T> mutable_data() {
    return absl::MakeSpan(static_cast<T*>(mutable_untyped_data()),
                          shape_.element_count());
  }
  // The shared bytes (nullptr for tuples and tokens).
  const std::shared_ptr<AlignedBuffer>& buffer() const { return buffer_; }

  // Tuples only.
  int64_t tuple_size() const { return static_cast<int64_t>(elements_.size()); }
  const Literal& element(int64_t i) const { return elements_[i]; }
  Literal& mutable_element(int64_t i) { return elements_[i]; }
  std::vector<Literal> DecomposeTuple() &&;

  // The array leaves in order, as ForEachLeaf on the shape visits them.
  std::vector<Literal> Leaves() const;

  // "f32[2,2] {{1, 2}, {3, 4}}"; long arrays are abbreviated.
  std::string ToString() const;

  // Same shape and same bytes.
  bool operator==(const Literal& other) const;
  bool operator!=(const Literal& other) const { return !(*this == other); }

 private:
  Shape shape_;
  std::shared_ptr<AlignedBuffer> buffer_;
  std::vector<Literal> elements_;
};

}  // namespace tpu

#endif  // SOFTWARE_TPU_HLO_LITERAL_H_
