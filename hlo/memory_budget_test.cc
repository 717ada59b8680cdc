#include "hlo/memory_budget.h"

#include <cstring>
#include <memory>
#include <new>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "hlo/aligned_buffer.h"
#include "hlo/hlo_module.h"
#include "hlo/literal.h"
#include "hlo/shape.h"
#include "proto/hlo.pb.h"

namespace tpu {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Installs `budget` as the process budget for one test.
class ScopedProcessBudget {
 public:
  explicit ScopedProcessBudget(MemoryBudget* budget) {
    MemoryBudget::SetProcess(budget);
  }
  ~ScopedProcessBudget() { MemoryBudget::SetProcess(nullptr); }
};

TEST(MemoryBudgetTest, ChargesUpToTheLimitAndRefusesBeyondIt) {
  MemoryBudget budget(100, "the test budget");
  EXPECT_TRUE(budget.Charge(60).ok());
  EXPECT_TRUE(budget.Charge(40).ok());
  EXPECT_EQ(budget.committed(), 100);
  absl::Status refused = budget.Charge(1);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(),
            "host memory exhausted: this needs 1 bytes more, 100 bytes are "
            "committed, and the test budget is 100 bytes. Free buffers, make "
            "the request smaller, or raise the budget.");
  EXPECT_EQ(budget.committed(), 100);  // a refusal commits nothing
  budget.Release(60);
  EXPECT_EQ(budget.committed(), 40);
  EXPECT_EQ(budget.peak(), 100);
}

TEST(MemoryBudgetTest, HugeChargesDoNotOverflow) {
  MemoryBudget budget(int64_t{1} << 30, "b");
  ASSERT_TRUE(budget.Charge(512 * kMiB).ok());
  EXPECT_EQ(budget.Charge(INT64_MAX).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(budget.Charge(-1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(budget.committed(), 512 * kMiB);
}

TEST(MemoryBudgetTest, FormatsByteCounts) {
  EXPECT_EQ(FormatByteCount(0), "0 bytes");
  EXPECT_EQ(FormatByteCount(1023), "1023 bytes");
  EXPECT_EQ(FormatByteCount(256 * kMiB), "256.00 MiB (268435456 bytes)");
  EXPECT_EQ(FormatByteCount(int64_t{1} << 42),
            "4.00 TiB (4398046511104 bytes)");
}

TEST(MemoryBudgetTest, AlignedBuffersChargeTheProcessBudgetUntilFreed) {
  MemoryBudget budget(8 * kMiB, "the test budget");
  ScopedProcessBudget scope(&budget);
  {
    std::shared_ptr<AlignedBuffer> a = AlignedBuffer::Allocate(3 * kMiB);
    absl::StatusOr<std::shared_ptr<AlignedBuffer>> b =
        AlignedBuffer::TryAllocate(5 * kMiB);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(budget.committed(), 8 * kMiB);
    absl::StatusOr<std::shared_ptr<AlignedBuffer>> c =
        AlignedBuffer::TryAllocate(1);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
    try {
      (void)AlignedBuffer::Allocate(1);
      ADD_FAILURE() << "Allocate beyond the budget returned";
    } catch (const HostMemoryExhausted& error) {
      EXPECT_EQ(error.message(),
                "host memory exhausted: this needs 1 bytes more, 8.00 MiB "
                "(8388608 bytes) are committed, and the test budget is 8.00 "
                "MiB (8388608 bytes). Free buffers, make the request smaller, "
                "or raise the budget.");
      EXPECT_EQ(AllocationFailureStatus(error).code(),
                absl::StatusCode::kResourceExhausted);
    }
  }
  EXPECT_EQ(budget.committed(), 0);
}

TEST(MemoryBudgetTest, ReadOnlyZerosCommitNothing) {
  MemoryBudget budget(kMiB, "the test budget");
  ScopedProcessBudget scope(&budget);
  // Far beyond the budget, and read end to end.
  absl::StatusOr<std::shared_ptr<AlignedBuffer>> zeros =
      AlignedBuffer::ReadOnlyZeros(64 * kMiB);
  ASSERT_TRUE(zeros.ok()) << zeros.status();
  EXPECT_EQ((*zeros)->size(), 64 * kMiB);
  const char* bytes = static_cast<const char*>((*zeros)->data());
  bool all_zero = true;
  for (int64_t i = 0; i < 64 * kMiB; i += 4096) all_zero &= bytes[i] == 0;
  EXPECT_TRUE(all_zero);
  EXPECT_EQ(bytes[64 * kMiB - 1], 0);
  EXPECT_EQ(budget.committed(), 0);
}

TEST(MemoryBudgetTest, LiteralsBeyondTheBudgetThrowBadAlloc) {
  MemoryBudget budget(kMiB, "the test budget");
  ScopedProcessBudget scope(&budget);
  EXPECT_THROW(Literal::Zeros(Shape::Array(xla::F32, {1 << 20})),
               std::bad_alloc);
  EXPECT_EQ(budget.committed(), 0);
}

TEST(HostileInputTest, ConstantWithoutDataIsRefusedBeforeAllocating) {
  // No budget: without the check this would try to allocate 4 TiB.
  xla::LiteralProto proto;
  *proto.mutable_shape() = Shape::Array(xla::F32, {int64_t{1} << 40}).ToProto();
  absl::StatusOr<Literal> literal = Literal::FromProto(proto);
  EXPECT_EQ(literal.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(literal.status().message(),
            "literal of shape f32[1099511627776] has 0 values in f32s but its "
            "shape needs 1099511627776; a literal must carry every value of "
            "its shape");
  *proto.mutable_shape() =
      Shape::Array(xla::BF16, {int64_t{1} << 40}).ToProto();
  proto.set_bf16s("ab");
  literal = Literal::FromProto(proto);
  EXPECT_EQ(literal.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(literal.status().message(),
            "literal of shape bf16[1099511627776] has 2 bytes in bf16s but its "
            "shape needs 2199023255552; a literal must carry every value of "
            "its shape");
}

TEST(HostileInputTest, TupleShapesNestAtMost256Deep) {
  auto nested = [](int depth) {
    xla::ShapeProto root;
    xla::ShapeProto* shape = &root;
    for (int i = 0; i < depth; ++i) {
      shape->set_element_type(xla::TUPLE);
      shape = shape->add_tuple_shapes();
    }
    shape->set_element_type(xla::F32);
    return root;
  };
  EXPECT_TRUE(Shape::FromProto(nested(Shape::kMaxNesting)).ok());
  absl::StatusOr<Shape> deep = Shape::FromProto(nested(Shape::kMaxNesting + 1));
  EXPECT_EQ(deep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(deep.status().message(), "tuple shapes nest more than 256 deep");
  // The depth count is per call: a refused shape leaves none behind.
  EXPECT_TRUE(Shape::FromProto(nested(Shape::kMaxNesting)).ok());
}

// c1 calls c2 calls ... c<depth>, which negates.
xla::HloModuleProto CallChain(int depth, bool callees_first) {
  xla::HloModuleProto module;
  module.set_name("chain");
  const xla::ShapeProto scalar = Shape::Scalar(xla::F32).ToProto();
  int64_t id = 1;
  for (int n = 1; n <= depth; ++n) {
    const int i = callees_first ? depth + 1 - n : n;
    xla::HloComputationProto* c = module.add_computations();
    c->set_name("c" + std::to_string(i));
    c->set_id(1000 + i);
    xla::HloInstructionProto* p = c->add_instructions();
    p->set_name("p" + std::to_string(i));
    p->set_opcode("parameter");
    p->set_parameter_number(0);
    p->set_id(id++);
    *p->mutable_shape() = scalar;
    xla::HloInstructionProto* r = c->add_instructions();
    r->set_name("r" + std::to_string(i));
    r->set_id(id++);
    *r->mutable_shape() = scalar;
    r->add_operand_ids(p->id());
    if (i == depth) {
      r->set_opcode("negate");
    } else {
      r->set_opcode("call");
      r->add_called_computation_ids(1000 + i + 1);
    }
    c->set_root_id(r->id());
    *c->mutable_program_shape()->add_parameters() = scalar;
    c->mutable_program_shape()->add_parameter_names("p");
    *c->mutable_program_shape()->mutable_result() = scalar;
  }
  module.set_entry_computation_name("c1");
  module.set_entry_computation_id(1001);
  return module;
}

TEST(HostileInputTest, CallChainsNestAtMost256Deep) {
  for (bool callees_first : {true, false}) {
    EXPECT_TRUE(
        HloModule::FromProto(CallChain(HloModule::kMaxCallDepth, callees_first))
            .ok());
    absl::StatusOr<std::unique_ptr<HloModule>> deep = HloModule::FromProto(
        CallChain(HloModule::kMaxCallDepth + 1, callees_first));
    EXPECT_EQ(deep.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(deep.status().message().find(
                  "computations call each other more than 256 levels deep"),
              absl::string_view::npos)
        << deep.status();
    // Far deeper chains fail the same way, without exhausting the stack.
    EXPECT_EQ(
        HloModule::FromProto(CallChain(100000, callees_first)).status().code(),
        absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace tpu
