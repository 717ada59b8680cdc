// Kernel family: convert (every pair of element types, with XLA's
// saturating float->int rule) and bitcast-convert.

#include "emulator/interpreter/elementwise_common.h"
#include "emulator/interpreter/narrow_types.h"

namespace tpu::emulator::interpreter {
namespace {

template <typename To, typename From>
To ConvertValue(const From& from) {
  if constexpr (std::is_same_v<To, From>) {
    return from;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (kIsComplex<From>) {
      return from != From(0);
    } else {
      return static_cast<ComputeType<From>>(from) != ComputeType<From>(0);
    }
  } else if constexpr (kIsComplex<To>) {
    using R = typename To::value_type;
    if constexpr (kIsComplex<From>) {
      return To(static_cast<R>(from.real()), static_cast<R>(from.imag()));
    } else {
      return To(static_cast<R>(static_cast<ComputeType<From>>(from)), R(0));
    }
  } else if constexpr (kIsComplex<From>) {
    // Only reachable if the factory allowed it; XLA rejects complex->real.
    return ConvertValue<To>(from.real());
  } else if constexpr (kIsInteger<To> && kIsFloat<From>) {
    // Saturating, NaN -> 0 (XLA's float->int conversion).
    using C = std::conditional_t<std::is_same_v<From, double>, double, float>;
    const C v = static_cast<C>(from);
    if (v != v) return To(0);
    constexpr C kMin = static_cast<C>(std::numeric_limits<To>::min());
    // 2^bits (or 2^(bits-1)) is exact in C; values at or above it saturate.
    constexpr C kLimit =
        static_cast<C>(std::numeric_limits<To>::max() / 2 + 1) * C(2);
    if (v <= kMin) return std::numeric_limits<To>::min();
    if (v >= kLimit) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else if constexpr (std::is_same_v<To, bf16> || std::is_same_v<To, f16>) {
    if constexpr (std::is_same_v<From, double>) {
      return static_cast<To>(static_cast<float>(from));
    } else {
      return static_cast<To>(static_cast<ComputeType<From>>(from));
    }
  } else {
    return static_cast<To>(static_cast<ComputeType<From>>(from));
  }
}

template <typename From>
absl::StatusOr<std::unique_ptr<Kernel>> ConvertFrom(
    const HloInstruction& instruction) {
  const Shape shape = instruction.shape();
  const xla::PrimitiveType to = shape.element_type();
  return DispatchType(
      to,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using To = typename decltype(tag)::type;
        if constexpr (kIsComplex<From> && !kIsComplex<To>) {
          return absl::UnimplementedError(absl::StrCat(
              "convert from ",
              PrimitiveTypeName(instruction.operand(0)->shape().element_type()),
              " to ", PrimitiveTypeName(to),
              " is not defined (take real or imag first)"));
        } else {
          return MakeKernel([shape](KernelContext& context,
                                    absl::Span<const Operand> operands)
                                -> absl::StatusOr<Literal> {
            if constexpr (std::is_same_v<To, From>) {
              return *operands[0].value;
            } else {
              Literal out = sizeof(To) == sizeof(From)
                                ? OutputReusing(shape, operands, {0})
                                : Literal::Uninitialized(shape);
              UnaryLoop(context.device(),
                        operands[0].value->data<From>().data(),
                        static_cast<To*>(const_cast<void*>(out.untyped_data())),
                        shape.element_count(), 2,
                        [](const From& v) { return ConvertValue<To>(v); });
              return out;
            }
          });
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, to);
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileConvert(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  if (absl::Status s = ExpectSameDimensions(instruction); !s.ok()) return s;
  const xla::PrimitiveType from =
      instruction.operand(0)->shape().element_type();
  if (IsNarrowType(from) || IsNarrowType(instruction.shape().element_type())) {
    return CompileNarrowConvert(instruction);
  }
  return DispatchType(
      from,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return ConvertFrom<typename decltype(tag)::type>(instruction);
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, from);
      });
}

// Same bytes, new type (and, between widths, one dimension more or less).
absl::StatusOr<std::unique_ptr<Kernel>> CompileBitcastConvert(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& in = instruction.operand(0)->shape();
  const Shape& out = instruction.shape();
  if (absl::Status s = ExpectArray(in, "operand"); !s.ok()) return s;
  if (absl::Status s = ExpectArray(out, "result"); !s.ok()) return s;
  // 4-bit types hold one element per byte here, so only bitcasts between
  // two of them keep the bits where a byte copy puts them.
  if (IsNarrowInt(in.element_type()) != IsNarrowInt(out.element_type())) {
    return absl::UnimplementedError(absl::StrCat(
        "bitcast-convert between ", PrimitiveTypeName(in.element_type()),
        " and ", PrimitiveTypeName(out.element_type()),
        " (4-bit and wider elements) is not supported"));
  }
  const int64_t in_width = ByteWidth(in.element_type());
  const int64_t out_width = ByteWidth(out.element_type());
  std::vector<int64_t> dims = in.dimensions();
  if (in_width > out_width) {
    dims.push_back(in_width / out_width);
  } else if (in_width < out_width) {
    if (dims.empty() || dims.back() != out_width / in_width) {
      return Malformed(
          absl::StrCat("bitcast-convert from ", in.ToString(), " to ",
                       PrimitiveTypeName(out.element_type()),
                       " needs a last dimension of ", out_width / in_width));
    }
    dims.pop_back();
  }
  if (absl::Status s = ExpectResultShape(
          instruction, Shape::Array(out.element_type(), dims));
      !s.ok()) {
    return s;
  }
  const Shape shape = out;
  return MakeKernel(
      [shape](KernelContext&,
              absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        return Literal::FromBuffer(shape, operands[0].value->buffer());
      });
}

}  // namespace

void RegisterConvertKernels(KernelRegistry& registry) {
  registry.Register("convert", &CompileConvert);
  registry.Register("bitcast-convert", &CompileBitcastConvert);
}

}  // namespace tpu::emulator::interpreter
