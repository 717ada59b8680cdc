#include "emulator/worker/test_programs.h"

#include <string>
#include <vector>

#include "hlo/shape.h"

namespace tpu::emulator {
namespace test_programs {
namespace {

xla::ShapeProto F32(int64_t n) { return Shape::Array(xla::F32, {n}).ToProto(); }
xla::ShapeProto Scalar(xla::PrimitiveType type) {
  return Shape::Scalar(type).ToProto();
}

// Builds one computation instruction by instruction.
class Builder {
 public:
  Builder(xla::HloComputationProto* computation, int64_t* next_id)
      : c_(computation), next_id_(next_id) {}

  int64_t Parameter(int64_t number, const xla::ShapeProto& shape) {
    auto* i = Add("parameter", shape, {});
    i->set_parameter_number(number);
    *c_->mutable_program_shape()->add_parameters() = shape;
    c_->mutable_program_shape()->add_parameter_names(i->name());
    return i->id();
  }
  int64_t Op(const std::string& opcode, const xla::ShapeProto& shape,
             std::vector<int64_t> operands) {
    return Add(opcode, shape, operands)->id();
  }
  xla::HloInstructionProto* Instr(int64_t id) {
    for (auto& i : *c_->mutable_instructions()) {
      if (i.id() == id) return &i;
    }
    return nullptr;
  }
  void Root(int64_t id) {
    c_->set_root_id(id);
    *c_->mutable_program_shape()->mutable_result() = Instr(id)->shape();
  }

 private:
  xla::HloInstructionProto* Add(const std::string& opcode,
                                const xla::ShapeProto& shape,
                                const std::vector<int64_t>& operands) {
    auto* i = c_->add_instructions();
    i->set_id((*next_id_)++);
    i->set_name(opcode + "." + std::to_string(i->id()));
    i->set_opcode(opcode);
    *i->mutable_shape() = shape;
    for (int64_t o : operands) i->add_operand_ids(o);
    return i;
  }

  xla::HloComputationProto* c_;
  int64_t* next_id_;
};

struct ModuleBuilder {
  xla::HloProto proto;
  int64_t next_id = 1;
  int64_t next_computation = 1;

  Builder Computation(const std::string& name, int64_t* id_out) {
    auto* c = proto.mutable_hlo_module()->add_computations();
    c->set_name(name);
    c->set_id(next_computation++);
    *id_out = c->id();
    return Builder(c, &next_id);
  }
  xla::HloProto Finish(const std::string& module_name, int64_t entry_id) {
    auto* m = proto.mutable_hlo_module();
    m->set_name(module_name);
    for (const auto& c : m->computations()) {
      if (c.id() == entry_id) {
        m->set_entry_computation_name(c.name());
        m->set_entry_computation_id(c.id());
        *m->mutable_host_program_shape() = c.program_shape();
      }
    }
    return proto;
  }
};

}  // namespace

xla::HloProto AddF32(int64_t n) {
  ModuleBuilder m;
  int64_t entry = 0;
  Builder b = m.Computation("add_f32", &entry);
  const int64_t x = b.Parameter(0, F32(n));
  const int64_t y = b.Parameter(1, F32(n));
  b.Root(b.Op("add", F32(n), {x, y}));
  return m.Finish("add_f32", entry);
}

xla::HloProto AddAndMultiplyTuple(int64_t n) {
  ModuleBuilder m;
  int64_t entry = 0;
  Builder b = m.Computation("add_mul", &entry);
  const int64_t x = b.Parameter(0, F32(n));
  const int64_t y = b.Parameter(1, F32(n));
  const int64_t sum = b.Op("add", F32(n), {x, y});
  const int64_t product = b.Op("multiply", F32(n), {x, y});
  xla::ShapeProto tuple =
      Shape::Tuple({Shape::Array(xla::F32, {n}), Shape::Array(xla::F32, {n})})
          .ToProto();
  b.Root(b.Op("tuple", tuple, {sum, product}));
  return m.Finish("add_mul", entry);
}

xla::HloProto SumTupleParameter(int64_t n) {
  ModuleBuilder m;
  int64_t entry = 0;
  Builder b = m.Computation("sum_tuple", &entry);
  xla::ShapeProto tuple =
      Shape::Tuple({Shape::Array(xla::F32, {n}), Shape::Array(xla::F32, {n})})
          .ToProto();
  const int64_t p = b.Parameter(0, tuple);
  const int64_t a = b.Op("get-tuple-element", F32(n), {p});
  b.Instr(a)->set_tuple_index(0);
  const int64_t c = b.Op("get-tuple-element", F32(n), {p});
  b.Instr(c)->set_tuple_index(1);
  b.Root(b.Op("add", F32(n), {a, c}));
  return m.Finish("sum_tuple", entry);
}

xla::HloProto InfiniteLoop() {
  ModuleBuilder m;
  const xla::ShapeProto s32 = Scalar(xla::S32);
  const xla::ShapeProto pred = Scalar(xla::PRED);

  int64_t cond_id = 0;
  Builder cond = m.Computation("always_true", &cond_id);
  cond.Parameter(0, s32);
  const int64_t yes = cond.Op("constant", pred, {});
  *cond.Instr(yes)->mutable_literal()->mutable_shape() = pred;
  cond.Instr(yes)->mutable_literal()->add_preds(true);
  cond.Root(yes);

  int64_t body_id = 0;
  Builder body = m.Computation("increment", &body_id);
  const int64_t x = body.Parameter(0, s32);
  const int64_t one = body.Op("constant", s32, {});
  *body.Instr(one)->mutable_literal()->mutable_shape() = s32;
  body.Instr(one)->mutable_literal()->add_s32s(1);
  body.Root(body.Op("add", s32, {x, one}));

  int64_t entry = 0;
  Builder b = m.Computation("spin", &entry);
  const int64_t init = b.Parameter(0, s32);
  const int64_t loop = b.Op("while", s32, {init});
  // XLA's order for while: body, then condition.
  b.Instr(loop)->add_called_computation_ids(body_id);
  b.Instr(loop)->add_called_computation_ids(cond_id);
  b.Root(loop);
  return m.Finish("spin", entry);
}

xla::HloProto ReplicaId() {
  ModuleBuilder m;
  int64_t entry = 0;
  Builder b = m.Computation("replica", &entry);
  b.Root(b.Op("replica-id", Scalar(xla::U32), {}));
  return m.Finish("replica", entry);
}

xla::HloProto UnknownOpcode() {
  ModuleBuilder m;
  int64_t entry = 0;
  Builder b = m.Computation("mystery", &entry);
  const int64_t x = b.Parameter(0, F32(4));
  b.Root(b.Op("frobnicate", F32(4), {x}));
  return m.Finish("mystery", entry);
}

}  // namespace test_programs
}  // namespace tpu::emulator
