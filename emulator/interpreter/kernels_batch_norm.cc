// Kernel family: batch-norm-training, batch-norm-inference, batch-norm-grad
// (operation_semantics.md), computed in double and rounded once to the
// element type (f16, bf16, f32, f64). With N the elements per feature,
// mu = mean(x), var = mean((x - mu)^2) (biased), s = sqrt(var + epsilon):
//   training:  y = (x - mu) / s * scale + offset; returns (y, mu, var)
//   inference: y = (x - mean) / sqrt(variance + epsilon) * scale + offset
//   grad:      grad_offset = sum(dy), grad_scale = sum(dy * (x - mu)) / s,
//              dx = scale / s * (dy - mean(dy) - (x - mu) *
//                   mean(dy * (x - mu)) / (var + epsilon))

#include <cmath>

#include "emulator/interpreter/elementwise_common.h"

namespace tpu::emulator::interpreter {
namespace {

enum class BatchNorm { kTraining, kInference, kGrad };

struct BatchNormPlan {
  BatchNorm kind;
  Shape operand;
  int64_t features = 0;  // C, the size of feature_index
  int64_t inner = 1;     // elements after the feature dimension
  double epsilon = 0;
};

// Per-feature view of an operand laid out [outer, C, inner].
struct FeatureLayout {
  int64_t features, inner, count;
  int64_t Feature(int64_t i) const { return (i / inner) % features; }
};

// Per-feature means of `values`.
std::vector<double> FeatureMeans(const FeatureLayout& layout,
                                 const std::vector<double>& values) {
  std::vector<double> sum(layout.features, 0.0);
  for (int64_t i = 0; i < layout.count; ++i) {
    sum[layout.Feature(i)] += values[i];
  }
  const double per_feature =
      static_cast<double>(layout.count) / std::max<int64_t>(layout.features, 1);
  for (double& s : sum) s = per_feature > 0 ? s / per_feature : 0.0;
  return sum;
}

absl::StatusOr<Literal> RunBatchNorm(const BatchNormPlan& plan,
                                     absl::Span<const Operand> operands) {
  const FeatureLayout layout{plan.features, plan.inner,
                             plan.operand.element_count()};
  const Shape feature_shape =
      Shape::Array(plan.operand.element_type(), {plan.features});
  const std::vector<double> x = ValuesAsDouble(*operands[0].value);
  const std::vector<double> scale = ValuesAsDouble(*operands[1].value);
  std::vector<double> mean, var;
  if (plan.kind == BatchNorm::kTraining) {
    mean = FeatureMeans(layout, x);
    std::vector<double> sq(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double d = x[i] - mean[layout.Feature(i)];
      sq[i] = d * d;
    }
    var = FeatureMeans(layout, sq);
  } else {
    const int mean_operand = plan.kind == BatchNorm::kInference ? 3 : 2;
    mean = ValuesAsDouble(*operands[mean_operand].value);
    var = ValuesAsDouble(*operands[mean_operand + 1].value);
  }
  std::vector<double> inv_std(plan.features);
  for (int64_t c = 0; c < plan.features; ++c) {
    inv_std[c] = 1.0 / std::sqrt(var[c] + plan.epsilon);
  }
  std::vector<double> y(x.size());
  if (plan.kind != BatchNorm::kGrad) {
    const std::vector<double> offset = ValuesAsDouble(*operands[2].value);
    for (size_t i = 0; i < x.size(); ++i) {
      const int64_t c = layout.Feature(i);
      y[i] = (x[i] - mean[c]) * inv_std[c] * scale[c] + offset[c];
    }
    Literal out = LiteralFromDoubles(plan.operand, y);
    if (plan.kind == BatchNorm::kInference) return out;
    std::vector<Literal> parts;
    parts.push_back(std::move(out));
    parts.push_back(LiteralFromDoubles(feature_shape, mean));
    parts.push_back(LiteralFromDoubles(feature_shape, var));
    return Literal::Tuple(std::move(parts));
  }
  const std::vector<double> dy = ValuesAsDouble(*operands[4].value);
  std::vector<double> dy_xc(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    dy_xc[i] = dy[i] * (x[i] - mean[layout.Feature(i)]);
  }
  const std::vector<double> mean_dy = FeatureMeans(layout, dy);
  const std::vector<double> mean_dy_xc = FeatureMeans(layout, dy_xc);
  const double per_feature =
      static_cast<double>(layout.count) / std::max<int64_t>(plan.features, 1);
  std::vector<double> grad_scale(plan.features), grad_offset(plan.features);
  for (int64_t c = 0; c < plan.features; ++c) {
    grad_offset[c] = mean_dy[c] * per_feature;
    grad_scale[c] = mean_dy_xc[c] * per_feature * inv_std[c];
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = layout.Feature(i);
    const double xc = x[i] - mean[c];
    y[i] = scale[c] * inv_std[c] *
           (dy[i] - mean_dy[c] - xc * mean_dy_xc[c] * inv_std[c] * inv_std[c]);
  }
  std::vector<Literal> parts;
  parts.push_back(LiteralFromDoubles(plan.operand, y));
  parts.push_back(LiteralFromDoubles(feature_shape, grad_scale));
  parts.push_back(LiteralFromDoubles(feature_shape, grad_offset));
  return Literal::Tuple(std::move(parts));
}

template <BatchNorm kKind>
absl::StatusOr<std::unique_ptr<Kernel>> CompileBatchNorm(
    const HloInstruction& instruction, KernelCompiler&) {
  const int operands = kKind == BatchNorm::kTraining ? 3 : 5;
  if (absl::Status s = ExpectOperands(instruction, operands); !s.ok()) {
    return s;
  }
  BatchNormPlan plan;
  plan.kind = kKind;
  plan.operand = instruction.operand(0)->shape();
  plan.epsilon = instruction.proto().epsilon();
  const int64_t f = instruction.proto().feature_index();
  if (absl::Status s = ExpectArray(plan.operand, "operand"); !s.ok()) return s;
  if (f < 0 || f >= plan.operand.rank()) {
    return Malformed(absl::StrCat("feature_index ", f, " is out of range for ",
                                  plan.operand.ToString()));
  }
  plan.features = plan.operand.dimensions(f);
  for (int64_t d = f + 1; d < plan.operand.rank(); ++d) {
    plan.inner *= plan.operand.dimensions(d);
  }
  const xla::PrimitiveType type = plan.operand.element_type();
  if (!IsFloatingPoint(type)) return UnsupportedType(instruction, type);
  const Shape feature = Shape::Array(type, {plan.features});
  // Operand 4 of grad is grad_output, shaped like the operand.
  for (int i = 1; i < operands; ++i) {
    const Shape& want =
        (kKind == BatchNorm::kGrad && i == 4) ? plan.operand : feature;
    if (instruction.operand(i)->shape() != want) {
      return Malformed(
          absl::StrCat("operand ", i, " of ", instruction.opcode(), " must be ",
                       want.ToString(), ", got ",
                       instruction.operand(i)->shape().ToString()));
    }
  }
  const Shape result = kKind == BatchNorm::kInference
                           ? plan.operand
                           : Shape::Tuple({plan.operand, feature, feature});
  if (absl::Status s = ExpectResultShape(instruction, result); !s.ok()) {
    return s;
  }
  return MakeKernel([plan](KernelContext&, absl::Span<const Operand> operands) {
    return RunBatchNorm(plan, operands);
  });
}

}  // namespace

void RegisterBatchNormKernels(KernelRegistry& registry) {
  registry.Register("batch-norm-training",
                    &CompileBatchNorm<BatchNorm::kTraining>);
  registry.Register("batch-norm-inference",
                    &CompileBatchNorm<BatchNorm::kInference>);
  registry.Register("batch-norm-grad", &CompileBatchNorm<BatchNorm::kGrad>);
}

}  // namespace tpu::emulator::interpreter
