#include "tools/tpu_run/random_literal.h"

#include <cmath>
#include <complex>
#include <cstring>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "emulator/interpreter/narrow_codec.h"

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
  if (shape.IsToken()) return Literal::Zeros(shape);
  if (shape.IsTuple()) {
    // Leaf i of the tuple takes its own stream, so that adding a leaf does
    // not change the values of the others.
    std::vector<Literal> elements;
    SplitMix64 seeds(seed);
    for (const Shape& element : shape.tuple_shapes()) {
      absl::StatusOr<Literal> literal = RandomLiteral(element, seeds.Next());
      if (!literal.ok()) return literal.status();
      elements.push_back(*std::move(literal));
    }
    return Literal::Tuple(std::move(elements));
  }
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
    default: {
      const xla::PrimitiveType type = shape.element_type();
      using emulator::interpreter::EncodeF8;
      if (type == xla::S4) {
        Fill<uint8_t>(data, n, [&rng] { return (rng.Next() % 16) & 0xF; });
      } else if (type == xla::U4) {
        Fill<uint8_t>(data, n, small_unsigned);
      } else if (type == xla::F8E8M0FNU) {
        // Powers of two only: 1, 1/2, 1/4 or 1/8.
        Fill<uint8_t>(data, n, [&rng] {
          return EncodeF8(xla::F8E8M0FNU, std::ldexp(1.0, -(rng.Next() % 4)));
        });
      } else if (emulator::interpreter::IsNarrowFloat(type)) {
        Fill<uint8_t>(data, n,
                      [&rng, type] { return EncodeF8(type, rng.Eighth()); });
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "cannot make random values of type ", PrimitiveTypeName(type)));
      }
    }
  }
  return literal;
}

}  // namespace tpu
