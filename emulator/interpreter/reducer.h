#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_REDUCER_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_REDUCER_H_

// Reduction computations the interpreter runs as typed loops instead of
// calling the computation per element: reduce, reduce-window and
// select-and-scatter share the recognizer and the combiners.

#include <memory>
#include <string>
#include <type_traits>

#include "emulator/interpreter/elementwise_common.h"
#include "hlo/hlo_module.h"

namespace tpu::emulator::interpreter {

enum class Red { kAdd, kMul, kMax, kMin, kAnd, kOr, kOther };

// Recognizes computations of the form ROOT = op(p0, p1) (either order) on
// scalars; anything else is kOther.
inline Red MatchReducer(const HloComputation& computation) {
  const HloInstruction* root = computation.root();
  if (computation.num_parameters() != 2 || root->operand_count() != 2) {
    return Red::kOther;
  }
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != "parameter" || b->opcode() != "parameter" || a == b) {
    return Red::kOther;
  }
  if (!root->shape().IsArray() || root->shape().rank() != 0) return Red::kOther;
  const std::string& op = root->opcode();
  if (op == "add") return Red::kAdd;
  if (op == "multiply") return Red::kMul;
  if (op == "maximum") return Red::kMax;
  if (op == "minimum") return Red::kMin;
  if (op == "and") return Red::kAnd;
  if (op == "or") return Red::kOr;
  return Red::kOther;
}

// The type reductions accumulate in: half floats widen to f32 and round once.
template <typename T>
using AccType =
    std::conditional_t<std::is_same_v<T, bf16> || std::is_same_v<T, f16>, float,
                       T>;

// One step of kOp with XLA's semantics: integer add/multiply wrap, float
// max/min propagate NaN, pred and/min/multiply are logical and.
template <Red kOp, typename C>
C Combine(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    if (kOp == Red::kAnd || kOp == Red::kMin || kOp == Red::kMul) return a && b;
    return a || b;
  } else if constexpr (kIsComplex<C>) {
    return kOp == Red::kMul ? a * b : a + b;
  } else if constexpr (kIsInteger<C>) {
    using U = UnsignedOf<C>;
    switch (kOp) {
      case Red::kAdd:
        return static_cast<C>(
            static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case Red::kMul:
        return static_cast<C>(
            static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case Red::kMax:
        return a > b ? a : b;
      case Red::kMin:
        return a < b ? a : b;
      case Red::kAnd:
        return a & b;
      default:
        return a | b;
    }
  } else {
    switch (kOp) {
      case Red::kAdd:
        return a + b;
      case Red::kMul:
        return a * b;
      case Red::kMax:
        return (a > b || a != a) ? a : b;
      default:
        return (a < b || a != a) ? a : b;
    }
  }
}

// Whether the typed loop for kOp exists for element type T (XLA would not
// let the others through the verifier; they fall back to calling).
template <Red kOp, typename T>
constexpr bool Supported() {
  if constexpr (std::is_same_v<T, bool>) {
    return kOp != Red::kAdd;  // or/and/max/min/mul on pred
  } else if constexpr (kIsComplex<T>) {
    return kOp == Red::kAdd || kOp == Red::kMul;
  } else if constexpr (kIsFloat<T>) {
    return kOp != Red::kAnd && kOp != Red::kOr;
  } else {
    return true;
  }
}

// The one place a runtime Red becomes a compile-time one: calls
// fn(std::integral_constant<Red, kOp>{}) for `kind`.
// REQUIRES: kind != Red::kOther.
template <typename Fn>
decltype(auto) WithReducer(Red kind, Fn&& fn) {
  switch (kind) {
    case Red::kAdd:
      return fn(std::integral_constant<Red, Red::kAdd>{});
    case Red::kMul:
      return fn(std::integral_constant<Red, Red::kMul>{});
    case Red::kMax:
      return fn(std::integral_constant<Red, Red::kMax>{});
    case Red::kMin:
      return fn(std::integral_constant<Red, Red::kMin>{});
    case Red::kAnd:
      return fn(std::integral_constant<Red, Red::kAnd>{});
    default:
      return fn(std::integral_constant<Red, Red::kOr>{});
  }
}

template <Red kOp>
bool HasTypedReducerFor(xla::PrimitiveType type) {
  return DispatchType(
      type,
      [](auto tag) { return Supported<kOp, typename decltype(tag)::type>(); },
      [] { return false; });
}

// Whether a typed loop exists for `kind` on element type `type`.
inline bool HasTypedReducer(Red kind, xla::PrimitiveType type) {
  if (kind == Red::kOther) return false;
  return WithReducer(kind, [&](auto op) {
    return HasTypedReducerFor<decltype(op)::value>(type);
  });
}

// Builds make(op_tag, type_tag), the typed-loop kernel of a reduction `kind`
// on `type`; UNIMPLEMENTED when no typed loop exists for the pair.
template <typename Make>
absl::StatusOr<std::unique_ptr<Kernel>> MakeTypedReducerKernel(
    const HloInstruction& instruction, Red kind, xla::PrimitiveType type,
    Make&& make) {
  using Result = absl::StatusOr<std::unique_ptr<Kernel>>;
  return WithReducer(kind, [&](auto op) -> Result {
    constexpr Red kOp = decltype(op)::value;
    return DispatchType(
        type,
        [&](auto tag) -> Result {
          if constexpr (Supported<kOp, typename decltype(tag)::type>()) {
            return make(op, tag);
          } else {
            return UnsupportedType(instruction, type);
          }
        },
        [&]() -> Result { return UnsupportedType(instruction, type); });
  });
}

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_REDUCER_H_
