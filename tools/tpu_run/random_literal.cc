#include "tools/tpu_run/random_literal.h"

#include <complex>
#include <cstring>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tpu {
namespace {

// SplitMix64: tiny, fast and identical everywhere.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // An integer in [-8, 8].
  int SmallSigned() { return static_cast<int>(Next() % 17) - 8; }
  // A multiple of 1/8 in [-1, 1].
  float Eighth() { return SmallSigned() / 8.0f; }

 private:
  uint64_t state_;
};

template <typename T, typename Gen>
void Fill(void* data, int64_t n, Gen gen) {
  T* out = static_cast<T*>(data);
  for (int64_t i = 0; i < n; ++i) {
    T value = gen();
    std::memcpy(&out[i], &value, sizeof(T));
  }
}

}  // namespace

absl::StatusOr<Literal> RandomLiteral(const Shape& shape, uint64_t seed) {
  if (!shape.IsArray()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot make random values for ", shape.ToString()));
  }
  Literal literal = Literal::Uninitialized(shape);
  SplitMix64 rng(seed);
  const int64_t n = shape.element_count();
  void* data = n == 0 ? nullptr : literal.mutable_untyped_data();
  if (n == 0) return literal;
  auto small = [&rng] { return rng.SmallSigned(); };
  auto small_unsigned = [&rng] { return static_cast<int>(rng.Next() % 9); };
  switch (shape.element_type()) {
    case xla::PRED:
      Fill<uint8_t>(data, n, [&rng] { return rng.Next() & 1; });
      break;
    case xla::S8:
      Fill<int8_t>(data, n, small);
      break;
    case xla::S16:
      Fill<int16_t>(data, n, small);
      break;
    case xla::S32:
      Fill<int32_t>(data, n, small);
      break;
    case xla::S64:
      Fill<int64_t>(data, n, small);
      break;
    case xla::U8:
      Fill<uint8_t>(data, n, small_unsigned);
      break;
    case xla::U16:
      Fill<uint16_t>(data, n, small_unsigned);
      break;
    case xla::U32:
      Fill<uint32_t>(data, n, small_unsigned);
      break;
    case xla::U64:
      Fill<uint64_t>(data, n, small_unsigned);
      break;
    case xla::F16:
      Fill<Eigen::half>(data, n, [&rng] { return Eigen::half(rng.Eighth()); });
      break;
    case xla::BF16:
      Fill<Eigen::bfloat16>(data, n,
                            [&rng] { return Eigen::bfloat16(rng.Eighth()); });
      break;
    case xla::F32:
      Fill<float>(data, n, [&rng] { return rng.Eighth(); });
      break;
    case xla::F64:
      Fill<double>(data, n, [&rng] { return double{rng.Eighth()}; });
      break;
    case xla::C64:
      Fill<std::complex<float>>(data, n, [&rng] {
        float re = rng.Eighth();
        return std::complex<float>(re, rng.Eighth());
      });
      break;
    case xla::C128:
      Fill<std::complex<double>>(data, n, [&rng] {
        double re = rng.Eighth();
        return std::complex<double>(re, rng.Eighth());
      });
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("cannot make random values of type ",
                       PrimitiveTypeName(shape.element_type())));
  }
  return literal;
}

}  // namespace tpu
