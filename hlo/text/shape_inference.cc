#include "hlo/text/shape_inference.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hlo/text/hlo_printer.h"
#include "hlo/text/hlo_text_util.h"

namespace tpu::hlo::text_internal {
namespace {

using Shape = xla::ShapeProto;
using Proto = xla::HloInstructionProto;
using Shapes = std::vector<const Shape*>;
using Dims = std::vector<int64_t>;
// A rule: the instruction, its operand shapes, the called results.
using Rule = absl::StatusOr<Shape> (*)(const Proto&, const Shapes&,
                                       const Shapes&);

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

Shape MakeArray(xla::PrimitiveType type, const Dims& dims) {
  Shape shape;
  shape.set_element_type(type);
  for (int64_t d : dims) {
    shape.add_dimensions(d);
    shape.add_is_dynamic_dimension(false);
  }
  SetDefaultLayout(static_cast<int>(dims.size()), shape.mutable_layout());
  return shape;
}

Shape MakeTuple(const std::vector<Shape>& elements) {
  Shape shape;
  shape.set_element_type(xla::TUPLE);
  for (const Shape& e : elements) *shape.add_tuple_shapes() = e;
  return shape;
}

Shape WithType(Shape shape, xla::PrimitiveType type) {
  shape.set_element_type(type);
  return shape;
}

Dims DimsOf(const Shape& shape) {
  return Dims(shape.dimensions().begin(), shape.dimensions().end());
}

absl::Status NeedOperands(const Shapes& operands, size_t count) {
  if (operands.size() == count) return absl::OkStatus();
  return Invalid(
      absl::StrCat("expected ", count, " operands, got ", operands.size()));
}

absl::Status NeedArray(const Shape& shape) {
  if (IsArrayType(shape.element_type())) return absl::OkStatus();
  return Invalid(
      absl::StrCat("expected an array operand, got ", PrintShape(shape)));
}

absl::Status NeedSameDimensions(const Shape& a, const Shape& b) {
  if (a.dimensions_size() == b.dimensions_size() &&
      std::equal(a.dimensions().begin(), a.dimensions().end(),
                 b.dimensions().begin())) {
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("operands ", PrintShape(a), " and ",
                              PrintShape(b), " have different dimensions"));
}

// The real type of a complex type (c64 -> f32); other types unchanged.
xla::PrimitiveType ComponentType(xla::PrimitiveType type) {
  if (type == xla::C64) return xla::F32;
  if (type == xla::C128) return xla::F64;
  return type;
}

// XLA's choice for dot and convolution without a preferred type: a floating
// type over an integer one, else the wider.
xla::PrimitiveType HigherPrecision(xla::PrimitiveType a, xla::PrimitiveType b) {
  if (a == b) return a;
  const bool float_a = IsFloatType(a) || IsComplexType(a);
  const bool float_b = IsFloatType(b) || IsComplexType(b);
  if (float_a != float_b) return float_a ? a : b;
  return TypeBitWidth(a) >= TypeBitWidth(b) ? a : b;
}

// Output size of one window dimension over an input of size `in`.
absl::StatusOr<int64_t> WindowOutput(int64_t in,
                                     const xla::WindowDimension& w) {
  if (w.stride() <= 0 || w.base_dilation() <= 0 || w.window_dilation() <= 0) {
    return Invalid("window stride and dilations must be positive");
  }
  const int64_t dilated_base = in == 0 ? 0 : (in - 1) * w.base_dilation() + 1;
  const int64_t padded = w.padding_low() + dilated_base + w.padding_high();
  const int64_t dilated_window = (w.size() - 1) * w.window_dilation() + 1;
  if (padded < dilated_window) return 0;
  return (padded - dilated_window) / w.stride() + 1;
}

// --- Elementwise and structural ops -------------------------------------

absl::StatusOr<Shape> UnarySame(const Proto&, const Shapes& ops,
                                const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 1); !s.ok()) return s;
  return *ops[0];
}

// abs, real, imag: complex operands give their component type.
absl::StatusOr<Shape> UnaryComponent(const Proto&, const Shapes& ops,
                                     const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 1); !s.ok()) return s;
  return WithType(*ops[0], ComponentType(ops[0]->element_type()));
}

absl::StatusOr<Shape> IsFinite(const Proto&, const Shapes& ops, const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 1); !s.ok()) return s;
  return WithType(*ops[0], xla::PRED);
}

absl::StatusOr<Shape> Binary(const Proto&, const Shapes& ops, const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 2); !s.ok()) return s;
  if (absl::Status s = NeedSameDimensions(*ops[0], *ops[1]); !s.ok()) return s;
  return *ops[0];
}

absl::StatusOr<Shape> Compare(const Proto& p, const Shapes& ops,
                              const Shapes& called) {
  absl::StatusOr<Shape> shape = Binary(p, ops, called);
  if (!shape.ok()) return shape;
  return WithType(*shape, xla::PRED);
}

absl::StatusOr<Shape> Complex(const Proto& p, const Shapes& ops,
                              const Shapes& called) {
  absl::StatusOr<Shape> shape = Binary(p, ops, called);
  if (!shape.ok()) return shape;
  if (shape->element_type() == xla::F32) return WithType(*shape, xla::C64);
  if (shape->element_type() == xla::F64) return WithType(*shape, xla::C128);
  return Invalid("complex needs f32 or f64 operands");
}

// select(pred, on_true, on_false) and clamp(min, operand, max): operand 1.
absl::StatusOr<Shape> Ternary(const Proto&, const Shapes& ops, const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 3); !s.ok()) return s;
  return *ops[1];
}

absl::StatusOr<Shape> FirstOperand(const Proto&, const Shapes& ops,
                                   const Shapes&) {
  if (ops.empty()) return Invalid("expected an operand");
  return *ops[0];
}

absl::StatusOr<Shape> SecondOperand(const Proto&, const Shapes& ops,
                                    const Shapes&) {
  if (ops.size() < 2) return Invalid("expected two operands");
  return *ops[1];
}

absl::StatusOr<Shape> FirstCalledResult(const Proto&, const Shapes&,
                                        const Shapes& called) {
  if (called.empty()) return Invalid("no called computation");
  return *called[0];
}

absl::StatusOr<Shape> Token(const Proto&, const Shapes&, const Shapes&) {
  Shape shape;
  shape.set_element_type(xla::TOKEN);
  return shape;
}

absl::StatusOr<Shape> U32Scalar(const Proto&, const Shapes& ops,
                                const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 0); !s.ok()) return s;
  return MakeArray(xla::U32, {});
}

absl::StatusOr<Shape> S32Scalar(const Proto&, const Shapes& ops,
                                const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 1); !s.ok()) return s;
  return MakeArray(xla::S32, {});
}

absl::StatusOr<Shape> Tuple(const Proto&, const Shapes& ops, const Shapes&) {
  std::vector<Shape> elements;
  for (const Shape* op : ops) elements.push_back(*op);
  return MakeTuple(elements);
}

absl::StatusOr<Shape> GetTupleElement(const Proto& p, const Shapes& ops,
                                      const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 1); !s.ok()) return s;
  const Shape& tuple = *ops[0];
  if (tuple.element_type() != xla::TUPLE || p.tuple_index() < 0 ||
      p.tuple_index() >= tuple.tuple_shapes_size()) {
    return Invalid(absl::StrCat("no element ", p.tuple_index(), " in ",
                                PrintShape(tuple)));
  }
  return tuple.tuple_shapes(static_cast<int>(p.tuple_index()));
}

absl::StatusOr<Shape> While(const Proto&, const Shapes& ops, const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 1); !s.ok()) return s;
  return *ops[0];
}

// All operands as one value: itself for one, a tuple for several.
absl::StatusOr<Shape> OperandsAsValue(const Shapes& ops) {
  if (ops.empty()) return Invalid("expected an operand");
  if (ops.size() == 1) return *ops[0];
  std::vector<Shape> elements;
  for (const Shape* op : ops) elements.push_back(*op);
  return MakeTuple(elements);
}

absl::StatusOr<Shape> Sort(const Proto&, const Shapes& ops, const Shapes&) {
  return OperandsAsValue(ops);
}

// scatter(inputs..., indices, updates...): the inputs.
absl::StatusOr<Shape> Scatter(const Proto&, const Shapes& ops, const Shapes&) {
  if (ops.size() % 2 == 0) {
    return Invalid(
        absl::StrCat("expected an odd number of operands, got ", ops.size()));
  }
  return OperandsAsValue(Shapes(ops.begin(), ops.begin() + ops.size() / 2));
}

absl::StatusOr<Shape> SetDimensionSize(const Proto& p, const Shapes& ops,
                                       const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 2); !s.ok()) return s;
  Shape shape = *ops[0];
  if (p.dimensions_size() != 1 || p.dimensions(0) < 0 ||
      p.dimensions(0) >= shape.dimensions_size()) {
    return Invalid("dimensions= must name one dimension of the operand");
  }
  shape.set_is_dynamic_dimension(static_cast<int>(p.dimensions(0)), true);
  return shape;
}

absl::StatusOr<Shape> Map(const Proto&, const Shapes& ops,
                          const Shapes& called) {
  if (ops.empty() || called.empty()) return Invalid("expected operands");
  if (absl::Status s = NeedArray(*called[0]); !s.ok()) return s;
  return WithType(*ops[0], called[0]->element_type());
}

absl::StatusOr<Shape> Unimplemented(const Proto& p, const Shapes&,
                                    const Shapes&) {
  return absl::UnimplementedError(
      absl::StrCat("inferring the shape of ", p.opcode(),
                   " is not implemented; write the shape"));
}

// --- Shape-changing ops ---------------------------------------------------

// XLA's parser infers broadcast from the dimensions attribute as if it
// listed new leading sizes (ShapeInference::InferBroadcastShape(operand,
// sizes)), so a scalar with dimensions={} stays a scalar.
absl::StatusOr<Shape> Broadcast(const Proto& p, const Shapes& ops,
                                const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 1); !s.ok()) return s;
  Dims dims(p.dimensions().begin(), p.dimensions().end());
  for (int64_t d : ops[0]->dimensions()) dims.push_back(d);
  return MakeArray(ops[0]->element_type(), dims);
}

absl::StatusOr<Shape> Concatenate(const Proto& p, const Shapes& ops,
                                  const Shapes&) {
  if (ops.empty() || p.dimensions_size() != 1) {
    return Invalid("expected operands and one dimension");
  }
  const int64_t axis = p.dimensions(0);
  Dims dims = DimsOf(*ops[0]);
  if (axis < 0 || axis >= static_cast<int64_t>(dims.size())) {
    return Invalid("concatenate dimension out of range");
  }
  dims[axis] = 0;
  for (const Shape* op : ops) {
    if (op->dimensions_size() != static_cast<int>(dims.size())) {
      return Invalid("concatenate operands have different ranks");
    }
    dims[axis] += op->dimensions(static_cast<int>(axis));
  }
  return MakeArray(ops[0]->element_type(), dims);
}

absl::StatusOr<Shape> Transpose(const Proto& p, const Shapes& ops,
                                const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 1); !s.ok()) return s;
  const Dims in = DimsOf(*ops[0]);
  if (p.dimensions_size() != static_cast<int>(in.size())) {
    return Invalid("transpose dimensions do not match the operand's rank");
  }
  Dims out;
  for (int64_t d : p.dimensions()) {
    if (d < 0 || d >= static_cast<int64_t>(in.size())) {
      return Invalid("transpose dimension out of range");
    }
    out.push_back(in[d]);
  }
  return MakeArray(ops[0]->element_type(), out);
}

absl::StatusOr<Shape> Pad(const Proto& p, const Shapes& ops, const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 2); !s.ok()) return s;
  Dims dims = DimsOf(*ops[0]);
  if (p.padding_config().dimensions_size() != static_cast<int>(dims.size())) {
    return Invalid("padding does not match the operand's rank");
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    const auto& pad = p.padding_config().dimensions(static_cast<int>(i));
    dims[i] = pad.edge_padding_low() + pad.edge_padding_high() + dims[i] +
              std::max<int64_t>(dims[i] - 1, 0) * pad.interior_padding();
  }
  return MakeArray(ops[0]->element_type(), dims);
}

// reduce(inputs..., inits...): each input without the reduced dimensions,
// in its init's type.
absl::StatusOr<Shape> Reduce(const Proto& p, const Shapes& ops, const Shapes&) {
  if (ops.empty() || ops.size() % 2 != 0) {
    return Invalid("expected inputs and as many init values");
  }
  const absl::flat_hash_set<int64_t> reduced(p.dimensions().begin(),
                                             p.dimensions().end());
  const size_t n = ops.size() / 2;
  std::vector<Shape> results;
  for (size_t k = 0; k < n; ++k) {
    Dims dims;
    for (int i = 0; i < ops[k]->dimensions_size(); ++i) {
      if (!reduced.contains(i)) dims.push_back(ops[k]->dimensions(i));
    }
    results.push_back(MakeArray(ops[n + k]->element_type(), dims));
  }
  return n == 1 ? results[0] : MakeTuple(results);
}

absl::StatusOr<Shape> ReduceWindow(const Proto& p, const Shapes& ops,
                                   const Shapes&) {
  if (ops.empty() || ops.size() % 2 != 0) {
    return Invalid("expected inputs and as many init values");
  }
  const size_t n = ops.size() / 2;
  std::vector<Shape> results;
  for (size_t k = 0; k < n; ++k) {
    Dims dims = DimsOf(*ops[k]);
    if (p.window().dimensions_size() != static_cast<int>(dims.size())) {
      return Invalid("the window does not match the operand's rank");
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      absl::StatusOr<int64_t> size =
          WindowOutput(dims[i], p.window().dimensions(static_cast<int>(i)));
      if (!size.ok()) return size.status();
      dims[i] = *size;
    }
    results.push_back(MakeArray(ops[n + k]->element_type(), dims));
  }
  return n == 1 ? results[0] : MakeTuple(results);
}

absl::StatusOr<Shape> Convolution(const Proto& p, const Shapes& ops,
                                  const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 2); !s.ok()) return s;
  const Shape& lhs = *ops[0];
  const Shape& rhs = *ops[1];
  const auto& dn = p.convolution_dimension_numbers();
  const int spatial = dn.input_spatial_dimensions_size();
  if (p.window().dimensions_size() != spatial ||
      dn.output_spatial_dimensions_size() != spatial ||
      lhs.dimensions_size() != spatial + 2 ||
      rhs.dimensions_size() != spatial + 2) {
    return Invalid("window, dim_labels and operand ranks do not agree");
  }
  const int64_t groups = p.batch_group_count() > 0 ? p.batch_group_count() : 1;
  Dims out(lhs.dimensions_size(), 0);
  out[dn.output_batch_dimension()] =
      lhs.dimensions(static_cast<int>(dn.input_batch_dimension())) / groups;
  out[dn.output_feature_dimension()] =
      rhs.dimensions(static_cast<int>(dn.kernel_output_feature_dimension()));
  for (int i = 0; i < spatial; ++i) {
    absl::StatusOr<int64_t> size = WindowOutput(
        lhs.dimensions(static_cast<int>(dn.input_spatial_dimensions(i))),
        p.window().dimensions(i));
    if (!size.ok()) return size.status();
    out[dn.output_spatial_dimensions(i)] = *size;
  }
  return MakeArray(HigherPrecision(lhs.element_type(), rhs.element_type()),
                   out);
}

// Batch dimensions, then the free dimensions of lhs, then those of rhs.
absl::StatusOr<Shape> Dot(const Proto& p, const Shapes& ops, const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 2); !s.ok()) return s;
  const auto& dn = p.dot_dimension_numbers();
  auto free_dims = [](const Shape& shape, const auto& batch,
                      const auto& contracting, Dims* out) {
    absl::flat_hash_set<int64_t> used(batch.begin(), batch.end());
    used.insert(contracting.begin(), contracting.end());
    for (int i = 0; i < shape.dimensions_size(); ++i) {
      if (!used.contains(i)) out->push_back(shape.dimensions(i));
    }
  };
  Dims dims;
  for (int64_t b : dn.lhs_batch_dimensions()) {
    if (b < 0 || b >= ops[0]->dimensions_size()) {
      return Invalid("lhs batch dimension out of range");
    }
    dims.push_back(ops[0]->dimensions(static_cast<int>(b)));
  }
  free_dims(*ops[0], dn.lhs_batch_dimensions(), dn.lhs_contracting_dimensions(),
            &dims);
  free_dims(*ops[1], dn.rhs_batch_dimensions(), dn.rhs_contracting_dimensions(),
            &dims);
  return MakeArray(
      HigherPrecision(ops[0]->element_type(), ops[1]->element_type()), dims);
}

// Batch dimensions (of the indices, without index_vector_dim) and the
// slice's offset dimensions, placed at offset_dims.
absl::StatusOr<Shape> Gather(const Proto& p, const Shapes& ops, const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 2); !s.ok()) return s;
  const auto& g = p.gather_dimension_numbers();
  Dims batch;
  for (int i = 0; i < ops[1]->dimensions_size(); ++i) {
    if (i != g.index_vector_dim()) batch.push_back(ops[1]->dimensions(i));
  }
  absl::flat_hash_set<int64_t> dropped(g.collapsed_slice_dims().begin(),
                                       g.collapsed_slice_dims().end());
  dropped.insert(g.operand_batching_dims().begin(),
                 g.operand_batching_dims().end());
  Dims offsets;
  for (int i = 0; i < p.gather_slice_sizes_size(); ++i) {
    if (!dropped.contains(i)) offsets.push_back(p.gather_slice_sizes(i));
  }
  const absl::flat_hash_set<int64_t> offset_dims(g.offset_dims().begin(),
                                                 g.offset_dims().end());
  if (offsets.size() != offset_dims.size()) {
    return Invalid("offset_dims do not match slice_sizes");
  }
  Dims dims;
  size_t next_batch = 0, next_offset = 0;
  for (size_t d = 0; d < batch.size() + offsets.size(); ++d) {
    if (offset_dims.contains(static_cast<int64_t>(d))) {
      if (next_offset >= offsets.size()) return Invalid("bad offset_dims");
      dims.push_back(offsets[next_offset++]);
    } else {
      if (next_batch >= batch.size()) return Invalid("bad offset_dims");
      dims.push_back(batch[next_batch++]);
    }
  }
  return MakeArray(ops[0]->element_type(), dims);
}

absl::StatusOr<Shape> Fft(const Proto& p, const Shapes& ops, const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 1); !s.ok()) return s;
  Shape shape = *ops[0];
  const int rank = shape.dimensions_size();
  if (p.fft_length_size() == 0 || rank == 0) {
    return Invalid("fft needs fft_length and an array operand");
  }
  const int64_t last = p.fft_length(p.fft_length_size() - 1);
  switch (p.fft_type()) {
    case xla::RFFT:
      shape.set_dimensions(rank - 1, last / 2 + 1);
      return WithType(shape,
                      shape.element_type() == xla::F64 ? xla::C128 : xla::C64);
    case xla::IRFFT:
      shape.set_dimensions(rank - 1, last);
      return WithType(shape, ComponentType(shape.element_type()));
    default:
      return shape;
  }
}

// batch-norm-training/-grad: the operand plus two per-feature vectors.
absl::StatusOr<Shape> BatchNormTuple(const Proto& p, const Shapes& ops,
                                     const Shapes&) {
  if (ops.empty()) return Invalid("expected operands");
  const Shape& operand = *ops[0];
  if (p.feature_index() < 0 || p.feature_index() >= operand.dimensions_size()) {
    return Invalid("feature_index out of range");
  }
  const Shape feature =
      MakeArray(operand.element_type(),
                {operand.dimensions(static_cast<int>(p.feature_index()))});
  return MakeTuple({operand, feature, feature});
}

absl::StatusOr<Shape> TopK(const Proto& p, const Shapes& ops, const Shapes&) {
  if (absl::Status s = NeedOperands(ops, 1); !s.ok()) return s;
  Dims dims = DimsOf(*ops[0]);
  if (dims.empty()) return Invalid("topk needs an array of rank >= 1");
  dims.back() = p.k();
  return MakeTuple(
      {MakeArray(ops[0]->element_type(), dims), MakeArray(xla::S32, dims)});
}

const absl::flat_hash_map<absl::string_view, Rule>& Rules() {
  static const auto* const kRules = [] {
    auto* rules = new absl::flat_hash_map<absl::string_view, Rule>();
    for (absl::string_view op : {"acos",
                                 "acosh",
                                 "asin",
                                 "asinh",
                                 "atanh",
                                 "cbrt",
                                 "ceil",
                                 "copy",
                                 "cosh",
                                 "cosine",
                                 "count-leading-zeros",
                                 "domain",
                                 "erf",
                                 "exponential",
                                 "exponential-minus-one",
                                 "floor",
                                 "log",
                                 "log-plus-one",
                                 "logistic",
                                 "negate",
                                 "not",
                                 "opt-barrier",
                                 "popcnt",
                                 "round-nearest-afz",
                                 "round-nearest-even",
                                 "rsqrt",
                                 "sign",
                                 "sine",
                                 "sinh",
                                 "sqrt",
                                 "tan",
                                 "tanh",
                                 "reverse",
                                 "cholesky"}) {
      (*rules)[op] = UnarySame;
    }
    // The result is the first operand's shape.
    for (absl::string_view op :
         {"add-dependency", "batch-norm-inference", "select-and-scatter"}) {
      (*rules)[op] = FirstOperand;
    }
    for (absl::string_view op : {"abs", "real", "imag"}) {
      (*rules)[op] = UnaryComponent;
    }
    for (absl::string_view op :
         {"add", "and", "atan2", "divide", "maximum", "minimum", "multiply",
          "or", "power", "remainder", "shift-left", "shift-right-arithmetic",
          "shift-right-logical", "subtract", "xor"}) {
      (*rules)[op] = Binary;
    }
    for (absl::string_view op : {"ragged-dot", "scan", "scaled-dot"}) {
      (*rules)[op] = Unimplemented;
    }
    const std::pair<absl::string_view, Rule> others[] = {
        {"is-finite", IsFinite},
        {"compare", Compare},
        {"complex", Complex},
        {"select", Ternary},
        {"clamp", Ternary},
        {"after-all", Token},
        {"partition-id", U32Scalar},
        {"replica-id", U32Scalar},
        {"get-dimension-size", S32Scalar},
        {"set-dimension-size", SetDimensionSize},
        {"tuple", Tuple},
        {"get-tuple-element", GetTupleElement},
        {"call", FirstCalledResult},
        {"conditional", FirstCalledResult},
        {"while", While},
        {"sort", Sort},
        {"scatter", Scatter},
        {"map", Map},
        {"triangular-solve", SecondOperand},
        {"broadcast", Broadcast},
        {"concatenate", Concatenate},
        {"transpose", Transpose},
        {"pad", Pad},
        {"reduce", Reduce},
        {"reduce-window", ReduceWindow},
        {"convolution", Convolution},
        {"dot", Dot},
        {"gather", Gather},
        {"fft", Fft},
        {"batch-norm-training", BatchNormTuple},
        {"batch-norm-grad", BatchNormTuple},
        {"topk", TopK},
    };
    for (const auto& [op, rule] : others) (*rules)[op] = rule;
    return rules;
  }();
  return *kRules;
}

}  // namespace

absl::StatusOr<xla::ShapeProto> InferShape(
    const xla::HloInstructionProto& instruction,
    const std::vector<const xla::ShapeProto*>& operands,
    const std::vector<const xla::ShapeProto*>& called_results) {
  auto it = Rules().find(instruction.opcode());
  if (it == Rules().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("XLA does not infer the shape of ", instruction.opcode()));
  }
  return it->second(instruction, operands, called_results);
}

}  // namespace tpu::hlo::text_internal
