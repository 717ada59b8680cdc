// Kernel family: elementwise unary operations (negate ... tanh, popcnt, clz,
// is-finite, real/imag, reduce-precision).

#include "emulator/interpreter/elementwise_common.h"

namespace tpu::emulator::interpreter {
namespace {

enum class Un {
  kNeg,
  kAbs,
  kSign,
  kExp,
  kExpm1,
  kLog,
  kLog1p,
  kTanh,
  kSqrt,
  kRsqrt,
  kCbrt,
  kSin,
  kCos,
  kTan,
  kFloor,
  kCeil,
  kRoundAfz,
  kRoundEven,
  kLogistic,
  kErf,
  kNot,
  kPopcnt,
  kClz,
};

template <Un kOp, typename T>
constexpr bool Supported() {
  constexpr bool is_bool = std::is_same_v<T, bool>;
  switch (kOp) {
    case Un::kNeg:
    case Un::kAbs:
    case Un::kSign:
      return !is_bool;
    case Un::kExp:
    case Un::kExpm1:
    case Un::kLog:
    case Un::kLog1p:
    case Un::kTanh:
    case Un::kSqrt:
    case Un::kRsqrt:
    case Un::kSin:
    case Un::kCos:
    case Un::kTan:
    case Un::kLogistic:
      return kIsFloat<T> || kIsComplex<T>;
    case Un::kCbrt:
    case Un::kFloor:
    case Un::kCeil:
    case Un::kRoundAfz:
    case Un::kRoundEven:
    case Un::kErf:
      return kIsFloat<T>;
    case Un::kNot:
      return is_bool || kIsInteger<T>;
    case Un::kPopcnt:
    case Un::kClz:
      return kIsInteger<T>;
  }
  return false;
}

template <Un kOp, typename T>
struct UnaryFn {
  using C = ComputeType<T>;
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) {
      return !x;  // kNot
    } else if constexpr (kIsInteger<T>) {
      using U = UnsignedOf<T>;
      const U ux = static_cast<U>(x);
      switch (kOp) {
        case Un::kNeg:
          return static_cast<T>(static_cast<U>(U(0) - ux));
        case Un::kAbs:
          if constexpr (std::is_signed_v<T>) {
            // abs(INT_MIN) wraps to INT_MIN, as in XLA.
            return x < 0 ? static_cast<T>(static_cast<U>(U(0) - ux)) : x;
          }
          return x;
        case Un::kSign:
          if constexpr (std::is_signed_v<T>) {
            return static_cast<T>((x > 0) - (x < 0));
          }
          return static_cast<T>(x != 0);
        case Un::kNot:
          return static_cast<T>(~ux);
        case Un::kPopcnt:
          return static_cast<T>(
              __builtin_popcountll(static_cast<unsigned long long>(ux)));
        case Un::kClz: {
          constexpr int kBits = sizeof(T) * 8;
          if (ux == 0) return static_cast<T>(kBits);
          return static_cast<T>(
              __builtin_clzll(static_cast<unsigned long long>(ux)) -
              (64 - kBits));
        }
        default:
          return T(0);
      }
    } else if constexpr (kIsComplex<T>) {
      switch (kOp) {
        case Un::kNeg:
          return -x;
        case Un::kSign:
          return x == T(0) ? T(0) : x / std::abs(x);
        case Un::kExp:
          return std::exp(x);
        case Un::kExpm1:
          return std::exp(x) - T(1);
        case Un::kLog:
          return std::log(x);
        case Un::kLog1p:
          return std::log(T(1) + x);
        case Un::kTanh:
          return std::tanh(x);
        case Un::kSqrt:
          return std::sqrt(x);
        case Un::kRsqrt:
          return T(1) / std::sqrt(x);
        case Un::kSin:
          return std::sin(x);
        case Un::kCos:
          return std::cos(x);
        case Un::kTan:
          return std::tan(x);
        case Un::kLogistic:
          return T(1) / (T(1) + std::exp(-x));
        default:
          return T(0);
      }
    } else {
      const C a = static_cast<C>(x);
      switch (kOp) {
        case Un::kNeg:
          return static_cast<T>(-a);
        case Un::kAbs:
          return static_cast<T>(std::abs(a));
        case Un::kSign:
          if (a != a) return x;
          if (a == 0) return x;  // keeps the sign of zero
          return static_cast<T>(a > 0 ? C(1) : C(-1));
        case Un::kExp:
          return static_cast<T>(std::exp(a));
        case Un::kExpm1:
          return static_cast<T>(std::expm1(a));
        case Un::kLog:
          return static_cast<T>(std::log(a));
        case Un::kLog1p:
          return static_cast<T>(std::log1p(a));
        case Un::kTanh:
          return static_cast<T>(std::tanh(a));
        case Un::kSqrt:
          return static_cast<T>(std::sqrt(a));
        case Un::kRsqrt:
          return static_cast<T>(C(1) / std::sqrt(a));
        case Un::kCbrt:
          return static_cast<T>(std::cbrt(a));
        case Un::kSin:
          return static_cast<T>(std::sin(a));
        case Un::kCos:
          return static_cast<T>(std::cos(a));
        case Un::kTan:
          return static_cast<T>(std::tan(a));
        case Un::kFloor:
          return static_cast<T>(std::floor(a));
        case Un::kCeil:
          return static_cast<T>(std::ceil(a));
        case Un::kRoundAfz:
          return static_cast<T>(std::round(a));
        case Un::kRoundEven:
          return static_cast<T>(std::nearbyint(a));
        case Un::kLogistic:
          return static_cast<T>(C(1) / (C(1) + std::exp(-a)));
        case Un::kErf:
          return static_cast<T>(std::erf(a));
        default:
          return T(0);
      }
    }
  }
};

// Transcendentals on f32/f64 through Eigen's vectorized array functions.
template <Un kOp>
constexpr bool kHasEigenArrayOp =
    kOp == Un::kExp || kOp == Un::kLog || kOp == Un::kTanh ||
    kOp == Un::kSqrt || kOp == Un::kRsqrt || kOp == Un::kLog1p ||
    kOp == Un::kExpm1 || kOp == Un::kLogistic || kOp == Un::kSin ||
    kOp == Un::kCos || kOp == Un::kNeg || kOp == Un::kAbs;

template <Un kOp, typename T>
void EigenArrayOp(const T* in, T* out, int64_t n) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  Eigen::Map<const Array> x(in, n);
  Eigen::Map<Array> y(out, n);
  switch (kOp) {
    case Un::kExp:
      y = x.exp();
      break;
    case Un::kLog:
      y = x.log();
      break;
    case Un::kTanh:
      y = x.tanh();
      break;
    case Un::kSqrt:
      y = x.sqrt();
      break;
    case Un::kRsqrt:
      y = x.rsqrt();
      break;
    case Un::kLog1p:
      y = x.log1p();
      break;
    case Un::kExpm1:
      y = x.expm1();
      break;
    case Un::kLogistic:
      y = x.logistic();
      break;
    case Un::kSin:
      y = x.sin();
      break;
    case Un::kCos:
      y = x.cos();
      break;
    case Un::kNeg:
      y = -x;
      break;
    case Un::kAbs:
      y = x.abs();
      break;
    default:
      break;
  }
}

template <Un kOp, typename T>
std::unique_ptr<Kernel> MakeUnaryKernel(const Shape& shape) {
  return MakeKernel(
      [shape](KernelContext& context,
              absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        Literal out = OutputReusing(shape, operands, {0});
        const T* in = operands[0].value->data<T>().data();
        T* o = static_cast<T*>(const_cast<void*>(out.untyped_data()));
        const int64_t n = shape.element_count();
        if constexpr ((std::is_same_v<T, float> ||
                       std::is_same_v<T, double>)&&kHasEigenArrayOp<kOp>) {
          ParallelFor(context.device(), n, 10, [&](int64_t begin, int64_t end) {
            EigenArrayOp<kOp, T>(in + begin, o + begin, end - begin);
          });
        } else {
          UnaryLoop(context.device(), in, o, n, 20, UnaryFn<kOp, T>());
        }
        return out;
      });
}

template <Un kOp>
absl::StatusOr<std::unique_ptr<Kernel>> CompileUnary(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  if (absl::Status s = ExpectSameDimensions(instruction); !s.ok()) return s;
  const xla::PrimitiveType type =
      instruction.operand(0)->shape().element_type();
  xla::PrimitiveType result_type = type;
  if (kOp == Un::kAbs && IsComplex(type)) {
    result_type = type == xla::C64 ? xla::F32 : xla::F64;
  }
  if (instruction.shape().element_type() != result_type) {
    return Malformed(
        absl::StrCat(instruction.opcode(), " of ", PrimitiveTypeName(type),
                     " gives ", PrimitiveTypeName(result_type), ", not ",
                     PrimitiveTypeName(instruction.shape().element_type())));
  }
  if (kOp == Un::kAbs && IsComplex(type)) {
    const Shape shape = instruction.shape();
    auto make = [&](auto tag) {
      using R = typename decltype(tag)::type;
      return MakeKernel(
          [shape](
              KernelContext& context,
              absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
            Literal out = Literal::Uninitialized(shape);
            UnaryLoop(context.device(),
                      operands[0].value->data<std::complex<R>>().data(),
                      static_cast<R*>(const_cast<void*>(out.untyped_data())),
                      shape.element_count(), 10,
                      [](std::complex<R> v) { return std::abs(v); });
            return out;
          });
    };
    if (type == xla::C64) return make(TypeTag<float>{});
    return make(TypeTag<double>{});
  }
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (Supported<kOp, T>()) {
          return MakeUnaryKernel<kOp, T>(instruction.shape());
        } else {
          return UnsupportedType(instruction, type);
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

// real/imag: complex -> component; on floats real is the identity and imag
// is zero (XLA allows both).
template <bool kReal>
absl::StatusOr<std::unique_ptr<Kernel>> CompileComponent(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  if (absl::Status s = ExpectSameDimensions(instruction); !s.ok()) return s;
  const xla::PrimitiveType type =
      instruction.operand(0)->shape().element_type();
  xla::PrimitiveType result_type = type == xla::C64    ? xla::F32
                                   : type == xla::C128 ? xla::F64
                                                       : type;
  if (!IsComplex(type) && !IsFloatingPoint(type)) {
    return UnsupportedType(instruction, type);
  }
  if (instruction.shape().element_type() != result_type) {
    return Malformed(absl::StrCat(instruction.opcode(), " of ",
                                  PrimitiveTypeName(type), " gives ",
                                  PrimitiveTypeName(result_type)));
  }
  const Shape shape = instruction.shape();
  if (!IsComplex(type)) {
    return MakeKernel(
        [shape](KernelContext&,
                absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
          if (kReal) return *operands[0].value;
          return Literal::Zeros(shape);
        });
  }
  auto make = [&](auto tag) {
    using R = typename decltype(tag)::type;
    return MakeKernel(
        [shape](KernelContext& context,
                absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
          Literal out = Literal::Uninitialized(shape);
          UnaryLoop(context.device(),
                    operands[0].value->data<std::complex<R>>().data(),
                    static_cast<R*>(const_cast<void*>(out.untyped_data())),
                    shape.element_count(), 1, [](std::complex<R> v) {
                      return kReal ? v.real() : v.imag();
                    });
          return out;
        });
  };
  if (type == xla::C64) return make(TypeTag<float>{});
  return make(TypeTag<double>{});
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileIsFinite(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  if (absl::Status s = ExpectSameDimensions(instruction); !s.ok()) return s;
  const xla::PrimitiveType type =
      instruction.operand(0)->shape().element_type();
  if (instruction.shape().element_type() != xla::PRED) {
    return Malformed("is-finite gives pred");
  }
  const Shape shape = instruction.shape();
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (kIsFloat<T>) {
          return MakeKernel([shape](KernelContext& context,
                                    absl::Span<const Operand> operands)
                                -> absl::StatusOr<Literal> {
            Literal out = Literal::Uninitialized(shape);
            UnaryLoop(context.device(), operands[0].value->data<T>().data(),
                      static_cast<bool*>(const_cast<void*>(out.untyped_data())),
                      shape.element_count(), 1, [](T v) {
                        return static_cast<bool>(
                            std::isfinite(static_cast<ComputeType<T>>(v)));
                      });
            return out;
          });
        } else {
          return UnsupportedType(instruction, type);
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

// Rounds an f32/f64 value to `exponent_bits` and `mantissa_bits`, as XLA's
// reduce-precision: round to nearest even in the mantissa, overflow to inf,
// underflow (below the smallest normal) to signed zero, NaN stays NaN.
template <typename F, typename U>
F ReducePrecisionValue(F value, int exponent_bits, int mantissa_bits) {
  constexpr int kMantissa = std::numeric_limits<F>::digits - 1;
  constexpr int kBits = sizeof(F) * 8;
  constexpr int kExponent = kBits - 1 - kMantissa;
  U bits;
  std::memcpy(&bits, &value, sizeof(F));
  if (mantissa_bits < kMantissa) {
    const U last_mantissa_bit_mask = U(1) << (kMantissa - mantissa_bits);
    const U base_rounding_bias = (last_mantissa_bit_mask >> 1) - 1;
    const U x_last_mantissa_bit =
        (bits & last_mantissa_bit_mask) >> (kMantissa - mantissa_bits);
    const U x_rounding_bias = x_last_mantissa_bit + base_rounding_bias;
    const U truncation_mask = ~(last_mantissa_bit_mask - 1);
    bits = bits + x_rounding_bias;
    bits = bits & truncation_mask;
  }
  if (exponent_bits < kExponent) {
    const U sign_bit_mask = U(1) << (kBits - 1);
    const U exp_bits_mask = ((U(1) << kExponent) - 1) << kMantissa;
    const U exponent_bias = (U(1) << (kExponent - 1)) - 1;
    const U reduced_exponent_bias = (U(1) << (exponent_bits - 1)) - 1;
    const U reduced_max_exponent = exponent_bias + reduced_exponent_bias;
    const U reduced_min_exponent = exponent_bias - reduced_exponent_bias;
    const U x_exponent = bits & exp_bits_mask;
    const bool overflow = x_exponent > (reduced_max_exponent << kMantissa);
    const bool underflow = x_exponent <= (reduced_min_exponent << kMantissa);
    const U x_signed_zero = bits & sign_bit_mask;
    const U x_signed_inf = x_signed_zero | exp_bits_mask;
    bits = overflow ? x_signed_inf : (underflow ? x_signed_zero : bits);
  }
  F result;
  std::memcpy(&result, &bits, sizeof(F));
  if (value != value) {
    // NaN stays NaN (truncation could have cleared its payload).
    return mantissa_bits > 0 ? value : std::numeric_limits<F>::quiet_NaN();
  }
  return result;
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileReducePrecision(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  if (absl::Status s = ExpectSameDimensions(instruction); !s.ok()) return s;
  const xla::PrimitiveType type = instruction.shape().element_type();
  if (instruction.operand(0)->shape().element_type() != type) {
    return Malformed("reduce-precision keeps the element type");
  }
  const int exponent_bits = instruction.proto().exponent_bits();
  const int mantissa_bits = instruction.proto().mantissa_bits();
  if (exponent_bits < 1 || mantissa_bits < 0) {
    return Malformed(
        absl::StrCat("reduce-precision needs exponent_bits >= 1 "
                     "and mantissa_bits >= 0, got ",
                     exponent_bits, " and ", mantissa_bits));
  }
  const Shape shape = instruction.shape();
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (kIsFloat<T>) {
          return MakeKernel([=](KernelContext& context,
                                absl::Span<const Operand> operands)
                                -> absl::StatusOr<Literal> {
            Literal out = OutputReusing(shape, operands, {0});
            UnaryLoop(
                context.device(), operands[0].value->data<T>().data(),
                static_cast<T*>(const_cast<void*>(out.untyped_data())),
                shape.element_count(), 4, [=](T v) {
                  if constexpr (std::is_same_v<T, double>) {
                    return ReducePrecisionValue<double, uint64_t>(
                        v, exponent_bits, mantissa_bits);
                  } else {
                    return static_cast<T>(ReducePrecisionValue<float, uint32_t>(
                        static_cast<float>(v), exponent_bits, mantissa_bits));
                  }
                });
            return out;
          });
        } else {
          return UnsupportedType(instruction, type);
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

}  // namespace

void RegisterUnaryKernels(KernelRegistry& registry) {
  registry.Register("negate", &CompileUnary<Un::kNeg>);
  registry.Register("abs", &CompileUnary<Un::kAbs>);
  registry.Register("sign", &CompileUnary<Un::kSign>);
  registry.Register("exponential", &CompileUnary<Un::kExp>);
  registry.Register("exponential-minus-one", &CompileUnary<Un::kExpm1>);
  registry.Register("log", &CompileUnary<Un::kLog>);
  registry.Register("log-plus-one", &CompileUnary<Un::kLog1p>);
  registry.Register("tanh", &CompileUnary<Un::kTanh>);
  registry.Register("sqrt", &CompileUnary<Un::kSqrt>);
  registry.Register("rsqrt", &CompileUnary<Un::kRsqrt>);
  registry.Register("cbrt", &CompileUnary<Un::kCbrt>);
  registry.Register("sine", &CompileUnary<Un::kSin>);
  registry.Register("cosine", &CompileUnary<Un::kCos>);
  registry.Register("tan", &CompileUnary<Un::kTan>);
  registry.Register("floor", &CompileUnary<Un::kFloor>);
  registry.Register("ceil", &CompileUnary<Un::kCeil>);
  registry.Register("round-nearest-afz", &CompileUnary<Un::kRoundAfz>);
  registry.Register("round-nearest-even", &CompileUnary<Un::kRoundEven>);
  registry.Register("logistic", &CompileUnary<Un::kLogistic>);
  registry.Register("erf", &CompileUnary<Un::kErf>);
  registry.Register("not", &CompileUnary<Un::kNot>);
  registry.Register("popcnt", &CompileUnary<Un::kPopcnt>);
  registry.Register("count-leading-zeros", &CompileUnary<Un::kClz>);
  registry.Register("clz", &CompileUnary<Un::kClz>);
  registry.Register("real", &CompileComponent<true>);
  registry.Register("imag", &CompileComponent<false>);
  registry.Register("is-finite", &CompileIsFinite);
  registry.Register("reduce-precision", &CompileReducePrecision);
}

}  // namespace tpu::emulator::interpreter
