#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_TEST_UTIL_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_TEST_UTIL_H_

// Test helpers: build HloModuleProtos in C++ and run them.
//
//   HloModuleBuilder m("add");
//   ComputationBuilder& e = m.Entry();
//   int64_t x = e.Param(F32({2}));
//   e.Binary("add", x, x);
//   Literal out = *RunModule(m.Build(), {Vec<float>(xla::F32, {2}, {1, 2})});
//
// Thread safety: none (test-only).

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/interpreter/executable.h"
#include "hlo/literal.h"
#include "hlo/shape.h"
#include "proto/hlo.pb.h"

namespace tpu::emulator::interpreter {
namespace testing {

// Scalar f32 `max` and `add` computations in HLO text, for programs written
// as text that reduce with them (prefix them to the module's text).
inline constexpr char kScalarMaxAndAdd[] = R"(
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
)";

class HloModuleBuilder;

class ComputationBuilder {
 public:
  using Attrs = std::function<void(xla::HloInstructionProto&)>;

  int64_t id() const { return proto_.id(); }
  const std::string& name() const { return proto_.name(); }

  // Parameter number `number` (default: the next one).
  int64_t Param(const Shape& shape, int64_t number = -1);
  int64_t Constant(const Literal& literal);
  // A generic instruction; `attrs` sets opcode-specific fields.
  int64_t Op(const std::string& opcode, const Shape& shape,
             std::vector<int64_t> operands, const Attrs& attrs = nullptr);
  // Elementwise ops with the first operand's shape.
  int64_t Unary(const std::string& opcode, int64_t x);
  int64_t Binary(const std::string& opcode, int64_t a, int64_t b);
  int64_t Compare(const std::string& direction, int64_t a, int64_t b,
                  const std::string& type = "");
  int64_t Broadcast(int64_t x, const Shape& shape,
                    std::vector<int64_t> dimensions);
  int64_t Reshape(int64_t x, const Shape& shape);
  int64_t Convert(int64_t x, xla::PrimitiveType type);
  int64_t Tuple(std::vector<int64_t> elements);
  int64_t GetTupleElement(int64_t tuple, int64_t index);
  // dot with contracting dims lhs {lc} x rhs {rc} and batch dims.
  int64_t Dot(int64_t lhs, int64_t rhs, const Shape& shape,
              std::vector<int64_t> lhs_contracting,
              std::vector<int64_t> rhs_contracting,
              std::vector<int64_t> lhs_batch = {},
              std::vector<int64_t> rhs_batch = {});
  int64_t Reduce(std::vector<int64_t> inputs, std::vector<int64_t> inits,
                 std::vector<int64_t> dimensions,
                 const ComputationBuilder& reducer, const Shape& shape);
  int64_t Call(const std::string& opcode, const Shape& shape,
               std::vector<int64_t> operands,
               std::vector<const ComputationBuilder*> callees,
               const Attrs& attrs = nullptr);

  const Shape& shape(int64_t id) const;
  xla::HloInstructionProto& instruction(int64_t id);
  // The root is the last instruction added unless set.
  void SetRoot(int64_t id) { root_ = id; }

 private:
  friend class HloModuleBuilder;
  ComputationBuilder(HloModuleBuilder* module, std::string name, int64_t id);

  HloModuleBuilder* module_;
  xla::HloComputationProto proto_;
  std::vector<Shape> shapes_;
  std::vector<int64_t> ids_;
  int64_t next_param_ = 0;
  int64_t root_ = -1;
};

class HloModuleBuilder {
 public:
  explicit HloModuleBuilder(std::string name);

  // A new computation; the entry must be created with Entry().
  ComputationBuilder& Computation(const std::string& name);
  ComputationBuilder& Entry();
  // A scalar computation (a, b) -> opcode(a, b) of `type`.
  ComputationBuilder& ScalarBinary(const std::string& opcode,
                                   xla::PrimitiveType type);

  xla::HloModuleProto Build() const;
  int64_t NextId() { return next_id_++; }

 private:
  std::string name_;
  int64_t next_id_ = 1;
  std::deque<ComputationBuilder> computations_;
  ComputationBuilder* entry_ = nullptr;
};

// Shapes and literals.
inline Shape S(xla::PrimitiveType type, std::vector<int64_t> dims) {
  return Shape::Array(type, std::move(dims));
}
template <typename T>
Literal Vec(xla::PrimitiveType type, std::vector<int64_t> dims,
            std::vector<T> values) {
  return Literal::FromVector<T>(type, std::move(dims), values);
}
template <typename T>
Literal Scalar(xla::PrimitiveType type, T value) {
  return Literal::FromVector<T>(type, {}, {value});
}
inline Literal VecBool(std::vector<int64_t> dims, std::vector<int> values) {
  std::unique_ptr<bool[]> b(new bool[values.size()]);
  for (size_t i = 0; i < values.size(); ++i) b[i] = values[i] != 0;
  return Literal::FromVector<bool>(
      xla::PRED, std::move(dims),
      absl::Span<const bool>(b.get(), values.size()));
}
template <typename T>
std::vector<T> Values(const Literal& literal) {
  auto span = literal.data<T>();
  return std::vector<T>(span.begin(), span.end());
}
// Values as float, for bf16/f16 literals.
std::vector<float> FloatValues(const Literal& literal);

// Compiles and runs `module` (single-threaded unless `device` is given).
absl::StatusOr<Literal> RunModule(
    const xla::HloModuleProto& module, std::vector<Literal> arguments,
    const CompileOptions& options = {},
    const Eigen::ThreadPoolDevice* device = nullptr,
    ExecutionStats* stats = nullptr);

// Parses HLO text (tpu::hlo::ParseHloModule) and runs it. A parse error is
// returned as is.
absl::StatusOr<Literal> RunHlo(absl::string_view text,
                               std::vector<Literal> arguments,
                               const CompileOptions& options = {},
                               const Eigen::ThreadPoolDevice* device = nullptr,
                               ExecutionStats* stats = nullptr);
// RunHlo's result, or an empty Literal after a test failure that shows the
// status and the program.
Literal RunHloOrFail(const std::string& text,
                     std::vector<Literal> arguments = {},
                     const CompileOptions& options = {});
// Parses HLO text and compiles it.
absl::StatusOr<std::unique_ptr<Executable>> CompileHlo(
    absl::string_view text, const CompileOptions& options = {});

}  // namespace testing
}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_TEST_UTIL_H_
