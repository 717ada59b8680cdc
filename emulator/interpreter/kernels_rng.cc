// Kernel family: rng-bit-generator and rng.
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
// rng (RNG_UNIFORM on [a, b) and RNG_NORMAL with mean a, deviation b) has no
// seed operand in HLO. SEED RULE: an rng instruction draws from Philox-4x32-10
// keyed by its HLO instruction id (the `id` field of its proto); element i of
// the result takes 32 (f16/bf16/f32 and 32-bit or narrower integers) or 64
// (f64, 64-bit integers) random bits from block counter i. The values depend
// only on the module, never on the run, the thread count or the replica: an
// rng inside a loop body yields the same values on every iteration. Uniform
// floats use the top mantissa-width bits as u in [0, 1) and return
// a + (b - a) * u; integers return a + bits mod (b - a) (a if b <= a); normal
// values are Box-Muller on two such uniforms (computed in double).

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
  const bool state_ok =
      st.IsArray() && st.element_type() == xla::U64 && st.rank() == 1 &&
      (plan.algorithm == xla::RNG_THREE_FRY
           ? st.dimensions(0) == 2
           : (st.dimensions(0) == 2 || st.dimensions(0) == 3));
  if (!state_ok) {
    return Malformed(absl::StrCat("rng-bit-generator state must be ",
                                  plan.algorithm == xla::RNG_THREE_FRY
                                      ? "u64[2] for three_fry"
                                      : "u64[2] or u64[3] for philox",
                                  ", got ", st.ToString()));
  }
  const xla::PrimitiveType t = plan.data_shape.element_type();
  if (t == xla::PRED || IsComplex(t)) {
    return UnsupportedType(instruction, t);
  }
  plan.width = ByteWidth(t);
  return MakeRngBitGenerator(std::move(plan));
}

// ---------------------------------------------------------------------------
// rng

// Bits for element i of an rng instruction (see SEED RULE above).
uint64_t RngBits(uint64_t seed, int64_t i, bool wide) {
  auto out = PhiloxBlock(seed, static_cast<uint64_t>(i), 0, 0);
  return wide ? Join(out[0], out[1]) : out[0];
}

// u in [0, 1) from the top `mantissa` bits of `bits` (of `total` bits).
double UnitFromBits(uint64_t bits, int total, int mantissa) {
  const uint64_t top = bits >> (total - mantissa);
  return std::ldexp(static_cast<double>(top), -mantissa);
}

template <typename T>
std::unique_ptr<Kernel> MakeRng(Shape shape, xla::RandomDistribution dist,
                                uint64_t seed) {
  return MakeKernel([shape, dist, seed](KernelContext& context,
                                        absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    const T a = operands[0].value->data<T>()[0];
    const T b = operands[1].value->data<T>()[0];
    Literal out = Literal::Uninitialized(shape);
    T* dst = static_cast<T*>(out.mutable_untyped_data());
    const int64_t n = shape.element_count();
    constexpr bool kWide = sizeof(T) == 8;
    ParallelFor(context.device(), n, 80, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        if constexpr (kIsInteger<T>) {
          using U = std::make_unsigned_t<T>;
          const U range = static_cast<U>(static_cast<U>(b) - static_cast<U>(a));
          const bool empty = b <= a;
          const U bits = static_cast<U>(RngBits(seed, i, kWide));
          dst[i] = empty ? a
                         : static_cast<T>(static_cast<U>(static_cast<U>(a) +
                                                         bits % range));
        } else {
          const int total = kWide ? 64 : 32;
          const int mantissa = std::is_same_v<T, double>  ? 52
                               : std::is_same_v<T, float> ? 23
                               : std::is_same_v<T, f16>   ? 10
                                                          : 7;
          const double lo = static_cast<double>(static_cast<ComputeType<T>>(a));
          const double hi = static_cast<double>(static_cast<ComputeType<T>>(b));
          if (dist == xla::RNG_UNIFORM) {
            const double u =
                UnitFromBits(RngBits(seed, i, kWide), total, mantissa);
            dst[i] =
                static_cast<T>(static_cast<ComputeType<T>>(lo + (hi - lo) * u));
          } else {
            // Box-Muller on words of the element's own block.
            auto words = PhiloxBlock(seed, static_cast<uint64_t>(i), 0, 0);
            const double u1 = std::max(
                std::ldexp(static_cast<double>(Join(words[0], words[1]) >> 11),
                           -53),
                1e-300);
            const double u2 = std::ldexp(
                static_cast<double>(Join(words[2], words[3]) >> 11), -53);
            const double z =
                std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
            dst[i] = static_cast<T>(static_cast<ComputeType<T>>(lo + hi * z));
          }
        }
      }
    });
    return out;
  });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileRng(
    const HloInstruction& instruction, KernelCompiler&) {
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
  const xla::RandomDistribution dist = instruction.proto().distribution();
  if (dist != xla::RNG_UNIFORM && dist != xla::RNG_NORMAL) {
    return Malformed(
        absl::StrCat("rng distribution must be RNG_UNIFORM or "
                     "RNG_NORMAL, got ",
                     static_cast<int>(dist)));
  }
  const uint64_t seed = static_cast<uint64_t>(instruction.id());
  return DispatchType(
      t,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (kIsFloat<T>) {
          return MakeRng<T>(shape, dist, seed);
        } else if constexpr (kIsInteger<T>) {
          if (dist != xla::RNG_UNIFORM) return UnsupportedType(instruction, t);
          return MakeRng<T>(shape, dist, seed);
        } else {
          return UnsupportedType(instruction, t);
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, t);
      });
}

}  // namespace

void RegisterRngKernels(KernelRegistry& registry) {
  registry.Register("rng-bit-generator", &CompileRngBitGenerator);
  registry.Register("rng", &CompileRng);
}

}  // namespace tpu::emulator::interpreter
