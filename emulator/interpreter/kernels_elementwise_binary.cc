// Kernel family: elementwise binary arithmetic and logic (add ... xor,
// shifts, power, atan2, complex), with XLA's integer edge cases.

#include "emulator/interpreter/elementwise_common.h"

namespace tpu::emulator::interpreter {

absl::Status ExpectSameDimensions(const HloInstruction& instruction) {
  for (const HloInstruction* operand : instruction.operands()) {
    if (absl::Status s = ExpectArray(operand->shape(), "operand"); !s.ok()) {
      return s;
    }
    if (operand->shape().dimensions() != instruction.shape().dimensions()) {
      return Malformed(absl::StrCat(
          "operand ", operand->name(), " has shape ",
          operand->shape().ToString(), " but the result is ",
          instruction.shape().ToString(),
          " (elementwise operands must have the result's dimensions)"));
    }
  }
  return ExpectArray(instruction.shape(), "result");
}

namespace {

enum class Bin {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kRem,
  kMax,
  kMin,
  kPow,
  kAtan2,
  kAnd,
  kOr,
  kXor,
  kShl,
  kShra,
  kShrl,
};

template <Bin kOp, typename T>
constexpr bool Supported() {
  constexpr bool is_bool = std::is_same_v<T, bool>;
  switch (kOp) {
    case Bin::kAdd:
    case Bin::kSub:
    case Bin::kMul:
    case Bin::kDiv:
    case Bin::kPow:
      return !is_bool;
    case Bin::kRem:
      return !is_bool && !kIsComplex<T>;
    case Bin::kMax:
    case Bin::kMin:
      return !kIsComplex<T>;
    case Bin::kAtan2:
      return kIsFloat<T> || kIsComplex<T>;
    case Bin::kAnd:
    case Bin::kOr:
    case Bin::kXor:
      return is_bool || kIsInteger<T>;
    case Bin::kShl:
    case Bin::kShra:
    case Bin::kShrl:
      return kIsInteger<T>;
  }
  return false;
}

template <typename T>
T IntPow(T base, T exponent) {
  if (exponent < 0) {
    // Only |base| == 1 has a non-zero integer result.
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (exponent & 1) ? T(-1) : T(1);
    }
    return 0;
  }
  using U = UnsignedOf<T>;
  U result = 1, b = static_cast<U>(base);
  U e = static_cast<U>(exponent);
  while (e != 0) {
    if (e & 1) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    e >>= 1;
  }
  return static_cast<T>(result);
}

template <Bin kOp, typename T>
struct BinaryFn {
  using C = ComputeType<T>;
  T operator()(T x, T y) const {
    if constexpr (std::is_same_v<T, bool>) {
      switch (kOp) {
        case Bin::kAnd:
        case Bin::kMin:
          return x && y;
        case Bin::kOr:
        case Bin::kMax:
          return x || y;
        default:  // kXor
          return x != y;
      }
    } else if constexpr (kIsInteger<T>) {
      using U = UnsignedOf<T>;
      constexpr int kBits = sizeof(T) * 8;
      const U ux = static_cast<U>(x), uy = static_cast<U>(y);
      switch (kOp) {
        case Bin::kAdd:
          return static_cast<T>(static_cast<U>(ux + uy));
        case Bin::kSub:
          return static_cast<T>(static_cast<U>(ux - uy));
        case Bin::kMul:
          return static_cast<T>(static_cast<U>(ux * uy));
        case Bin::kDiv:
          // XLA: x / 0 is -1 (all bits set); INT_MIN / -1 is INT_MIN.
          if (y == 0) return static_cast<T>(-1);
          if constexpr (std::is_signed_v<T>) {
            if (x == std::numeric_limits<T>::min() && y == -1) return x;
          }
          return static_cast<T>(x / y);
        case Bin::kRem:
          // XLA: x % 0 is x; INT_MIN % -1 is 0. Sign follows the dividend.
          if (y == 0) return x;
          if constexpr (std::is_signed_v<T>) {
            if (y == -1) return 0;
          }
          return static_cast<T>(x % y);
        case Bin::kMax:
          return x > y ? x : y;
        case Bin::kMin:
          return x < y ? x : y;
        case Bin::kPow:
          return IntPow<T>(x, y);
        case Bin::kAnd:
          return static_cast<T>(x & y);
        case Bin::kOr:
          return static_cast<T>(x | y);
        case Bin::kXor:
          return static_cast<T>(x ^ y);
        // Shifts as XLA's evaluator defines them: the amount is read as an
        // unsigned value of the element type, and an amount of at least the
        // bit width (so also any negative one) shifts every bit out: 0 for
        // the left and logical shifts, the sign fill for the arithmetic one.
        // The arithmetic shift reads the top bit as the sign in unsigned
        // types too (u8 200 >> 255 is 255).
        case Bin::kShl:
          return uy >= static_cast<U>(kBits)
                     ? T(0)
                     : static_cast<T>(static_cast<U>(ux << uy));
        case Bin::kShrl:
          return uy >= static_cast<U>(kBits)
                     ? T(0)
                     : static_cast<T>(static_cast<U>(ux >> uy));
        case Bin::kShra: {
          using S = std::make_signed_t<T>;
          const S sx = static_cast<S>(x);
          if (uy >= static_cast<U>(kBits)) return sx < 0 ? T(-1) : T(0);
          return static_cast<T>(static_cast<S>(sx >> uy));
        }
        default:
          return T(0);
      }
    } else if constexpr (kIsComplex<T>) {
      switch (kOp) {
        case Bin::kAdd:
          return x + y;
        case Bin::kSub:
          return x - y;
        case Bin::kMul:
          return x * y;
        case Bin::kDiv:
          return x / y;
        case Bin::kPow:
          if (x == T(0)) {
            return y == T(0) ? T(1) : T(0);
          }
          return std::pow(x, y);
        case Bin::kAtan2: {
          // XLA's definition for complex operands (its evaluator and
          // elemental emitter): -i * log((x + i y) / sqrt(x^2 + y^2)) with
          // y the first operand.
          const T i(0, 1);
          return -i * std::log((y + i * x) / std::sqrt(y * y + x * x));
        }
        default:
          return T(0);
      }
    } else {
      const C a = static_cast<C>(x), b = static_cast<C>(y);
      switch (kOp) {
        case Bin::kAdd:
          return static_cast<T>(a + b);
        case Bin::kSub:
          return static_cast<T>(a - b);
        case Bin::kMul:
          return static_cast<T>(a * b);
        case Bin::kDiv:
          return static_cast<T>(a / b);
        case Bin::kRem:
          return static_cast<T>(std::fmod(a, b));
        case Bin::kMax:
          // NaN propagates from either side.
          return static_cast<T>((a > b || a != a) ? a : b);
        case Bin::kMin:
          return static_cast<T>((a < b || a != a) ? a : b);
        case Bin::kPow:
          return static_cast<T>(std::pow(a, b));
        case Bin::kAtan2:
          return static_cast<T>(std::atan2(a, b));
        default:
          return T(0);
      }
    }
  }
};

template <Bin kOp, typename T>
std::unique_ptr<Kernel> MakeBinaryKernel(const Shape& shape) {
  constexpr double kCost =
      (kOp == Bin::kPow || kOp == Bin::kAtan2 || kOp == Bin::kRem) ? 40
      : (kOp == Bin::kDiv)                                         ? 8
                                                                   : 1;
  return MakeKernel(
      [shape](KernelContext& context,
              absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        Literal out = OutputReusing(shape, operands, {0, 1});
        BinaryLoop(context.device(), operands[0].value->data<T>().data(),
                   operands[1].value->data<T>().data(),
                   static_cast<T*>(const_cast<void*>(out.untyped_data())),
                   shape.element_count(), kCost, BinaryFn<kOp, T>());
        return out;
      });
}

template <Bin kOp>
absl::StatusOr<std::unique_ptr<Kernel>> CompileBinary(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  if (absl::Status s = ExpectSameDimensions(instruction); !s.ok()) return s;
  const xla::PrimitiveType type = instruction.shape().element_type();
  for (const HloInstruction* operand : instruction.operands()) {
    if (operand->shape().element_type() != type) {
      return Malformed(
          absl::StrCat("operand ", operand->name(), " has element type ",
                       PrimitiveTypeName(operand->shape().element_type()),
                       " but the result is ", PrimitiveTypeName(type)));
    }
  }
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (Supported<kOp, T>()) {
          return MakeBinaryKernel<kOp, T>(instruction.shape());
        } else {
          return UnsupportedType(instruction, type);
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

// complex(real, imag): f32 -> c64, f64 -> c128.
absl::StatusOr<std::unique_ptr<Kernel>> CompileComplex(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  if (absl::Status s = ExpectSameDimensions(instruction); !s.ok()) return s;
  const xla::PrimitiveType in = instruction.operand(0)->shape().element_type();
  const xla::PrimitiveType out = instruction.shape().element_type();
  if (instruction.operand(1)->shape().element_type() != in ||
      !((in == xla::F32 && out == xla::C64) ||
        (in == xla::F64 && out == xla::C128))) {
    return Malformed(absl::StrCat(
        "complex takes two f32 (-> c64) or two f64 (-> c128) operands, got ",
        instruction.operand(0)->shape().ToString(), ", ",
        instruction.operand(1)->shape().ToString(), " -> ",
        instruction.shape().ToString()));
  }
  const Shape shape = instruction.shape();
  auto make = [&](auto tag) {
    using R = typename decltype(tag)::type;
    return MakeKernel(
        [shape](KernelContext& context,
                absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
          Literal result = Literal::Uninitialized(shape);
          BinaryLoop(context.device(), operands[0].value->data<R>().data(),
                     operands[1].value->data<R>().data(),
                     static_cast<std::complex<R>*>(
                         const_cast<void*>(result.untyped_data())),
                     shape.element_count(), 1,
                     [](R a, R b) { return std::complex<R>(a, b); });
          return result;
        });
  };
  if (in == xla::F32) return make(TypeTag<float>{});
  return make(TypeTag<double>{});
}

}  // namespace

void RegisterElementwiseKernels(KernelRegistry& registry) {
  registry.Register("add", &CompileBinary<Bin::kAdd>);
  registry.Register("subtract", &CompileBinary<Bin::kSub>);
  registry.Register("multiply", &CompileBinary<Bin::kMul>);
  registry.Register("divide", &CompileBinary<Bin::kDiv>);
  registry.Register("remainder", &CompileBinary<Bin::kRem>);
  registry.Register("maximum", &CompileBinary<Bin::kMax>);
  registry.Register("minimum", &CompileBinary<Bin::kMin>);
  registry.Register("power", &CompileBinary<Bin::kPow>);
  registry.Register("atan2", &CompileBinary<Bin::kAtan2>);
  registry.Register("and", &CompileBinary<Bin::kAnd>);
  registry.Register("or", &CompileBinary<Bin::kOr>);
  registry.Register("xor", &CompileBinary<Bin::kXor>);
  registry.Register("shift-left", &CompileBinary<Bin::kShl>);
  registry.Register("shift-right-arithmetic", &CompileBinary<Bin::kShra>);
  registry.Register("shift-right-logical", &CompileBinary<Bin::kShrl>);
  registry.Register("complex", &CompileComplex);
  RegisterUnaryKernels(registry);
}

}  // namespace tpu::emulator::interpreter
