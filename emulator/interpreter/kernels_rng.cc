// Kernel family: rng-bit-generator, rng and rng-get-and-update-state.
//
// rng-bit-generator follows XLA's RngBitGeneratorExpander and
// xla/hlo/builder/lib/prng.cc bit for bit. The state is u64[n]; state[0] is the
// key.
//  - RNG_THREE_FRY (state u64[2]): Threefry-2x32 with 20 rounds; key words
//    (lo, hi) of state[0], counter = state[1] + linear index. 64-bit outputs
//    are (hi << 32 | lo) of one block per element; 32-bit outputs split the
//    shape in two along its first even dimension (or its largest one), block
//    word 0 filling even and word 1 odd indices of that dimension; narrower
//    outputs truncate the 32-bit ones. New state: [key, state[1] + blocks].
//  - RNG_PHILOX (state u64[2] or u64[3]): Philox-4x32 with 10 rounds; the
//    128-bit counter is (state[1], state[2]) for u64[3], and (state[1],
//    state[0]) for u64[2] (XLA reverses the state); block i uses counter + i
//    and its four words fill four consecutive outputs (two 64-bit outputs per
//    block). New state: [key, counter + blocks] (only the low word for u64[2]).
//  - RNG_DEFAULT is RNG_PHILOX, as on XLA's CPU and GPU backends.
//
// A state longer than the algorithm reads (u64[3] and more for three_fry,
// u64[4] and more for philox) is accepted, as XLA's verifier accepts it: the
// words past the ones the algorithm uses are returned unchanged.
//
// rng (RNG_UNIFORM on [a, b), RNG_NORMAL with mean a and deviation b) runs as
// XLA's RngExpander rewrites it: a Philox-4x32-10 draw under a key that is
// constant per instruction, whose 128-bit counter comes from the program's
// RngState (rng_state.h), advanced on every execution by the number of
// 32-bit words the result needs (elements, twice that for 64-bit types).
// XLA's key mixes a random value per module; ours is derived from the
// instruction id, so a freshly compiled program replays the same sequence
// while successive executions (and loop iterations) draw new numbers. The
// bits are those rng-bit-generator(philox) gives for the state {key,
// counter}: 32-bit results take one word, f16/bf16 are drawn as f32 and
// rounded (XLA widens them), 64-bit results two words. Uniform floats are
// u * (b - a) + a with u the top mantissa bits over 2^mantissa, computed in
// the (widened) type; integers are a + bits mod (b - a) with wrapping
// arithmetic (b == a gives a + bits, as XLA's remainder by zero does);
// normal values are Box-Muller on uniforms: element i < h = ceil(n/2) takes
// sqrt(-2 ln u_i) cos(2 pi u_{h+i}) and element h + i the sine (in double).
//
// rng-get-and-update-state returns the RngState before it advances by its
// delta, as u64[2] (low word first).

#include <cmath>
#include <cstring>

#include "emulator/interpreter/elementwise_common.h"

namespace tpu::emulator::interpreter {
namespace {

constexpr uint32_t Lo(uint64_t v) { return static_cast<uint32_t>(v); }
constexpr uint32_t Hi(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
constexpr uint64_t Join(uint32_t lo, uint32_t hi) {
  return static_cast<uint64_t>(lo) | (static_cast<uint64_t>(hi) << 32);
}

uint32_t RotL(uint32_t v, int d) { return (v << d) | (v >> (32 - d)); }

// Threefry-2x32-20 of counter (x0, x1) under key (k0, k1).
std::array<uint32_t, 2> ThreeFry2x32(uint32_t x0, uint32_t x1, uint32_t k0,
                                     uint32_t k1) {
  static constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  x0 += ks[0];
  x1 += ks[1];
  for (int block = 0; block < 5; ++block) {
    for (int i = 0; i < 4; ++i) {
      x0 += x1;
      x1 = RotL(x1, kRot[(block % 2) * 4 + i]);
      x1 ^= x0;
    }
    x0 += ks[(block + 1) % 3];
    x1 += ks[(block + 2) % 3] + static_cast<uint32_t>(block + 1);
  }
  return {x0, x1};
}

// Philox-4x32-10 of counter c under key (k0, k1).
std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> c, uint32_t k0,
                                   uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(c[0]) * 0xD2511F53u;
    const uint64_t p1 = static_cast<uint64_t>(c[2]) * 0xCD9E8D57u;
    c = {Hi(p1) ^ c[1] ^ k0, Lo(p1), Hi(p0) ^ c[3] ^ k1, Lo(p0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

// 128-bit counter + delta, as (lo, hi).
std::array<uint64_t, 2> Add128(uint64_t lo, uint64_t hi, uint64_t delta) {
  const uint64_t sum = lo + delta;
  return {sum, sum < lo ? hi + 1 : hi};
}

std::array<uint32_t, 4> PhiloxBlock(uint64_t key, uint64_t lo, uint64_t hi,
                                    uint64_t i) {
  const auto c = Add128(lo, hi, i);
  return Philox4x32({Lo(c[0]), Hi(c[0]), Lo(c[1]), Hi(c[1])}, Lo(key), Hi(key));
}

struct BitGenPlan {
  xla::RandomAlgorithm algorithm;
  Shape state_shape, data_shape, result;
  int64_t width = 4;  // bytes per output element
};

void StoreBits(char* dst, int64_t index, int64_t width, uint64_t bits) {
  // Little-endian truncation to the element width.
  std::memcpy(dst + index * width, &bits, width);
}

std::unique_ptr<Kernel> MakeRngBitGenerator(BitGenPlan plan) {
  return MakeKernel(
      [plan](KernelContext& context,
             absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const uint64_t* state = operands[0].value->data<uint64_t>().data();
        const int64_t state_size = plan.state_shape.element_count();
        const uint64_t key = state[0];
        Literal new_state = Literal::Uninitialized(plan.state_shape);
        uint64_t* ns = static_cast<uint64_t*>(new_state.mutable_untyped_data());
        std::memcpy(ns, state, state_size * sizeof(uint64_t));
        Literal data = Literal::Uninitialized(plan.data_shape);
        char* dst = static_cast<char*>(data.mutable_untyped_data());
        const int64_t n = plan.data_shape.element_count();
        const int64_t w = plan.width;
        const Eigen::ThreadPoolDevice* device = context.device();
        if (plan.algorithm == xla::RNG_THREE_FRY) {
          const uint64_t counter = state[1];
          if (w == 8) {
            ParallelFor(device, n, 40, [&](int64_t begin, int64_t end) {
              for (int64_t i = begin; i < end; ++i) {
                const uint64_t c = counter + static_cast<uint64_t>(i);
                auto out = ThreeFry2x32(Lo(c), Hi(c), Lo(key), Hi(key));
                StoreBits(dst, i, 8, Join(out[0], out[1]));
              }
            });
            ns[1] = counter + static_cast<uint64_t>(n);
          } else {
            // Split along the first even dimension (else the largest) into
            // blocks covering index pairs (2h, 2h+1) of that dimension.
            const std::vector<int64_t>& dims = plan.data_shape.dimensions();
            int64_t split = -1;
            for (size_t d = 0; d < dims.size(); ++d) {
              if (dims[d] % 2 == 0) {
                split = d;
                break;
              }
            }
            if (split < 0) {
              for (size_t d = 0; d < dims.size(); ++d) {
                if (split < 0 || dims[d] > dims[split]) split = d;
              }
            }
            int64_t outer = 1, inner = 1, len = 1;
            if (split >= 0) {
              len = dims[split];
              for (int64_t d = 0; d < split; ++d) outer *= dims[d];
              for (size_t d = split + 1; d < dims.size(); ++d) inner *= dims[d];
            }
            const int64_t half = (len + 1) / 2;
            const int64_t blocks = outer * half * inner;
            ParallelFor(device, blocks, 40, [&](int64_t begin, int64_t end) {
              for (int64_t b = begin; b < end; ++b) {
                const uint64_t c = counter + static_cast<uint64_t>(b);
                auto out = ThreeFry2x32(Lo(c), Hi(c), Lo(key), Hi(key));
                const int64_t o = b / (half * inner);
                const int64_t h = (b / inner) % half;
                const int64_t i = b % inner;
                for (int64_t word = 0; word < 2; ++word) {
                  const int64_t j = 2 * h + word;
                  if (j >= len) continue;
                  StoreBits(dst, (o * len + j) * inner + i, w, out[word]);
                }
              }
            });
            ns[1] = counter + static_cast<uint64_t>(split < 0 ? 1 : blocks);
          }
        } else {  // Philox
          const bool three = state_size >= 3;
          const uint64_t lo = state[1];
          const uint64_t hi = three ? state[2] : state[0];
          const int64_t per_block = w == 8 ? 2 : 4;
          const int64_t blocks = (n + per_block - 1) / per_block;
          ParallelFor(device, blocks, 60, [&](int64_t begin, int64_t end) {
            for (int64_t b = begin; b < end; ++b) {
              auto out = PhiloxBlock(key, lo, hi, b);
              for (int64_t j = 0; j < per_block; ++j) {
                const int64_t i = b * per_block + j;
                if (i >= n) break;
                const uint64_t bits =
                    w == 8 ? Join(out[2 * j], out[2 * j + 1]) : out[j];
                StoreBits(dst, i, w, bits);
              }
            }
          });
          const auto next = Add128(lo, hi, static_cast<uint64_t>(blocks));
          ns[1] = next[0];
          if (three) ns[2] = next[1];
        }
        std::vector<Literal> parts;
        parts.push_back(std::move(new_state));
        parts.push_back(std::move(data));
        return Literal::Tuple(std::move(parts));
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileRngBitGenerator(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  BitGenPlan plan;
  plan.state_shape = instruction.operand(0)->shape();
  const Shape& result = instruction.shape();
  if (!result.IsTuple() || result.tuple_size() != 2 ||
      result.tuple_shapes()[0] != plan.state_shape ||
      !result.tuple_shapes()[1].IsArray()) {
    return Malformed(absl::StrCat(
        "rng-bit-generator must return (state, data) with the state's shape ",
        plan.state_shape.ToString(), ", got ", result.ToString()));
  }
  plan.data_shape = result.tuple_shapes()[1];
  plan.result = result;
  plan.algorithm = instruction.proto().rng_algorithm();
  if (plan.algorithm == xla::RNG_DEFAULT) plan.algorithm = xla::RNG_PHILOX;
  if (plan.algorithm != xla::RNG_THREE_FRY &&
      plan.algorithm != xla::RNG_PHILOX) {
    return Malformed(absl::StrCat("unknown rng_algorithm ",
                                  static_cast<int>(plan.algorithm)));
  }
  const Shape& st = plan.state_shape;
  // Three_fry reads the key and one counter word, philox the key and one or
  // two counter words; longer states pass their extra words through.
  if (!st.IsArray() || st.element_type() != xla::U64 || st.rank() != 1 ||
      st.dimensions(0) < 2) {
    return Malformed(
        absl::StrCat("rng-bit-generator state must be u64[n] with n >= 2, got ",
                     st.ToString()));
  }
  const xla::PrimitiveType t = plan.data_shape.element_type();
  if (t == xla::PRED || IsComplex(t)) {
    return UnsupportedType(instruction, t);
  }
  plan.width = ByteWidth(t);
  return MakeRngBitGenerator(std::move(plan));
}

// ---------------------------------------------------------------------------
// rng and rng-get-and-update-state

// u in [0, 1) from the top `mantissa` bits of `bits` (of `total` bits).
double UnitFromBits(uint64_t bits, int total, int mantissa) {
  const uint64_t top = bits >> (total - mantissa);
  return std::ldexp(static_cast<double>(top), -mantissa);
}

// The key of an rng instruction: a fixed mix of its id (SplitMix64's
// finalizer), so that distinct instructions draw unrelated streams.
uint64_t RngKey(int64_t id) {
  uint64_t z = static_cast<uint64_t>(id) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct RngPlan {
  Shape shape;
  xla::RandomDistribution distribution;
  uint64_t key = 0;
  RngState* state = nullptr;  // the executable's; outlives the kernel
};

// Word w of the Philox stream of (key, counter): block w / 4, word w % 4.
class PhiloxStream {
 public:
  PhiloxStream(uint64_t key, std::array<uint64_t, 2> counter)
      : key_(key), counter_(counter) {}
  uint32_t Word(int64_t w) const {
    return PhiloxBlock(key_, counter_[0], counter_[1], w / 4)[w % 4];
  }
  // 64 bits for element i of a 64-bit result (two consecutive words).
  uint64_t Wide(int64_t i) const {
    const auto block = PhiloxBlock(key_, counter_[0], counter_[1], i / 2);
    return Join(block[2 * (i % 2)], block[2 * (i % 2) + 1]);
  }

 private:
  uint64_t key_;
  std::array<uint64_t, 2> counter_;
};

template <typename T>
T UniformValue(const PhiloxStream& stream, int64_t i, T a, T b) {
  if constexpr (kIsInteger<T>) {
    using U = std::make_unsigned_t<T>;
    const U bits =
        static_cast<U>(sizeof(T) == 8 ? stream.Wide(i) : stream.Word(i));
    const U range = static_cast<U>(static_cast<U>(b) - static_cast<U>(a));
    const U dist = range == 0 ? bits : static_cast<U>(bits % range);
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + dist));
  } else if constexpr (std::is_same_v<T, double>) {
    return UnitFromBits(stream.Wide(i), 64, 52) * (b - a) + a;
  } else {
    // f16 and bf16 are drawn as f32, as XLA's RngExpander widens them.
    const float lo = static_cast<float>(a), hi = static_cast<float>(b);
    const float u = static_cast<float>(UnitFromBits(stream.Word(i), 32, 23));
    return static_cast<T>(u * (hi - lo) + lo);
  }
}

template <typename T>
double UnitOf(const PhiloxStream& stream, int64_t i) {
  if constexpr (std::is_same_v<T, double>) {
    return UnitFromBits(stream.Wide(i), 64, 52);
  } else {
    return UnitFromBits(stream.Word(i), 32, 23);
  }
}

template <typename T>
std::unique_ptr<Kernel> MakeRng(RngPlan plan) {
  return MakeKernel([plan](KernelContext& context,
                           absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    const T a = operands[0].value->data<T>()[0];
    const T b = operands[1].value->data<T>()[0];
    const int64_t n = plan.shape.element_count();
    const uint64_t delta = static_cast<uint64_t>(n) * (sizeof(T) == 8 ? 2 : 1);
    const PhiloxStream stream(plan.key, plan.state->GetAndAdd(delta));
    Literal out = Literal::Uninitialized(plan.shape);
    T* dst = static_cast<T*>(out.mutable_untyped_data());
    if (plan.distribution == xla::RNG_UNIFORM) {
      ParallelFor(context.device(), n, 80, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          dst[i] = UniformValue<T>(stream, i, a, b);
        }
      });
      return out;
    }
    if constexpr (kIsFloat<T>) {
      const int64_t half = (n + 1) / 2;
      const double mean = static_cast<double>(static_cast<ComputeType<T>>(a));
      const double sigma = static_cast<double>(static_cast<ComputeType<T>>(b));
      ParallelFor(context.device(), half, 160, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const double u1 = std::max(UnitOf<T>(stream, i), 1e-300);
          const double u2 = UnitOf<T>(stream, half + i);
          const double r = std::sqrt(-2.0 * std::log(u1));
          dst[i] = static_cast<T>(static_cast<ComputeType<T>>(
              mean + sigma * r * std::cos(2.0 * M_PI * u2)));
          if (half + i < n) {
            dst[half + i] = static_cast<T>(static_cast<ComputeType<T>>(
                mean + sigma * r * std::sin(2.0 * M_PI * u2)));
          }
        }
      });
    }
    return out;
  });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileRng(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  const Shape& shape = instruction.shape();
  if (absl::Status s = ExpectArray(shape, "rng result"); !s.ok()) return s;
  const xla::PrimitiveType t = shape.element_type();
  for (int i = 0; i < 2; ++i) {
    if (instruction.operand(i)->shape() != Shape::Scalar(t)) {
      return Malformed(absl::StrCat(
          "rng parameters must be ", Shape::Scalar(t).ToString(),
          " scalars, got ", instruction.operand(i)->shape().ToString()));
    }
  }
  RngPlan plan;
  plan.shape = shape;
  plan.distribution = instruction.proto().distribution();
  plan.key = RngKey(instruction.id());
  plan.state = &compiler.rng_state();
  if (plan.distribution != xla::RNG_UNIFORM &&
      plan.distribution != xla::RNG_NORMAL) {
    return Malformed(
        absl::StrCat("rng distribution must be RNG_UNIFORM or "
                     "RNG_NORMAL, got ",
                     static_cast<int>(plan.distribution)));
  }
  return DispatchType(
      t,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (kIsFloat<T>) {
          return MakeRng<T>(std::move(plan));
        } else if constexpr (kIsInteger<T>) {
          if (plan.distribution != xla::RNG_UNIFORM) {
            return UnsupportedType(instruction, t);
          }
          return MakeRng<T>(std::move(plan));
        } else {
          return UnsupportedType(instruction, t);
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, t);
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileRngGetAndUpdateState(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (absl::Status s = ExpectOperands(instruction, 0); !s.ok()) return s;
  const Shape shape = Shape::Array(xla::U64, {2});
  if (absl::Status s = ExpectResultShape(instruction, shape); !s.ok()) {
    return s;
  }
  // XLA adds the int64 delta zero-extended to 128 bits.
  const uint64_t delta = static_cast<uint64_t>(instruction.proto().delta());
  RngState* state = &compiler.rng_state();
  return MakeKernel(
      [state, delta](KernelContext&,
                     absl::Span<const Operand>) -> absl::StatusOr<Literal> {
        const std::array<uint64_t, 2> old = state->GetAndAdd(delta);
        return Literal::FromVector<uint64_t>(xla::U64, {2}, old);
      });
}

}  // namespace

void RegisterRngKernels(KernelRegistry& registry) {
  registry.Register("rng-bit-generator", &CompileRngBitGenerator);
  registry.Register("rng", &CompileRng);
  registry.Register("rng-get-and-update-state", &CompileRngGetAndUpdateState);
}

}  // namespace tpu::emulator::interpreter
