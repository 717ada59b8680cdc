#include "emulator/interpreter/test_util.h"

#include "Eigen/Core"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hlo/text/hlo_parser.h"

namespace tpu::emulator::interpreter {
namespace testing {

ComputationBuilder::ComputationBuilder(HloModuleBuilder* module,
                                       std::string name, int64_t id)
    : module_(module) {
  proto_.set_name(std::move(name));
  proto_.set_id(id);
}

int64_t ComputationBuilder::Op(const std::string& opcode, const Shape& shape,
                               std::vector<int64_t> operands,
                               const Attrs& attrs) {
  xla::HloInstructionProto* i = proto_.add_instructions();
  const int64_t id = module_->NextId();
  i->set_id(id);
  i->set_name(absl::StrCat(opcode, ".", id));
  i->set_opcode(opcode);
  *i->mutable_shape() = shape.ToProto();
  for (int64_t o : operands) i->add_operand_ids(o);
  if (attrs) attrs(*i);
  shapes_.push_back(shape);
  ids_.push_back(id);
  return id;
}

int64_t ComputationBuilder::Param(const Shape& shape, int64_t number) {
  if (number < 0) number = next_param_;
  next_param_ = std::max(next_param_, number + 1);
  return Op("parameter", shape, {}, [number](xla::HloInstructionProto& i) {
    i.set_parameter_number(number);
  });
}

int64_t ComputationBuilder::Constant(const Literal& literal) {
  return Op("constant", literal.shape(), {}, [&](xla::HloInstructionProto& i) {
    *i.mutable_literal() = literal.ToProto();
  });
}

int64_t ComputationBuilder::Unary(const std::string& opcode, int64_t x) {
  return Op(opcode, shape(x), {x});
}

int64_t ComputationBuilder::Binary(const std::string& opcode, int64_t a,
                                   int64_t b) {
  return Op(opcode, shape(a), {a, b});
}

int64_t ComputationBuilder::Compare(const std::string& direction, int64_t a,
                                    int64_t b, const std::string& type) {
  return Op("compare", S(xla::PRED, shape(a).dimensions()), {a, b},
            [&](xla::HloInstructionProto& i) {
              i.set_comparison_direction(direction);
              if (!type.empty()) i.set_comparison_type(type);
            });
}

int64_t ComputationBuilder::Broadcast(int64_t x, const Shape& shape,
                                      std::vector<int64_t> dimensions) {
  return Op("broadcast", shape, {x}, [&](xla::HloInstructionProto& i) {
    for (int64_t d : dimensions) i.add_dimensions(d);
  });
}

int64_t ComputationBuilder::Reshape(int64_t x, const Shape& shape) {
  return Op("reshape", shape, {x});
}

int64_t ComputationBuilder::Convert(int64_t x, xla::PrimitiveType type) {
  return Op("convert", S(type, shape(x).dimensions()), {x});
}

int64_t ComputationBuilder::Tuple(std::vector<int64_t> elements) {
  std::vector<Shape> shapes;
  for (int64_t e : elements) shapes.push_back(shape(e));
  return Op("tuple", Shape::Tuple(shapes), elements);
}

int64_t ComputationBuilder::GetTupleElement(int64_t tuple, int64_t index) {
  return Op("get-tuple-element", shape(tuple).tuple_shapes()[index], {tuple},
            [index](xla::HloInstructionProto& i) { i.set_tuple_index(index); });
}

int64_t ComputationBuilder::Dot(int64_t lhs, int64_t rhs, const Shape& shape,
                                std::vector<int64_t> lhs_contracting,
                                std::vector<int64_t> rhs_contracting,
                                std::vector<int64_t> lhs_batch,
                                std::vector<int64_t> rhs_batch) {
  return Op("dot", shape, {lhs, rhs}, [&](xla::HloInstructionProto& i) {
    auto* dn = i.mutable_dot_dimension_numbers();
    for (int64_t d : lhs_contracting) dn->add_lhs_contracting_dimensions(d);
    for (int64_t d : rhs_contracting) dn->add_rhs_contracting_dimensions(d);
    for (int64_t d : lhs_batch) dn->add_lhs_batch_dimensions(d);
    for (int64_t d : rhs_batch) dn->add_rhs_batch_dimensions(d);
  });
}

int64_t ComputationBuilder::Reduce(std::vector<int64_t> inputs,
                                   std::vector<int64_t> inits,
                                   std::vector<int64_t> dimensions,
                                   const ComputationBuilder& reducer,
                                   const Shape& shape) {
  std::vector<int64_t> operands = inputs;
  operands.insert(operands.end(), inits.begin(), inits.end());
  return Op("reduce", shape, operands, [&](xla::HloInstructionProto& i) {
    for (int64_t d : dimensions) i.add_dimensions(d);
    i.add_called_computation_ids(reducer.id());
  });
}

int64_t ComputationBuilder::Call(const std::string& opcode, const Shape& shape,
                                 std::vector<int64_t> operands,
                                 std::vector<const ComputationBuilder*> callees,
                                 const Attrs& attrs) {
  return Op(opcode, shape, operands, [&](xla::HloInstructionProto& i) {
    for (const ComputationBuilder* c : callees) {
      i.add_called_computation_ids(c->id());
    }
    if (attrs) attrs(i);
  });
}

const Shape& ComputationBuilder::shape(int64_t id) const {
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (ids_[i] == id) return shapes_[i];
  }
  static const Shape* kNone = new Shape();
  return *kNone;
}

xla::HloInstructionProto& ComputationBuilder::instruction(int64_t id) {
  for (auto& i : *proto_.mutable_instructions()) {
    if (i.id() == id) return i;
  }
  return *proto_.mutable_instructions(0);
}

HloModuleBuilder::HloModuleBuilder(std::string name) : name_(std::move(name)) {}

ComputationBuilder& HloModuleBuilder::Computation(const std::string& name) {
  computations_.push_back(ComputationBuilder(this, name, NextId()));
  return computations_.back();
}

ComputationBuilder& HloModuleBuilder::Entry() {
  entry_ = &Computation("entry");
  return *entry_;
}

ComputationBuilder& HloModuleBuilder::ScalarBinary(const std::string& opcode,
                                                   xla::PrimitiveType type) {
  ComputationBuilder& c =
      Computation(absl::StrCat(opcode, "_", PrimitiveTypeName(type)));
  int64_t a = c.Param(Shape::Scalar(type));
  int64_t b = c.Param(Shape::Scalar(type));
  c.Binary(opcode, a, b);
  return c;
}

xla::HloModuleProto HloModuleBuilder::Build() const {
  xla::HloModuleProto m;
  m.set_name(name_);
  for (const ComputationBuilder& c : computations_) {
    xla::HloComputationProto* proto = m.add_computations();
    *proto = c.proto_;
    proto->set_root_id(c.root_ >= 0 ? c.root_ : c.ids_.back());
  }
  if (entry_ != nullptr) {
    m.set_entry_computation_id(entry_->id());
    m.set_entry_computation_name(entry_->name());
  }
  return m;
}

std::vector<float> FloatValues(const Literal& literal) {
  std::vector<float> out;
  const int64_t n = literal.shape().element_count();
  for (int64_t i = 0; i < n; ++i) {
    switch (literal.shape().element_type()) {
      case xla::BF16:
        out.push_back(static_cast<float>(literal.data<Eigen::bfloat16>()[i]));
        break;
      case xla::F16:
        out.push_back(static_cast<float>(literal.data<Eigen::half>()[i]));
        break;
      case xla::F64:
        out.push_back(static_cast<float>(literal.data<double>()[i]));
        break;
      default:
        out.push_back(literal.data<float>()[i]);
    }
  }
  return out;
}

absl::StatusOr<Literal> RunModule(const xla::HloModuleProto& module,
                                  std::vector<Literal> arguments,
                                  const CompileOptions& options,
                                  const Eigen::ThreadPoolDevice* device,
                                  ExecutionStats* stats) {
  absl::StatusOr<std::unique_ptr<Executable>> executable =
      Executable::Compile(module, options);
  if (!executable.ok()) return executable.status();
  ExecutionContext context;
  context.device = device;
  return (*executable)->Execute(std::move(arguments), context, stats);
}

namespace {

// Tests may leave out the "HloModule name" header line.
absl::StatusOr<xla::HloModuleProto> Parse(absl::string_view text) {
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(text);
  if (absl::StartsWith(rest, "HloModule")) return hlo::ParseHloModule(text);
  return hlo::ParseHloModule(absl::StrCat("HloModule test\n", text));
}

}  // namespace

absl::StatusOr<Literal> RunHlo(absl::string_view text,
                               std::vector<Literal> arguments,
                               const CompileOptions& options,
                               const Eigen::ThreadPoolDevice* device,
                               ExecutionStats* stats) {
  absl::StatusOr<xla::HloModuleProto> module = Parse(text);
  if (!module.ok()) return module.status();
  return RunModule(*module, std::move(arguments), options, device, stats);
}

Literal RunHloOrFail(const std::string& text, std::vector<Literal> arguments,
                     const CompileOptions& options) {
  absl::StatusOr<Literal> out = RunHlo(text, std::move(arguments), options);
  EXPECT_TRUE(out.ok()) << out.status() << "\n" << text;
  return out.ok() ? *std::move(out) : Literal();
}

absl::StatusOr<std::unique_ptr<Executable>> CompileHlo(
    absl::string_view text, const CompileOptions& options) {
  absl::StatusOr<xla::HloModuleProto> module = Parse(text);
  if (!module.ok()) return module.status();
  return Executable::Compile(*module, options);
}

}  // namespace testing
}  // namespace tpu::emulator::interpreter
