// Kernel family: stochastic-convert(operand, random), float to signed
// integer with stochastic rounding, as XLA's StochasticConvertDecomposer
// defines it (the only conversion XLA implements):
//   t = floor(|x|), f = |x| - t,
//   round up (t + 1) when random < convert<U>(f * 2^bits(U)),
//   negate when sign(x) < 0, then x <= MIN gives MIN and x >= MAX gives MAX.
// `random` has the operand's dimensions and the unsigned type of the
// operand's width (u16 for f16/bf16, u32 for f32, u64 for f64). The float
// steps are exact, so computing them in double changes nothing; NaN gives 0.

#include <cmath>

#include "emulator/interpreter/elementwise_common.h"

namespace tpu::emulator::interpreter {
namespace {

template <typename To, typename From, typename R>
To StochasticValue(From from, R random) {
  using C = ComputeType<From>;
  const double x = static_cast<double>(static_cast<C>(from));
  constexpr double kMin = static_cast<double>(std::numeric_limits<To>::min());
  constexpr double kMax = static_cast<double>(std::numeric_limits<To>::max());
  if (x <= kMin) return std::numeric_limits<To>::min();
  if (x >= kMax) return std::numeric_limits<To>::max();
  if (x != x) return To(0);
  const double magnitude = std::fabs(x);
  const double truncated = std::floor(magnitude);
  // f * 2^bits < 2^bits, so the conversion to R cannot overflow.
  const double fixed =
      std::ldexp(magnitude - truncated, static_cast<int>(sizeof(R) * 8));
  const R threshold = static_cast<R>(fixed);
  using U = std::make_unsigned_t<To>;
  U result = static_cast<U>(static_cast<To>(truncated));
  if (random < threshold) ++result;
  if (x < 0) result = static_cast<U>(U(0) - result);
  return static_cast<To>(result);
}

template <typename From, typename R>
absl::StatusOr<std::unique_ptr<Kernel>> MakeStochasticConvert(
    const HloInstruction& instruction) {
  const Shape shape = instruction.shape();
  const xla::PrimitiveType to = shape.element_type();
  return DispatchType(
      to,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using To = typename decltype(tag)::type;
        if constexpr (kIsSigned<To>) {
          return MakeKernel([shape](KernelContext& context,
                                    absl::Span<const Operand> operands)
                                -> absl::StatusOr<Literal> {
            Literal out = Literal::Uninitialized(shape);
            BinaryLoop(context.device(), operands[0].value->data<From>().data(),
                       operands[1].value->data<R>().data(),
                       static_cast<To*>(out.mutable_untyped_data()),
                       shape.element_count(), 8,
                       [](From x, R r) { return StochasticValue<To>(x, r); });
            return out;
          });
        } else {
          return absl::UnimplementedError(absl::StrCat(
              "stochastic-convert to ", PrimitiveTypeName(to),
              " is not defined: XLA converts floats to signed integers only"));
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, to);
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileStochasticConvert(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  if (absl::Status s = ExpectSameDimensions(instruction); !s.ok()) return s;
  const xla::PrimitiveType from =
      instruction.operand(0)->shape().element_type();
  const xla::PrimitiveType random =
      instruction.operand(1)->shape().element_type();
  const int64_t width = ByteWidth(from);
  const xla::PrimitiveType want = width == 2   ? xla::U16
                                  : width == 4 ? xla::U32
                                               : xla::U64;
  if (!IsFloatingPoint(from)) return UnsupportedType(instruction, from);
  if (random != want) {
    return Malformed(
        absl::StrCat("stochastic-convert of ", PrimitiveTypeName(from),
                     " takes random bits of type ", PrimitiveTypeName(want),
                     ", got ", PrimitiveTypeName(random)));
  }
  switch (from) {
    case xla::F16:
      return MakeStochasticConvert<f16, uint16_t>(instruction);
    case xla::BF16:
      return MakeStochasticConvert<bf16, uint16_t>(instruction);
    case xla::F32:
      return MakeStochasticConvert<float, uint32_t>(instruction);
    default:
      return MakeStochasticConvert<double, uint64_t>(instruction);
  }
}

}  // namespace

void RegisterStochasticConvertKernels(KernelRegistry& registry) {
  registry.Register("stochastic-convert", &CompileStochasticConvert);
}

}  // namespace tpu::emulator::interpreter
