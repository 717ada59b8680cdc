// Kernel family: dot with general dimension numbers, any operand/result
// element types (products in f32 for 16-bit floats, wrapping int32/int64 for
// integers), and the TPU-numerics option.

#include "emulator/interpreter/gemm.h"
#include "emulator/interpreter/gemm_routine.h"
#include "emulator/interpreter/operand_prep.h"

namespace tpu::emulator::interpreter {
namespace {

template <typename C>
const C* PrepareAny(const Eigen::ThreadPoolDevice* device, const Literal& in,
                    const std::vector<int64_t>& perm, OperandRounding rounding,
                    std::shared_ptr<AlignedBuffer>& storage) {
  return DispatchType(
      in.shape().element_type(),
      [&](auto tag) -> const C* {
        using S = typename decltype(tag)::type;
        if constexpr (kIsComplex<S> && !kIsComplex<C>) {
          return nullptr;  // rejected at compile time
        } else {
          return PrepareOperand<C, S>(device, in, perm, rounding, storage);
        }
      },
      []() -> const C* { return nullptr; });
}

struct DotPlan {
  Shape result;
  int64_t batch = 1, m = 1, n = 1, k = 1;
  std::vector<int64_t> lhs_perm, rhs_perm;
  bool lhs_transposed = false, rhs_transposed = false;
  // 0: exact; 1: bf16 operands (DEFAULT); 3: bf16x3 (HIGH).
  int tpu_passes = 0;
  // The library route of f32-accumulated products (compute type float).
  GemmRoutine routine;
};

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

std::vector<int64_t> Concat(std::initializer_list<std::vector<int64_t>> parts) {
  std::vector<int64_t> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

template <typename R>
std::unique_ptr<Kernel> MakeDotKernel(const DotPlan& plan) {
  using C = GemmType<R>;
  return MakeKernel(
      [plan](KernelContext& context,
             absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const Eigen::ThreadPoolDevice* device = context.device();
        Literal result = Literal::Uninitialized(plan.result);
        C* out;
        std::shared_ptr<AlignedBuffer> out_storage;
        if constexpr (std::is_same_v<C, R>) {
          out = static_cast<C*>(const_cast<void*>(result.untyped_data()));
        } else {
          out_storage =
              AlignedBuffer::Allocate(plan.result.element_count() * sizeof(C));
          out = static_cast<C*>(out_storage->data());
        }
        auto gemm = [&](OperandRounding lr, OperandRounding rr,
                        bool accumulate) {
          std::shared_ptr<AlignedBuffer> ls, rs;
          if constexpr (std::is_same_v<C, float>) {
            if (plan.routine.bf16_operands()) {
              // Both operands are bf16 and go to the library as they are.
              const bf16* a = PrepareOperand<bf16, bf16>(
                  device, *operands[0].value, plan.lhs_perm, lr, ls);
              const bf16* b = PrepareOperand<bf16, bf16>(
                  device, *operands[1].value, plan.rhs_perm, rr, rs);
              plan.routine.Run(device, a, b, out, accumulate);
              return;
            }
          }
          const C* a =
              PrepareAny<C>(device, *operands[0].value, plan.lhs_perm, lr, ls);
          const C* b =
              PrepareAny<C>(device, *operands[1].value, plan.rhs_perm, rr, rs);
          if constexpr (std::is_same_v<C, float>) {
            plan.routine.Run(device, a, b, out, accumulate);
          } else {
            BatchedGemm<C>(device, plan.batch, plan.m, plan.n, plan.k, a,
                           plan.lhs_transposed, b, plan.rhs_transposed, out,
                           accumulate);
          }
        };
        RunPrecisionPasses(plan.tpu_passes, gemm);
        if constexpr (!std::is_same_v<C, R>) {
          UnaryLoop(device, out,
                    static_cast<R*>(const_cast<void*>(result.untyped_data())),
                    plan.result.element_count(), 2, [](const C& v) {
                      if constexpr (std::is_same_v<R, bool>) {
                        return v != C(0);
                      } else {
                        return static_cast<R>(v);
                      }
                    });
        }
        return result;
      });
}

absl::Status CheckDims(const google::protobuf::RepeatedField<int64_t>& dims,
                       const Shape& shape, const char* what,
                       std::vector<bool>& used) {
  for (int64_t d : dims) {
    if (d < 0 || d >= shape.rank() || used[d]) {
      return Malformed(absl::StrCat(what, " dimension ", d,
                                    " is out of range or repeated for ",
                                    shape.ToString()));
    }
    used[d] = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileDot(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  if (absl::Status s = ExpectOperands(instruction, 2); !s.ok()) return s;
  const Shape& lhs = instruction.operand(0)->shape();
  const Shape& rhs = instruction.operand(1)->shape();
  if (absl::Status s = ExpectArray(lhs, "lhs"); !s.ok()) return s;
  if (absl::Status s = ExpectArray(rhs, "rhs"); !s.ok()) return s;
  if (absl::Status s = ExpectArray(instruction.shape(), "result"); !s.ok()) {
    return s;
  }
  const xla::DotDimensionNumbers& dn =
      instruction.proto().dot_dimension_numbers();
  if (dn.lhs_batch_dimensions_size() != dn.rhs_batch_dimensions_size() ||
      dn.lhs_contracting_dimensions_size() !=
          dn.rhs_contracting_dimensions_size()) {
    return Malformed(
        "dot needs as many lhs as rhs batch dimensions and as "
        "many lhs as rhs contracting dimensions");
  }
  std::vector<bool> lhs_used(lhs.rank()), rhs_used(rhs.rank());
  if (absl::Status s =
          CheckDims(dn.lhs_batch_dimensions(), lhs, "lhs batch", lhs_used);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDims(dn.lhs_contracting_dimensions(), lhs,
                                 "lhs contracting", lhs_used);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckDims(dn.rhs_batch_dimensions(), rhs, "rhs batch", rhs_used);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDims(dn.rhs_contracting_dimensions(), rhs,
                                 "rhs contracting", rhs_used);
      !s.ok()) {
    return s;
  }
  DotPlan plan;
  std::vector<int64_t> lb(dn.lhs_batch_dimensions().begin(),
                          dn.lhs_batch_dimensions().end());
  std::vector<int64_t> rb(dn.rhs_batch_dimensions().begin(),
                          dn.rhs_batch_dimensions().end());
  std::vector<int64_t> lc(dn.lhs_contracting_dimensions().begin(),
                          dn.lhs_contracting_dimensions().end());
  std::vector<int64_t> rc(dn.rhs_contracting_dimensions().begin(),
                          dn.rhs_contracting_dimensions().end());
  std::vector<int64_t> lf, rf, result_dims;
  for (size_t i = 0; i < lb.size(); ++i) {
    if (lhs.dimensions(lb[i]) != rhs.dimensions(rb[i])) {
      return Malformed(absl::StrCat("dot batch dimension sizes differ: ",
                                    lhs.ToString(), " vs ", rhs.ToString()));
    }
    plan.batch *= lhs.dimensions(lb[i]);
    result_dims.push_back(lhs.dimensions(lb[i]));
  }
  for (size_t i = 0; i < lc.size(); ++i) {
    if (lhs.dimensions(lc[i]) != rhs.dimensions(rc[i])) {
      return Malformed(absl::StrCat("dot contracting dimension sizes differ: ",
                                    lhs.ToString(), " vs ", rhs.ToString()));
    }
    plan.k *= lhs.dimensions(lc[i]);
  }
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (!lhs_used[d]) {
      lf.push_back(d);
      plan.m *= lhs.dimensions(d);
      result_dims.push_back(lhs.dimensions(d));
    }
  }
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (!rhs_used[d]) {
      rf.push_back(d);
      plan.n *= rhs.dimensions(d);
      result_dims.push_back(rhs.dimensions(d));
    }
  }
  const xla::PrimitiveType rt = instruction.shape().element_type();
  if (absl::Status s =
          ExpectResultShape(instruction, Shape::Array(rt, result_dims));
      !s.ok()) {
    return s;
  }
  if ((IsComplex(lhs.element_type()) || IsComplex(rhs.element_type())) &&
      !IsComplex(rt)) {
    return Malformed("dot of complex operands needs a complex result");
  }
  plan.result = instruction.shape();
  plan.lhs_perm = Concat({lb, lf, lc});
  if (!IsIdentity(plan.lhs_perm) && IsIdentity(Concat({lb, lc, lf}))) {
    plan.lhs_perm = Concat({lb, lc, lf});
    plan.lhs_transposed = true;
  }
  plan.rhs_perm = Concat({rb, rc, rf});
  if (!IsIdentity(plan.rhs_perm) && IsIdentity(Concat({rb, rf, rc}))) {
    plan.rhs_perm = Concat({rb, rf, rc});
    plan.rhs_transposed = true;
  }
  plan.tpu_passes =
      TpuPrecisionPasses(compiler.options().tpu_numerics, instruction,
                         lhs.element_type(), rhs.element_type(), rt);
  if (rt == xla::F32 || rt == xla::BF16 || rt == xla::F16) {  // float math
    plan.routine = GemmRoutine::Choose(
        GemmShape{plan.batch, plan.m, plan.n, plan.k, plan.lhs_transposed,
                  plan.rhs_transposed},
        lhs.element_type() == xla::BF16 && rhs.element_type() == xla::BF16);
  }
  return DispatchType(
      rt,
      [&](auto tag) -> absl::StatusOr<std::unique_ptr<Kernel>> {
        using R = typename decltype(tag)::type;
        if constexpr (std::is_same_v<R, bool>) {
          return UnsupportedType(instruction, rt);
        } else {
          return MakeDotKernel<R>(plan);
        }
      },
      [&]() -> absl::StatusOr<std::unique_ptr<Kernel>> {
        return UnsupportedType(instruction, rt);
      });
}

}  // namespace

void RegisterDotKernels(KernelRegistry& registry) {
  registry.Register("dot", &CompileDot);
}

}  // namespace tpu::emulator::interpreter
