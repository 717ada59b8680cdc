// Kernel family: compare (every direction; FLOAT, TOTALORDER, SIGNED,
// UNSIGNED), select and clamp.

#include <cstring>

#include "emulator/interpreter/elementwise_common.h"

namespace tpu::emulator::interpreter {
namespace {

enum class Dir { kEq, kNe, kLt, kLe, kGt, kGe };

// Maps a float to an integer whose signed order is IEEE totalOrder:
// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
template <typename T>
auto TotalOrderKey(T v) {
  if constexpr (std::is_same_v<T, double>) {
    int64_t bits;
    std::memcpy(&bits, &v, 8);
    return bits < 0 ? static_cast<int64_t>(bits ^ INT64_MAX) : bits;
  } else if constexpr (std::is_same_v<T, float>) {
    int32_t bits;
    std::memcpy(&bits, &v, 4);
    return bits < 0 ? static_cast<int32_t>(bits ^ INT32_MAX) : bits;
  } else {
    int16_t bits;
    std::memcpy(&bits, &v, 2);
    return bits < 0 ? static_cast<int16_t>(bits ^ INT16_MAX) : bits;
  }
}

template <Dir kDir, typename T>
bool CompareValues(const T& a, const T& b) {
  switch (kDir) {
    case Dir::kEq:
      return a == b;
    case Dir::kNe:
      return a != b;
    case Dir::kLt:
      return a < b;
    case Dir::kLe:
      return a <= b;
    case Dir::kGt:
      return a > b;
    case Dir::kGe:
      return a >= b;
  }
  return false;
}

template <Dir kDir, typename T, bool kTotal>
std::unique_ptr<Kernel> MakeCompare(const Shape& shape) {
  return MakeKernel(
      [shape](KernelContext& context,
              absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        Literal out = Literal::Uninitialized(shape);
        BinaryLoop(context.device(), operands[0].value->data<T>().data(),
                   operands[1].value->data<T>().data(),
                   static_cast<bool*>(const_cast<void*>(out.untyped_data())),
                   shape.element_count(), 1, [](const T& a, const T& b) {
                     if constexpr (kTotal) {
                       return CompareValues<kDir>(TotalOrderKey(a),
                                                  TotalOrderKey(b));
                     } else if constexpr (kIsComplex<T>) {
                       return kDir == Dir::kEq ? a == b : a != b;
                     } else {
                       using C = ComputeType<T>;
                       return CompareValues<kDir>(static_cast<C>(a),
                                                  static_cast<C>(b));
                     }
                   });
        return out;
      });
}

template <Dir kDir>
absl::StatusOr<std::unique_ptr<Kernel>> CompareForType(
    const HloInstruction& instruction, xla::PrimitiveType type, bool total) {
  const Shape& shape = instruction.shape();
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (kIsComplex<T>) {
          if (kDir != Dir::kEq && kDir != Dir::kNe) {
            return Malformed("complex numbers compare only with EQ and NE");
          }
          return MakeCompare<kDir, T, false>(shape);
        } else if constexpr (kIsFloat<T>) {
          if (total) return MakeCompare<kDir, T, true>(shape);
          return MakeCompare<kDir, T, false>(shape);
        } else {
          // Integers and pred: total order is the usual order.
          return MakeCompare<kDir, T, false>(shape);
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileCompare(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  if (absl::Status s = ExpectSameDimensions(instruction); !s.ok()) return s;
  const xla::PrimitiveType type =
      instruction.operand(0)->shape().element_type();
  if (instruction.operand(1)->shape().element_type() != type) {
    return Malformed("compare operands must have the same element type");
  }
  if (instruction.shape().element_type() != xla::PRED) {
    return Malformed(absl::StrCat("compare gives pred, not ",
                                  instruction.shape().ToString()));
  }
  const std::string& direction = instruction.proto().comparison_direction();
  const std::string& kind = instruction.proto().comparison_type();
  bool total = false;
  if (kind == "TOTALORDER") {
    total = true;
  } else if (!kind.empty() && kind != "FLOAT" && kind != "SIGNED" &&
             kind != "UNSIGNED" && kind != "PARTIALORDER") {
    return Malformed(absl::StrCat("unknown comparison type \"", kind, "\""));
  }
  if (direction == "EQ")
    return CompareForType<Dir::kEq>(instruction, type, total);
  if (direction == "NE")
    return CompareForType<Dir::kNe>(instruction, type, total);
  if (direction == "LT")
    return CompareForType<Dir::kLt>(instruction, type, total);
  if (direction == "LE")
    return CompareForType<Dir::kLe>(instruction, type, total);
  if (direction == "GT")
    return CompareForType<Dir::kGt>(instruction, type, total);
  if (direction == "GE")
    return CompareForType<Dir::kGe>(instruction, type, total);
  return Malformed(absl::StrCat("unknown comparison direction \"", direction,
                                "\" (expected EQ, NE, LT, LE, GT or GE)"));
}

// Copies width-byte elements: out[i] = pred[i or 0] ? a[i] : b[i].
template <typename W>
void SelectLoop(const Eigen::ThreadPoolDevice* device, const bool* pred,
                bool scalar_pred, const W* a, const W* b, W* out, int64_t n) {
  if (scalar_pred) {
    const W* src = pred[0] ? a : b;
    if (src != out) {
      ParallelFor(device, n, 1, [&](int64_t begin, int64_t end) {
        std::memcpy(out + begin, src + begin, (end - begin) * sizeof(W));
      });
    }
    return;
  }
  ParallelFor(device, n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = pred[i] ? a[i] : b[i];
  });
}

struct Bytes16 {
  uint64_t lo, hi;
};

absl::StatusOr<std::unique_ptr<Kernel>> CompileSelect(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 3); !s.ok()) return s;
  const Shape& pred = instruction.operand(0)->shape();
  const Shape& on_true = instruction.operand(1)->shape();
  const Shape& on_false = instruction.operand(2)->shape();
  if (!on_true.IsArray() || on_true != on_false) {
    return Malformed(
        absl::StrCat("select branches must be arrays of one "
                     "shape, got ",
                     on_true.ToString(), " and ", on_false.ToString()));
  }
  if (pred.element_type() != xla::PRED ||
      (pred.rank() != 0 && pred.dimensions() != on_true.dimensions())) {
    return Malformed(absl::StrCat("select predicate must be pred[] or pred ",
                                  "with the branches' dimensions, got ",
                                  pred.ToString()));
  }
  if (absl::Status s = ExpectResultShape(instruction, on_true); !s.ok()) {
    return s;
  }
  const Shape shape = instruction.shape();
  const bool scalar_pred = pred.rank() == 0;
  const int64_t width = ByteWidth(shape.element_type());
  return MakeKernel([shape, scalar_pred, width](
                        KernelContext& context,
                        absl::Span<const Operand> operands)
                        -> absl::StatusOr<Literal> {
    if (scalar_pred) {
      // Whole-array choice: share the chosen operand's bytes.
      return *operands[operands[0].value->data<bool>()[0] ? 1 : 2].value;
    }
    Literal out = OutputReusing(shape, operands, {1, 2});
    const bool* p = operands[0].value->data<bool>().data();
    const void* a = operands[1].value->untyped_data();
    const void* b = operands[2].value->untyped_data();
    void* o = const_cast<void*>(out.untyped_data());
    const int64_t n = shape.element_count();
    switch (width) {
      case 1:
        SelectLoop(context.device(), p, false, static_cast<const uint8_t*>(a),
                   static_cast<const uint8_t*>(b), static_cast<uint8_t*>(o), n);
        break;
      case 2:
        SelectLoop(context.device(), p, false, static_cast<const uint16_t*>(a),
                   static_cast<const uint16_t*>(b), static_cast<uint16_t*>(o),
                   n);
        break;
      case 4:
        SelectLoop(context.device(), p, false, static_cast<const uint32_t*>(a),
                   static_cast<const uint32_t*>(b), static_cast<uint32_t*>(o),
                   n);
        break;
      case 8:
        SelectLoop(context.device(), p, false, static_cast<const uint64_t*>(a),
                   static_cast<const uint64_t*>(b), static_cast<uint64_t*>(o),
                   n);
        break;
      default:
        SelectLoop(context.device(), p, false, static_cast<const Bytes16*>(a),
                   static_cast<const Bytes16*>(b), static_cast<Bytes16*>(o), n);
        break;
    }
    return out;
  });
}

// clamp(min, x, max) = min(max(x, min), max); min and max may be scalars.
absl::StatusOr<std::unique_ptr<Kernel>> CompileClamp(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 3); !s.ok()) return s;
  const Shape& x = instruction.operand(1)->shape();
  if (absl::Status s = ExpectArray(x, "clamp operand"); !s.ok()) return s;
  for (int i : {0, 2}) {
    const Shape& bound = instruction.operand(i)->shape();
    if (bound.element_type() != x.element_type() ||
        (bound.rank() != 0 && bound.dimensions() != x.dimensions())) {
      return Malformed(absl::StrCat("clamp bound ", bound.ToString(),
                                    " must be a scalar or match ",
                                    x.ToString()));
    }
  }
  if (absl::Status s = ExpectResultShape(instruction, x); !s.ok()) return s;
  const bool lo_scalar = instruction.operand(0)->shape().rank() == 0;
  const bool hi_scalar = instruction.operand(2)->shape().rank() == 0;
  const Shape shape = x;
  const xla::PrimitiveType type = x.element_type();
  return DispatchType(
      type,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using T = typename decltype(tag)::type;
        if constexpr (kIsComplex<T> || std::is_same_v<T, bool>) {
          return UnsupportedType(instruction, type);
        } else {
          return MakeKernel([=](KernelContext& context,
                                absl::Span<const Operand> operands)
                                -> absl::StatusOr<Literal> {
            Literal out = OutputReusing(shape, operands, {1});
            const T* lo = operands[0].value->data<T>().data();
            const T* v = operands[1].value->data<T>().data();
            const T* hi = operands[2].value->data<T>().data();
            T* o = static_cast<T*>(const_cast<void*>(out.untyped_data()));
            using C = ComputeType<T>;
            ParallelFor(context.device(), shape.element_count(), 2,
                        [&](int64_t begin, int64_t end) {
                          for (int64_t i = begin; i < end; ++i) {
                            const C l = static_cast<C>(lo[lo_scalar ? 0 : i]);
                            const C h = static_cast<C>(hi[hi_scalar ? 0 : i]);
                            C y = static_cast<C>(v[i]);
                            // NaN operands propagate, as with max/min.
                            y = (y > l || y != y) ? y : l;
                            y = (y < h || y != y) ? y : h;
                            o[i] = static_cast<T>(y);
                          }
                        });
            return out;
          });
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, type);
      });
}

}  // namespace

void RegisterCompareSelectKernels(KernelRegistry& registry) {
  registry.Register("compare", &CompileCompare);
  registry.Register("select", &CompileSelect);
  registry.Register("clamp", &CompileClamp);
}

}  // namespace tpu::emulator::interpreter
