// Kernel family: ragged-dot(lhs, rhs, group_sizes), a dot whose lhs has one
// "ragged" dimension cut into consecutive groups by group_sizes (StableHLO's
// RaggedDotOp, which XLA implements). By the kind of the ragged dimension:
//   1. non-contracting (m): lhs [b,m,k], rhs [g,b,k,n] (one rhs group dim),
//      result [b,m,n]; row m uses the rhs of its group;
//   2. contracting (k): lhs [b,m,k], rhs [b,k,n], result [g,b,m,n]; result
//      j sums only the k of group j;
//   3. batch (b): lhs [b,m,k], rhs [b,k,n], result [b,m,n].
// group_sizes is [prefix..., g], prefix being the lhs batch dimensions and
// then (1) the non-contracting or (2) the contracting dimensions before the
// ragged one, or [g] for every position. Group j spans [s_j, s_j + size_j)
// with s_j the sum of the sizes before it; an index past every group
// contributes nothing (its result is 0). The result dimensions are: the
// group (mode 2), the batch dimensions, the lhs free dimensions, the rhs
// free dimensions, each in order.
//
// Computed in double for real types (rounded once to the result type); the
// loop is direct (one multiply-add per term), which is enough for what XLA's
// tests and JAX's MoE layers feed it on one core.

#include <algorithm>

#include "emulator/interpreter/kernel_util.h"

namespace tpu::emulator::interpreter {
namespace {

enum class RaggedMode { kNonContracting, kContracting, kBatch };

struct RaggedPlan {
  RaggedMode mode;
  Shape lhs, rhs, result;
  int64_t ragged = 0;      // the lhs ragged dimension
  int64_t rhs_group = -1;  // mode 1
  int64_t groups = 0;
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contract, rhs_contract;
  std::vector<int64_t> lhs_free, rhs_free;
  std::vector<int64_t> prefix;   // lhs dims indexing group_sizes rows
  bool broadcast_sizes = false;  // group_sizes is [g]
};

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Cumulative group starts per group_sizes row: starts[row * (g + 1) + j].
std::vector<int64_t> GroupStarts(const Literal& sizes, int64_t groups) {
  const int64_t rows = groups == 0 ? 0 : sizes.shape().element_count() / groups;
  std::vector<int64_t> starts(rows * (groups + 1));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t sum = 0;
    for (int64_t j = 0; j < groups; ++j) {
      starts[r * (groups + 1) + j] = sum;
      sum += std::max<int64_t>(0, ElementAsInt64(sizes, r * groups + j));
    }
    starts[r * (groups + 1) + groups] = sum;
  }
  return starts;
}

absl::StatusOr<Literal> RunRaggedDot(const RaggedPlan& plan,
                                     absl::Span<const Operand> operands) {
  const std::vector<double> lhs = ValuesAsDouble(*operands[0].value);
  const std::vector<double> rhs = ValuesAsDouble(*operands[1].value);
  const std::vector<int64_t> starts =
      GroupStarts(*operands[2].value, plan.groups);
  const std::vector<int64_t> lhs_strides =
      RowMajorStrides(plan.lhs.dimensions());
  const std::vector<int64_t> rhs_strides =
      RowMajorStrides(plan.rhs.dimensions());
  std::vector<int64_t> prefix_dims;
  for (int64_t d : plan.prefix) prefix_dims.push_back(plan.lhs.dimensions(d));
  const std::vector<int64_t> prefix_strides = RowMajorStrides(prefix_dims);
  std::vector<int64_t> contract_dims;
  for (int64_t d : plan.lhs_contract) {
    contract_dims.push_back(plan.lhs.dimensions(d));
  }
  int64_t contract_count = 1;
  for (int64_t d : contract_dims) contract_count *= d;

  std::vector<double> out(plan.result.element_count(), 0.0);
  std::vector<int64_t> o(plan.result.rank(), 0);
  std::vector<int64_t> li(plan.lhs.rank()), ri(plan.rhs.rank());
  std::vector<int64_t> c(contract_dims.size());
  for (size_t linear = 0; linear < out.size(); ++linear) {
    // Spread the result index over the operands' indices.
    size_t pos = 0;
    const int64_t target_group =
        plan.mode == RaggedMode::kContracting ? o[pos++] : -1;
    for (size_t i = 0; i < plan.lhs_batch.size(); ++i, ++pos) {
      li[plan.lhs_batch[i]] = o[pos];
      ri[plan.rhs_batch[i]] = o[pos];
    }
    for (int64_t d : plan.lhs_free) li[d] = o[pos++];
    for (int64_t d : plan.rhs_free) ri[d] = o[pos++];
    std::fill(c.begin(), c.end(), 0);
    double acc = 0;
    for (int64_t k = 0; k < contract_count; ++k) {
      for (size_t i = 0; i < c.size(); ++i) {
        li[plan.lhs_contract[i]] = c[i];
        ri[plan.rhs_contract[i]] = c[i];
      }
      int64_t row = 0;
      if (!plan.broadcast_sizes) {
        for (size_t i = 0; i < plan.prefix.size(); ++i) {
          row += li[plan.prefix[i]] * prefix_strides[i];
        }
      }
      const int64_t* s = starts.data() + row * (plan.groups + 1);
      const int64_t r = li[plan.ragged];
      const int64_t group =
          r >= s[plan.groups]
              ? -1
              : std::upper_bound(s, s + plan.groups + 1, r) - s - 1;
      bool use = group >= 0;
      if (plan.mode == RaggedMode::kContracting) use = group == target_group;
      if (plan.mode == RaggedMode::kNonContracting) ri[plan.rhs_group] = group;
      if (use) {
        int64_t lo = 0, ro = 0;
        for (size_t d = 0; d < li.size(); ++d) lo += li[d] * lhs_strides[d];
        for (size_t d = 0; d < ri.size(); ++d) ro += ri[d] * rhs_strides[d];
        acc += lhs[lo] * rhs[ro];
      }
      for (int64_t d = static_cast<int64_t>(c.size()) - 1; d >= 0; --d) {
        if (++c[d] < contract_dims[d]) break;
        c[d] = 0;
      }
    }
    out[linear] = acc;
    for (int64_t d = plan.result.rank() - 1; d >= 0; --d) {
      if (++o[d] < plan.result.dimensions(d)) break;
      o[d] = 0;
    }
  }
  return LiteralFromDoubles(plan.result, out);
}

// Checks the dimension numbers and fills the plan's dimension lists.
absl::Status PlanDimensions(const HloInstruction& instruction,
                            RaggedPlan& plan) {
  const xla::RaggedDotDimensionNumbers& rdn =
      instruction.proto().ragged_dot_dimension_numbers();
  const xla::DotDimensionNumbers& dn = rdn.dot_dimension_numbers();
  plan.lhs_batch.assign(dn.lhs_batch_dimensions().begin(),
                        dn.lhs_batch_dimensions().end());
  plan.rhs_batch.assign(dn.rhs_batch_dimensions().begin(),
                        dn.rhs_batch_dimensions().end());
  plan.lhs_contract.assign(dn.lhs_contracting_dimensions().begin(),
                           dn.lhs_contracting_dimensions().end());
  plan.rhs_contract.assign(dn.rhs_contracting_dimensions().begin(),
                           dn.rhs_contracting_dimensions().end());
  if (rdn.lhs_ragged_dimensions_size() != 1) {
    return Malformed("ragged-dot needs exactly one lhs ragged dimension");
  }
  plan.ragged = rdn.lhs_ragged_dimensions(0);
  auto in_range = [](const std::vector<int64_t>& dims, int64_t rank) {
    for (int64_t d : dims) {
      if (d < 0 || d >= rank) return false;
    }
    return true;
  };
  if (plan.lhs_batch.size() != plan.rhs_batch.size() ||
      plan.lhs_contract.size() != plan.rhs_contract.size() ||
      !in_range(plan.lhs_batch, plan.lhs.rank()) ||
      !in_range(plan.lhs_contract, plan.lhs.rank()) ||
      !in_range(plan.rhs_batch, plan.rhs.rank()) ||
      !in_range(plan.rhs_contract, plan.rhs.rank()) ||
      !in_range({plan.ragged}, plan.lhs.rank())) {
    return Malformed("ragged-dot dimension numbers are out of range");
  }
  for (size_t i = 0; i < plan.lhs_batch.size(); ++i) {
    if (plan.lhs.dimensions(plan.lhs_batch[i]) !=
        plan.rhs.dimensions(plan.rhs_batch[i])) {
      return Malformed("ragged-dot batch dimensions differ in size");
    }
  }
  for (size_t i = 0; i < plan.lhs_contract.size(); ++i) {
    if (plan.lhs.dimensions(plan.lhs_contract[i]) !=
        plan.rhs.dimensions(plan.rhs_contract[i])) {
      return Malformed("ragged-dot contracting dimensions differ in size");
    }
  }
  plan.mode = Contains(plan.lhs_batch, plan.ragged) ? RaggedMode::kBatch
              : Contains(plan.lhs_contract, plan.ragged)
                  ? RaggedMode::kContracting
                  : RaggedMode::kNonContracting;
  if (plan.mode == RaggedMode::kNonContracting) {
    if (rdn.rhs_group_dimensions_size() != 1) {
      return Malformed(
          "ragged-dot with a non-contracting ragged dimension needs one rhs "
          "group dimension");
    }
    plan.rhs_group = rdn.rhs_group_dimensions(0);
    if (plan.rhs_group < 0 || plan.rhs_group >= plan.rhs.rank() ||
        Contains(plan.rhs_batch, plan.rhs_group) ||
        Contains(plan.rhs_contract, plan.rhs_group)) {
      return Malformed("ragged-dot rhs group dimension is invalid");
    }
  } else if (rdn.rhs_group_dimensions_size() != 0) {
    return Malformed(
        "ragged-dot with a batch or contracting ragged dimension takes no rhs "
        "group dimension");
  }
  for (int64_t d = 0; d < plan.lhs.rank(); ++d) {
    if (!Contains(plan.lhs_batch, d) && !Contains(plan.lhs_contract, d)) {
      plan.lhs_free.push_back(d);
    }
  }
  for (int64_t d = 0; d < plan.rhs.rank(); ++d) {
    if (!Contains(plan.rhs_batch, d) && !Contains(plan.rhs_contract, d) &&
        d != plan.rhs_group) {
      plan.rhs_free.push_back(d);
    }
  }
  return absl::OkStatus();
}

// The group_sizes prefix dimensions and the result shape.
absl::Status PlanGroupsAndResult(const HloInstruction& instruction,
                                 RaggedPlan& plan) {
  const Shape& sizes = instruction.operand(2)->shape();
  if (!sizes.IsArray() || sizes.rank() < 1 ||
      !(IsSignedInteger(sizes.element_type()) ||
        IsUnsignedInteger(sizes.element_type()))) {
    return Malformed(
        absl::StrCat("ragged-dot group_sizes must be an integer array, got ",
                     sizes.ToString()));
  }
  plan.groups = sizes.dimensions(sizes.rank() - 1);
  plan.prefix = plan.lhs_batch;
  if (plan.mode == RaggedMode::kBatch) {
    plan.prefix.resize(
        std::find(plan.lhs_batch.begin(), plan.lhs_batch.end(), plan.ragged) -
        plan.lhs_batch.begin());
  } else if (plan.mode == RaggedMode::kContracting) {
    for (int64_t d : plan.lhs_contract) {
      if (d == plan.ragged) break;
      plan.prefix.push_back(d);
    }
  } else {
    for (int64_t d = 0; d < plan.ragged; ++d) {
      if (!Contains(plan.lhs_batch, d) && !Contains(plan.lhs_contract, d)) {
        plan.prefix.push_back(d);
      }
    }
  }
  plan.broadcast_sizes = sizes.rank() == 1;
  std::vector<int64_t> expect;
  for (int64_t d : plan.prefix) expect.push_back(plan.lhs.dimensions(d));
  expect.push_back(plan.groups);
  if (!plan.broadcast_sizes && sizes.dimensions() != expect) {
    return Malformed(absl::StrCat("ragged-dot group_sizes must be [",
                                  absl::StrJoin(expect, ","), "], got ",
                                  sizes.ToString()));
  }
  if (plan.mode == RaggedMode::kNonContracting &&
      plan.rhs.dimensions(plan.rhs_group) != plan.groups) {
    return Malformed(
        "ragged-dot rhs group dimension must have one entry per "
        "group");
  }
  std::vector<int64_t> dims;
  if (plan.mode == RaggedMode::kContracting) dims.push_back(plan.groups);
  for (int64_t d : plan.lhs_batch) dims.push_back(plan.lhs.dimensions(d));
  for (int64_t d : plan.lhs_free) dims.push_back(plan.lhs.dimensions(d));
  for (int64_t d : plan.rhs_free) dims.push_back(plan.rhs.dimensions(d));
  plan.result = Shape::Array(instruction.shape().element_type(), dims);
  return ExpectResultShape(instruction, plan.result);
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileRaggedDot(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 3); !s.ok()) return s;
  RaggedPlan plan;
  plan.lhs = instruction.operand(0)->shape();
  plan.rhs = instruction.operand(1)->shape();
  const Shape* shapes[] = {&plan.lhs, &plan.rhs, &instruction.shape()};
  for (const Shape* s : shapes) {
    if (absl::Status st = ExpectArray(*s, "ragged-dot operand or result");
        !st.ok()) {
      return st;
    }
    if (!IsFloatingPoint(s->element_type())) {
      return UnsupportedType(instruction, s->element_type());
    }
  }
  if (absl::Status s = PlanDimensions(instruction, plan); !s.ok()) return s;
  if (absl::Status s = PlanGroupsAndResult(instruction, plan); !s.ok()) {
    return s;
  }
  return MakeKernel([plan](KernelContext&, absl::Span<const Operand> operands) {
    return RunRaggedDot(plan, operands);
  });
}

}  // namespace

void RegisterRaggedDotKernels(KernelRegistry& registry) {
  registry.Register("ragged-dot", &CompileRaggedDot);
}

}  // namespace tpu::emulator::interpreter
